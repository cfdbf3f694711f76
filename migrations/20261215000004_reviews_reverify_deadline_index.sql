-- no-transaction
-- The re-verification scheduler's other work: pending re-verifications by their deadline
-- (their due date), to expire the documents nobody re-verified in time.
SET lock_timeout = '5s';
CREATE INDEX CONCURRENTLY IF NOT EXISTS reviews_reverify_deadline ON reviews (due_at)
    WHERE kind = 'reverify' AND status = 'PENDING';
