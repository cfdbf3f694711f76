-- no-transaction
-- The re-verification scheduler's other work: pending re-verifications by their deadline
-- (their due date), to expire the documents nobody re-verified in time.
-- No lock_timeout: sqlx sends this file as one query, and a SET beside the build would make
-- it a transaction block, where CONCURRENTLY cannot run. The build's SHARE UPDATE EXCLUSIVE
-- lock blocks no read or write.
-- squawk-ignore require-lock-timeout
CREATE INDEX CONCURRENTLY IF NOT EXISTS reviews_reverify_deadline ON reviews (due_at)
    WHERE kind = 'reverify' AND status = 'PENDING';
