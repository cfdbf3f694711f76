-- The second wall, step 3 of 3: row-level security on every table holding a space's rows,
-- enabled and forced. A session sees and changes the rows of the spaces it declared, in the
-- transaction it runs, with `set_config('kh.spaces', 'a,b', true)` (`*`: every space, the
-- platform admin's requests); background work declares itself with
-- `set_config('kh.background', 'on', true)`, which no request path sets. A session that
-- declared nothing sees nothing.
--
-- The service connects as a login role in the group `kh_service`, which owns nothing and
-- lacks BYPASSRLS; migrations run as the owner (docs/operations.md, "Two database roles").
-- The owner keeps a policy of its own that admits every row: the previous release connects
-- as the owner during a rolling upgrade and declares nothing, and so do the migrate step's
-- own statements (linking audit rows).
SET LOCAL lock_timeout = '5s';

DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'kh_service') THEN
        IF NOT (SELECT rolcreaterole OR rolsuper FROM pg_roles WHERE rolname = current_user) THEN
            RAISE EXCEPTION 'the group role kh_service does not exist and % may not create it', current_user
                USING HINT = 'create it first, as a superuser: CREATE ROLE kh_service NOLOGIN (docs/operations.md, "Two database roles")';
        END IF;
        CREATE ROLE kh_service NOLOGIN;
    END IF;
END
$$;

-- Whether the current transaction (or session) may see a row of `space`.
CREATE FUNCTION kh_space_visible(space text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT current_setting('kh.background', true) = 'on'
        OR current_setting('kh.spaces', true) = '*'
        OR space = ANY (string_to_array(current_setting('kh.spaces', true), ','))
$$;

ALTER TABLE documents ENABLE ROW LEVEL SECURITY;
ALTER TABLE documents FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON documents TO CURRENT_USER USING (true) WITH CHECK (true);
CREATE POLICY space_rows ON documents
    USING (kh_space_visible(space_id)) WITH CHECK (kh_space_visible(space_id));

ALTER TABLE reviews ENABLE ROW LEVEL SECURITY;
ALTER TABLE reviews FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON reviews TO CURRENT_USER USING (true) WITH CHECK (true);
CREATE POLICY space_rows ON reviews
    USING (kh_space_visible(space_id)) WITH CHECK (kh_space_visible(space_id));

ALTER TABLE review_votes ENABLE ROW LEVEL SECURITY;
ALTER TABLE review_votes FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON review_votes TO CURRENT_USER USING (true) WITH CHECK (true);
CREATE POLICY space_rows ON review_votes
    USING (kh_space_visible(space_id)) WITH CHECK (kh_space_visible(space_id));

ALTER TABLE review_claims ENABLE ROW LEVEL SECURITY;
ALTER TABLE review_claims FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON review_claims TO CURRENT_USER USING (true) WITH CHECK (true);
CREATE POLICY space_rows ON review_claims
    USING (kh_space_visible(space_id)) WITH CHECK (kh_space_visible(space_id));

ALTER TABLE comments ENABLE ROW LEVEL SECURITY;
ALTER TABLE comments FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON comments TO CURRENT_USER USING (true) WITH CHECK (true);
CREATE POLICY space_rows ON comments
    USING (kh_space_visible(space_id)) WITH CHECK (kh_space_visible(space_id));

ALTER TABLE audit_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_log FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON audit_log TO CURRENT_USER USING (true) WITH CHECK (true);
CREATE POLICY space_rows ON audit_log
    USING (kh_space_visible(space_id)) WITH CHECK (kh_space_visible(space_id));

ALTER TABLE outbox ENABLE ROW LEVEL SECURITY;
ALTER TABLE outbox FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON outbox TO CURRENT_USER USING (true) WITH CHECK (true);
CREATE POLICY space_rows ON outbox
    USING (kh_space_visible(space_id)) WITH CHECK (kh_space_visible(space_id));

-- A record not yet tied to a write's space is its caller's (every statement names the
-- owner); once it records a write's result, it is in that write's space.
ALTER TABLE idempotency_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE idempotency_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON idempotency_keys TO CURRENT_USER USING (true) WITH CHECK (true);
CREATE POLICY space_rows ON idempotency_keys
    USING (space_id IS NULL OR kh_space_visible(space_id))
    WITH CHECK (space_id IS NULL OR kh_space_visible(space_id));

-- What the service's role may do: read and write rows (the policies above decide which),
-- never the schema, nor the record of migrations.
GRANT USAGE ON SCHEMA public TO kh_service;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO kh_service;
GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO kh_service;
DO $$
BEGIN
    -- (sqlx's own table; absent where the migrations are applied by hand, as scripts/sqlx.sh does)
    IF to_regclass('_sqlx_migrations') IS NOT NULL THEN
        REVOKE INSERT, UPDATE, DELETE ON _sqlx_migrations FROM kh_service;
    END IF;
END
$$;
-- And on what later migrations create.
ALTER DEFAULT PRIVILEGES IN SCHEMA public
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO kh_service;
ALTER DEFAULT PRIVILEGES IN SCHEMA public
    GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO kh_service;
