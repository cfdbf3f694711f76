-- no-transaction
-- Parked rows, for the admin listing and the kh_outbox_parked gauges. Only parking, retry
-- and skip change parked_at: claims and marks stay HOT updates.
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_parked ON outbox (id)
    WHERE parked_at IS NOT NULL AND done_at IS NULL;
