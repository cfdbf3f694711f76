-- A GIN index on _jsonb->'_id' for every FerretDB collection, by an event trigger.
-- Run as the superuser in the database ferretdb by scripts/services/ferretdb.sh,
-- on every `up`: idempotent, and cheap when everything is in place.
--
-- FerretDB's PostgreSQL backend keeps each collection in a table (one schema per
-- MongoDB database) and filters on _id with `_jsonb->'_id' @> $1`, which its own
-- btree index on _id cannot serve; this index can (measurements: docs/decisions.md,
-- "The MongoDB write"). The service knows nothing of it.
--
-- kh_ferretdb is no FerretDB database (it has no _ferretdb_database_metadata
-- table), so FerretDB does not list it. The trigger's CREATE INDEX has the tag
-- CREATE INDEX, so it does not fire the trigger again; an error in it is only a
-- WARNING (in the PostgreSQL log), never a failed collection create.
SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS kh_ferretdb;
GRANT USAGE ON SCHEMA kh_ferretdb TO PUBLIC;

-- GIN index on _jsonb->'_id' for one FerretDB collection table, if it has none
CREATE OR REPLACE FUNCTION kh_ferretdb.id_gin_index(tbl regclass) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog AS $f$
BEGIN
  IF NOT EXISTS (
      SELECT FROM pg_class c
      JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = '_jsonb' AND NOT a.attisdropped
      WHERE c.oid = tbl AND c.relkind = 'r' AND a.atttypid = 'jsonb'::regtype
        AND c.relname NOT LIKE '\_ferretdb\_%'   -- FerretDB's metadata table
        AND EXISTS (SELECT FROM pg_class m WHERE m.relnamespace = c.relnamespace
                      AND m.relname = '_ferretdb_database_metadata')) THEN
    RETURN;
  END IF;
  IF EXISTS (
      SELECT FROM pg_index i
      WHERE i.indrelid = tbl
        AND pg_get_indexdef(i.indexrelid) LIKE '%USING gin (((_jsonb -> ''\_id''::text)) jsonb\_path\_ops)%') THEN
    RETURN;
  END IF;
  EXECUTE format('CREATE INDEX ON %s USING gin ((_jsonb -> %L) jsonb_path_ops) WITH (fastupdate = off)', tbl, '_id');
END $f$;

CREATE OR REPLACE FUNCTION kh_ferretdb.on_create_table() RETURNS event_trigger
LANGUAGE plpgsql SET search_path = pg_catalog AS $f$
DECLARE r record;
BEGIN
  FOR r IN SELECT objid FROM pg_event_trigger_ddl_commands()
           WHERE command_tag = 'CREATE TABLE' AND object_type = 'table' LOOP
    BEGIN
      PERFORM kh_ferretdb.id_gin_index(r.objid::regclass);
    EXCEPTION WHEN OTHERS THEN
      RAISE WARNING 'kh_ferretdb: no GIN index on _id for %: %', r.objid::regclass, SQLERRM;
    END;
  END LOOP;
END $f$;

DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_event_trigger
                 WHERE evtname = 'kh_ferretdb_id_gin' AND evtevent = 'ddl_command_end'
                   AND evtfoid = 'kh_ferretdb.on_create_table()'::regprocedure
                   AND evttags = ARRAY['CREATE TABLE']) THEN
    DROP EVENT TRIGGER IF EXISTS kh_ferretdb_id_gin;
    CREATE EVENT TRIGGER kh_ferretdb_id_gin ON ddl_command_end
      WHEN TAG IN ('CREATE TABLE') EXECUTE FUNCTION kh_ferretdb.on_create_table();
  END IF;
END $$;
ALTER EVENT TRIGGER kh_ferretdb_id_gin ENABLE;

-- collection tables made while the trigger was missing
SELECT count(kh_ferretdb.id_gin_index(c.oid)) AS checked
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'r' AND n.nspname NOT IN ('information_schema', 'kh_ferretdb')
  AND n.nspname NOT LIKE 'pg\_%' \gset
