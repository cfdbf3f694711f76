-- Documents, reviews, audit trail and the transactional outbox.
-- PostgreSQL is the only source of truth; MongoDB and RabbitMQ are fed from `outbox`.

CREATE TABLE documents (
    id                uuid PRIMARY KEY,
    title             text        NOT NULL,
    body              text        NOT NULL,
    status            text        NOT NULL
        CONSTRAINT documents_status_known CHECK (status IN ('DRAFT', 'PENDING_REVIEW', 'APPROVED', 'REJECTED')),
    version           bigint      NOT NULL CONSTRAINT documents_version_positive CHECK (version >= 1),
    author_id         text        NOT NULL,
    current_review_id uuid,
    -- Fencing token of the outer lock that guarded the last transition (NULL: none, or degraded).
    fence_token       bigint,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE reviews (
    id               uuid PRIMARY KEY,
    document_id      uuid        NOT NULL REFERENCES documents (id),
    status           text        NOT NULL
        CONSTRAINT reviews_status_known CHECK (status IN ('PENDING', 'APPROVED', 'REJECTED')),
    document_version bigint      NOT NULL,
    submitted_by     text        NOT NULL,
    submitted_at     timestamptz NOT NULL DEFAULT now(),
    decided_by       text,
    decided_at       timestamptz,
    comment          text,
    reason           text,
    fence_token      bigint,
    CONSTRAINT reviews_decision_complete CHECK ((status = 'PENDING') = (decided_at IS NULL AND decided_by IS NULL)),
    CONSTRAINT reviews_reject_has_reason CHECK (status <> 'REJECTED' OR reason IS NOT NULL)
);

-- A document has at most one pending review, whatever happens above the database.
CREATE UNIQUE INDEX reviews_one_pending_per_document ON reviews (document_id) WHERE status = 'PENDING';
CREATE INDEX reviews_by_status ON reviews (status, submitted_at, id);
CREATE INDEX reviews_by_document ON reviews (document_id, submitted_at, id);

ALTER TABLE documents
    ADD CONSTRAINT documents_current_review_fk FOREIGN KEY (current_review_id) REFERENCES reviews (id);

CREATE TABLE audit_log (
    id               bigserial PRIMARY KEY,
    document_id      uuid        NOT NULL REFERENCES documents (id),
    review_id        uuid        REFERENCES reviews (id),
    action           text        NOT NULL,
    actor_id         text        NOT NULL,
    from_status      text,
    to_status        text        NOT NULL,
    document_version bigint      NOT NULL,
    request_id       text,
    -- 'redis' when the outer lock was held, 'row_lock_only' when degraded, 'none' for edits.
    lock_mode        text        NOT NULL,
    fence_token      bigint,
    at               timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_log_by_document ON audit_log (document_id, id);

-- One row per side effect to run after COMMIT: the MongoDB projection of the document, then
-- (when routing_key is set) the RabbitMQ event. Rows of one document run in id order.
CREATE TABLE outbox (
    id               bigserial PRIMARY KEY,
    event_id         uuid        NOT NULL UNIQUE,
    document_id      uuid        NOT NULL REFERENCES documents (id),
    document_version bigint      NOT NULL,
    event_type       text        NOT NULL,
    routing_key      text,
    payload          jsonb       NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    attempts         integer     NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    projected_at     timestamptz,
    published_at     timestamptz,
    done_at          timestamptz,
    -- A dispatcher working on the row (its I/O runs outside any transaction) until then;
    -- if that dispatcher dies, another takes the row after this time.
    claimed_until    timestamptz,
    claim_token      uuid,
    last_error       text
);
CREATE INDEX outbox_undone_by_document ON outbox (document_id, id) WHERE done_at IS NULL;
CREATE INDEX outbox_undone ON outbox (id) WHERE done_at IS NULL;
CREATE INDEX outbox_done_at ON outbox (done_at) WHERE done_at IS NOT NULL;
