-- The commit-time trigger of 20261203000001 waits for the queue's advisory lock inside
-- COMMIT, behind other submits' commits (each holds it only for its trigger and its commit,
-- which includes the WAL flush). That wait ran under the session's lock_timeout, so a burst
-- of submits on a slow disk could fail one at COMMIT with 55P03, which the service reports
-- as 409 LOCK_NOT_ACQUIRED although no row lock was involved. The wait is not a lock the
-- caller could retry around: it now waits without lock_timeout (for this transaction only);
-- the client-side bound on the transaction still ends it if the database stops answering.
CREATE OR REPLACE FUNCTION reviews_queue_seq_at_commit() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('lock_timeout', '0', true);
    PERFORM pg_advisory_xact_lock(7002, 1);
    UPDATE reviews SET queue_seq = nextval('reviews_queue_seq') WHERE id = NEW.id;
    RETURN NULL;
END
$$;
