-- Parking: a row whose message the broker keeps refusing (unroutable, nacked) is set aside
-- after `outbox.max_attempts` failed attempts instead of being retried forever. A parked row
-- is still undone, so it keeps holding back its document's later events; its
-- next_attempt_at is 'infinity', so the dispatchers' claims (`next_attempt_at <= now()`)
-- pass it by with no change to their statements or to the index they scan. An admin puts it
-- back in line (retry) or drops it (skip: done, never published).
ALTER TABLE outbox
    ADD COLUMN parked_at     timestamptz,
    ADD COLUMN parked_reason text,
    ADD COLUMN skipped_at    timestamptz;
-- NOT VALID: existing rows have neither column set; new and updated rows are checked.
ALTER TABLE outbox
    ADD CONSTRAINT outbox_parked_has_reason
        CHECK ((parked_at IS NULL) = (parked_reason IS NULL)) NOT VALID;

-- What admins did to parked rows, and who. No foreign key to outbox: delivered and skipped
-- rows are purged after `outbox.retention_hours`, their audit rows stay.
CREATE TABLE outbox_admin_actions (
    id            bigserial PRIMARY KEY,
    outbox_id     bigint      NOT NULL,
    event_id      uuid        NOT NULL,
    document_id   uuid        NOT NULL REFERENCES documents (id),
    event_type    text        NOT NULL,
    action        text        NOT NULL
        CONSTRAINT outbox_admin_actions_known CHECK (action IN ('retry', 'skip')),
    -- The JWT `sub` of the admin.
    actor_id      text        NOT NULL,
    request_id    text,
    -- The row as the admin found it.
    attempts      integer     NOT NULL,
    parked_at     timestamptz NOT NULL,
    parked_reason text        NOT NULL,
    at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX outbox_admin_actions_by_row ON outbox_admin_actions (outbox_id, id);
