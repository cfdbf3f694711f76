-- Replays: events sent again to one consumer's queue (history: delivered outbox rows as they
-- were; snapshot: one document.snapshot per published document). A replay row is its own
-- progress: the cursor (the last outbox row or document sent and confirmed), the counts,
-- and the lease of the instance running it (claimed_by until claimed_until, renewed while
-- it runs); any instance's runner takes a running replay whose lease ended and continues
-- from the cursor.
CREATE TABLE replays (
    id                 uuid        PRIMARY KEY,
    mode               text        NOT NULL
        CONSTRAINT replays_mode_known CHECK (mode IN ('history', 'snapshot')),
    target_queue       text        NOT NULL,
    state              text        NOT NULL
        CONSTRAINT replays_state_known CHECK (state IN ('running', 'done', 'cancelled', 'failed')),
    -- The filters, as asked (NULL: not filtered). from_at/to_at bound the outbox rows'
    -- created_at (history only).
    from_at            timestamptz,
    to_at              timestamptz,
    types              text[],
    document_ids       uuid[],
    -- History: the newest outbox row that can belong to the replay (taken at its start).
    upto_outbox_id     bigint      NOT NULL DEFAULT 0,
    -- The JWT `sub` of the admin who asked for it, and the request.
    requested_by       text        NOT NULL,
    request_id         text,
    total              bigint      NOT NULL,
    sent               bigint      NOT NULL DEFAULT 0,
    -- Events sent a second time: the batch in flight when a runner stopped, sent again by
    -- the runner that took the replay over (at most that many reached the queue twice).
    duplicates         bigint      NOT NULL DEFAULT 0,
    -- Events of the batch being sent now (unconfirmed).
    in_flight          bigint      NOT NULL DEFAULT 0,
    -- How often another runner took the replay over after a lease ended.
    takeovers          integer     NOT NULL DEFAULT 0,
    cursor_outbox_id   bigint,
    cursor_document_id uuid,
    claimed_by         text,
    claimed_until      timestamptz,
    error              text,
    started_at         timestamptz NOT NULL DEFAULT now(),
    progressed_at      timestamptz NOT NULL DEFAULT now(),
    finished_at        timestamptz,
    CONSTRAINT replays_finished_when_not_running CHECK ((state = 'running') = (finished_at IS NULL))
);
-- One running replay per target queue, whichever instance asked for it.
CREATE UNIQUE INDEX replays_one_running_per_queue ON replays (target_queue) WHERE state = 'running';
CREATE INDEX replays_recent ON replays (started_at DESC, id);
