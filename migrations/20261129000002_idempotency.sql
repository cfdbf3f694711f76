-- Idempotency records: one per (caller, key). A record IN_FLIGHT whose locked_until has
-- passed belongs to a request that never finished (a crash): the next retry takes it over.
-- Records expire at expires_at (idempotency.ttl_secs) and are purged periodically.
CREATE TABLE idempotency_keys (
    owner_id        text        NOT NULL,
    key             text        NOT NULL,
    fingerprint     text        NOT NULL,
    state           text        NOT NULL CONSTRAINT idempotency_state_known CHECK (state IN ('IN_FLIGHT', 'DONE')),
    response_status smallint,
    response_body   jsonb,
    -- Which request owns the key now; finish and abandon only touch a record they own.
    claim           uuid        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    locked_until    timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    CONSTRAINT idempotency_keys_pkey PRIMARY KEY (owner_id, key),
    CONSTRAINT idempotency_done_has_response CHECK (state <> 'DONE' OR response_status IS NOT NULL)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
