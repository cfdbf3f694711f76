-- pg_stat_statements in the database the benchmark's admin connection reaches, readable
-- by :role (its query texts and counters for every database, FerretDB's included). Run as
-- the superuser by scripts/services/postgres.sh; the library itself is loaded by the
-- settings that script writes. Idempotent.
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
SELECT format('GRANT pg_read_all_stats TO %I', :'role') \gexec
