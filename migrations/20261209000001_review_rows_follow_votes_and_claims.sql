-- The review lock's freshness check (src/store/sql/lock_review.sql) uses the votes and
-- claims its statement's snapshot read only when the locked review row is the snapshot's
-- own (the same xmin): it sees a changed vote or claim only because whoever changed it
-- rewrote the review row too. Every writer of the service does so; these triggers make the
-- database hold the rule for any writer. A vote or claim written, changed or deleted in a
-- transaction that has not itself rewritten the review row rewrites it (no column
-- changes: a new row version, so a new xmin). The service's writers rewrite the row in the
-- same statement, so for them the trigger costs one comparison and no row version.
-- Expand only: the previous release writes through the triggers unchanged.
SET LOCAL lock_timeout = '5s';

CREATE FUNCTION touch_review_of_row() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- NEW is NULL for a DELETE, OLD for an INSERT.
    UPDATE reviews SET stage = stage
     WHERE id IN (NEW.review_id, OLD.review_id)
       AND xmin::text::bigint <> pg_current_xact_id()::text::bigint % 4294967296;
    RETURN NULL;
END
$$;

CREATE TRIGGER review_votes_touch_review
    AFTER INSERT OR UPDATE OR DELETE ON review_votes
    FOR EACH ROW EXECUTE FUNCTION touch_review_of_row();

CREATE TRIGGER review_claims_touch_review
    AFTER INSERT OR UPDATE OR DELETE ON review_claims
    FOR EACH ROW EXECUTE FUNCTION touch_review_of_row();
