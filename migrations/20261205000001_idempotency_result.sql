-- A success is now recorded as the use case's typed result (`result`, state SUCCEEDED),
-- which the HTTP layer renders exactly as it renders a fresh one. A refusal keeps its reply as
-- it was sent (DONE: response_status, response_body), and so does a success recorded before
-- this release. An older instance does not know SUCCEEDED: it answers such a retry 409
-- IDEMPOTENCY_IN_FLIGHT (try again), never a wrong replay, while a rolling upgrade runs.
-- (The table holds idempotency.ttl_secs of keys, so checking its rows here is quick.)
ALTER TABLE idempotency_keys ADD COLUMN result jsonb;
ALTER TABLE idempotency_keys
    DROP CONSTRAINT idempotency_state_known,
    ADD CONSTRAINT idempotency_state_known CHECK (state IN ('IN_FLIGHT', 'DONE', 'SUCCEEDED')),
    ADD CONSTRAINT idempotency_succeeded_has_result CHECK (state <> 'SUCCEEDED' OR result IS NOT NULL);
