-- The service's login role :role (password :password): a member of the group kh_service,
-- to which the migrations grant what the service may do; it owns nothing and lacks
-- BYPASSRLS, so row-level security holds for it (docs/operations.md, "Two database
-- roles"). Run as the superuser by scripts/services/postgres.sh and the topologies, e.g.
--   psql -v role=kh_app -v password=kh_app -v owner=kh -f service-role.sql
-- The owner :owner gets pg_read_all_stats, to see what the service's sessions wait on in
-- pg_stat_activity (the tests watch for a statement waiting on a row lock).
-- Both roles are created when missing; the password and attributes are set every time.
SELECT 'CREATE ROLE kh_service NOLOGIN'
 WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'kh_service') \gexec
SELECT format('CREATE ROLE %I', :'role')
 WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'role') \gexec
SELECT format('ALTER ROLE %I LOGIN PASSWORD %L NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE',
              :'role', :'password') \gexec
SELECT format('GRANT kh_service TO %I', :'role') \gexec
SELECT format('GRANT pg_read_all_stats TO %I', :'owner') \gexec
