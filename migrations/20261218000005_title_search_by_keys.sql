-- The title search reads document_titles_keys: the copied titles whose keys hold the
-- query's, then LIKE on each. A key holds its space, so a title found is of the space asked
-- for (keys split at their last blank, and a trigram holds none), and no index of the
-- space is read beside it. The service sends only a query with three letters or digits in
-- a row; should PostgreSQL see none in it (its idea of a letter may differ: `²`), the
-- space's documents are read instead, slower but right. PL/pgSQL, not SQL: it keeps its
-- statements' plans for the session, where an SQL function plans its body at each call
-- (about half a millisecond of a search, three functions deep). No parallel workers: a
-- page of one space's matches costs less than starting them.
--
-- kh_title_matches, the previous release's (same arguments and grants): every match of a
-- space the transaction declared.
-- kh_title_page, this release's: the page where the matches are read: the matches before
-- the cursor, sorted newest first (OFFSET 0 keeps the sort below the join), then each
-- document read by key for the reader's and the status's conditions until the page is
-- full (about 50 lookups, not one per match: 286 for `q=policy` in a space of 10,000);
-- the query then reads those rows by key, under the policies.
SET LOCAL lock_timeout = '5s';

CREATE OR REPLACE FUNCTION kh_title_matches(space text, pattern text) RETURNS SETOF uuid
LANGUAGE plpgsql STABLE SECURITY DEFINER ROWS 50
SET search_path = public, pg_temp
SET max_parallel_workers_per_gather = 0 AS $$
DECLARE
    keys text[] := kh_title_query_keys(space, pattern);
BEGIN
    IF NOT (kh_all_spaces() OR space = ANY (kh_spaces()::text[])) THEN
        RETURN;
    END IF;
    IF keys IS NULL THEN
        RETURN QUERY SELECT d.id FROM documents d
            WHERE d.space_id = space AND lower(d.title) LIKE lower(pattern) ESCAPE '\';
    ELSE
        RETURN QUERY SELECT t.id FROM document_titles t
            WHERE kh_title_keys(t.space_id, t.title) @> keys
              AND lower(t.title) LIKE lower(pattern) ESCAPE '\';
    END IF;
END
$$;

CREATE FUNCTION kh_title_page(
    space text, pattern text, before uuid, every_draft boolean, reader text,
    wanted_status text, page bigint
) RETURNS SETOF uuid
LANGUAGE plpgsql STABLE SECURITY DEFINER ROWS 50
SET search_path = public, pg_temp
SET max_parallel_workers_per_gather = 0 AS $$
BEGIN
    RETURN QUERY SELECT m.id
        FROM (SELECT f.id FROM kh_title_matches(space, pattern) AS f(id)
              WHERE f.id < before ORDER BY f.id DESC OFFSET 0) AS m
        CROSS JOIN LATERAL (
            SELECT 1 FROM documents d
            WHERE d.id = m.id
              AND (every_draft OR d.current_review_id IS NOT NULL OR d.author_id = reader)
              AND (wanted_status IS NULL OR d.status = wanted_status)
        ) AS readable
        ORDER BY m.id DESC LIMIT page;
END
$$;

REVOKE ALL ON FUNCTION kh_title_page(text, text, uuid, boolean, text, text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kh_title_page(text, text, uuid, boolean, text, text, bigint)
    TO kh_service;
