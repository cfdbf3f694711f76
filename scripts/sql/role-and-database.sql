-- The login role :role (password :password, attributes :options) and the
-- database :db it owns, each created when missing. Run as the superuser by
-- scripts/services/postgres.sh (for kh / kh_review) and ferretdb.sh (for
-- ferretdb / ferretdb), e.g.
--   psql -v role=kh -v password=kh -v options=CREATEDB -v db=kh_review -f role-and-database.sql
-- The password is set every time, which repairs a role changed by hand; CREATE
-- DATABASE cannot run inside a DO block, hence \gexec.
SELECT format('CREATE ROLE %I', :'role')
 WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'role') \gexec
SELECT format('ALTER ROLE %I LOGIN PASSWORD %L %s', :'role', :'password', :'options') \gexec
SELECT format('CREATE DATABASE %I OWNER %I', :'db', :'role')
 WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'db') \gexec
