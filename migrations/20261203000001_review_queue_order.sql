-- The review queue (GET /reviews) is paged with a keyset cursor, so its order must be one in
-- which a review never appears behind a position a reader has already paged past. Ordering
-- by submitted_at did not hold: it is the submitting transaction's start, and a submit that
-- waited on a row lock commits after reviews with later timestamps were already listed.
--
-- queue_seq is taken at COMMIT (a deferred constraint trigger), under a transaction-level
-- advisory lock that is released only once the commit is visible. So a review's queue_seq
-- is greater than that of every review committed before it, and a reader that has seen a
-- review has seen every review with a smaller queue_seq. The lock is held only for the
-- trigger and the commit itself: submits of different documents still run side by side.
-- (docs/decisions.md: "The review queue is ordered by commit".)
--
-- The advisory lock is the two-key form (7002, 1): a lock space apart from the one-key
-- locks of sqlx's migrations and of the outbox claims.

CREATE SEQUENCE reviews_queue_seq AS bigint;

ALTER TABLE reviews ADD COLUMN queue_seq bigint;

-- Existing reviews keep the order they had.
UPDATE reviews r SET queue_seq = o.n
FROM (SELECT id, row_number() OVER (ORDER BY submitted_at, id) AS n FROM reviews) o
WHERE r.id = o.id;

SELECT setval('reviews_queue_seq', COALESCE((SELECT max(queue_seq) FROM reviews), 0) + 1, false);

-- The default only fills the column until COMMIT, when the trigger replaces it.
ALTER TABLE reviews
    ALTER COLUMN queue_seq SET DEFAULT nextval('reviews_queue_seq'),
    ALTER COLUMN queue_seq SET NOT NULL;
ALTER SEQUENCE reviews_queue_seq OWNED BY reviews.queue_seq;

CREATE FUNCTION reviews_queue_seq_at_commit() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(7002, 1);
    UPDATE reviews SET queue_seq = nextval('reviews_queue_seq') WHERE id = NEW.id;
    RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER reviews_queue_seq_at_commit
    AFTER INSERT ON reviews
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION reviews_queue_seq_at_commit();

CREATE INDEX reviews_queue ON reviews (status, queue_seq);
CREATE INDEX reviews_history ON reviews (document_id, queue_seq);
DROP INDEX reviews_by_status;
DROP INDEX reviews_by_document;
