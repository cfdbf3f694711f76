-- A success is now recorded as the use case's typed result (`outcome`, state SUCCEEDED),
-- which the HTTP layer renders exactly as it renders a fresh one. A refusal keeps its reply as
-- it was sent (DONE: response_status, response_body), and so does a success recorded before
-- this release. An older instance does not know SUCCEEDED: it answers such a retry 409
-- IDEMPOTENCY_IN_FLIGHT (try again), never a wrong replay, while a rolling upgrade runs.
ALTER TABLE idempotency_keys ADD COLUMN outcome jsonb;
ALTER TABLE idempotency_keys
    DROP CONSTRAINT idempotency_state_known,
    ADD CONSTRAINT idempotency_state_known
        CHECK (state IN ('IN_FLIGHT', 'DONE', 'SUCCEEDED')) NOT VALID,
    ADD CONSTRAINT idempotency_succeeded_has_outcome
        CHECK (state <> 'SUCCEEDED' OR outcome IS NOT NULL) NOT VALID;
-- The old rows satisfy both; checking them takes no lock that stops writes.
ALTER TABLE idempotency_keys VALIDATE CONSTRAINT idempotency_state_known;
ALTER TABLE idempotency_keys VALIDATE CONSTRAINT idempotency_succeeded_has_outcome;
