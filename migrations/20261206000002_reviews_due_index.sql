-- no-transaction
-- The overdue sweeper's work: pending reviews with a due date and no overdue mark yet.
-- Built without blocking writes to reviews, as every index added after the first release.
CREATE INDEX CONCURRENTLY IF NOT EXISTS reviews_due_unnotified ON reviews (due_at)
    WHERE status = 'PENDING' AND due_at IS NOT NULL AND overdue_notified_at IS NULL;
