-- The policies of the second wall, read once per statement. As written by 20261213000003,
-- each row a policy admits paid for its own reading of the settings (`current_setting`
-- twice or three times, and `string_to_array`): in the queue's `eligible` form, which asks
-- four subqueries per pending review, that is a price paid tens of thousands of times a
-- call. Here the settings are read by two functions wrapped in scalar subqueries, which
-- PostgreSQL evaluates once per statement (an InitPlan) and hands to every row as a
-- parameter: a row costs `space_id = ANY($spaces)`, which an index can also serve. What the
-- policies admit is unchanged.
SET LOCAL lock_timeout = '5s';

-- The transaction declared every space: background work, or the platform admin's `*`.
CREATE FUNCTION kh_all_spaces() RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(current_setting('kh.background', true) = 'on'
                    OR current_setting('kh.spaces', true) = '*', false)
$$;

-- The spaces the transaction declared (none: an empty array).
CREATE FUNCTION kh_spaces() RETURNS text[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(string_to_array(nullif(current_setting('kh.spaces', true), ''), ','), '{}')
$$;

ALTER POLICY space_rows ON documents
    USING ((SELECT kh_all_spaces()) OR space_id = ANY ((SELECT kh_spaces())::text[]))
    WITH CHECK ((SELECT kh_all_spaces()) OR space_id = ANY ((SELECT kh_spaces())::text[]));
ALTER POLICY space_rows ON reviews
    USING ((SELECT kh_all_spaces()) OR space_id = ANY ((SELECT kh_spaces())::text[]))
    WITH CHECK ((SELECT kh_all_spaces()) OR space_id = ANY ((SELECT kh_spaces())::text[]));
ALTER POLICY space_rows ON review_votes
    USING ((SELECT kh_all_spaces()) OR space_id = ANY ((SELECT kh_spaces())::text[]))
    WITH CHECK ((SELECT kh_all_spaces()) OR space_id = ANY ((SELECT kh_spaces())::text[]));
ALTER POLICY space_rows ON review_claims
    USING ((SELECT kh_all_spaces()) OR space_id = ANY ((SELECT kh_spaces())::text[]))
    WITH CHECK ((SELECT kh_all_spaces()) OR space_id = ANY ((SELECT kh_spaces())::text[]));
ALTER POLICY space_rows ON comments
    USING ((SELECT kh_all_spaces()) OR space_id = ANY ((SELECT kh_spaces())::text[]))
    WITH CHECK ((SELECT kh_all_spaces()) OR space_id = ANY ((SELECT kh_spaces())::text[]));
ALTER POLICY space_rows ON audit_log
    USING ((SELECT kh_all_spaces()) OR space_id = ANY ((SELECT kh_spaces())::text[]))
    WITH CHECK ((SELECT kh_all_spaces()) OR space_id = ANY ((SELECT kh_spaces())::text[]));
ALTER POLICY space_rows ON outbox
    USING ((SELECT kh_all_spaces()) OR space_id = ANY ((SELECT kh_spaces())::text[]))
    WITH CHECK ((SELECT kh_all_spaces()) OR space_id = ANY ((SELECT kh_spaces())::text[]));
ALTER POLICY space_rows ON idempotency_keys
    USING (space_id IS NULL OR (SELECT kh_all_spaces()) OR space_id = ANY ((SELECT kh_spaces())::text[]))
    WITH CHECK (space_id IS NULL OR (SELECT kh_all_spaces()) OR space_id = ANY ((SELECT kh_spaces())::text[]));

-- The title search's function, the same way (its grants stay).
CREATE OR REPLACE FUNCTION kh_title_matches(space text, pattern text) RETURNS SETOF uuid
LANGUAGE sql STABLE SECURITY DEFINER ROWS 50
SET search_path = public, pg_temp AS $$
    SELECT d.id FROM documents d
    WHERE d.space_id = space
      AND ((SELECT kh_all_spaces()) OR space = ANY ((SELECT kh_spaces())::text[]))
      AND lower(d.title) LIKE lower(pattern) ESCAPE '\'
$$;
