-- The whole life of a document: revisions of approved documents (the published revision
-- kept beside the working copy), archive, and comments. Existing APPROVED documents are
-- published at their current version.

ALTER TABLE documents DROP CONSTRAINT documents_status_known;
ALTER TABLE documents ADD CONSTRAINT documents_status_known
    CHECK (status IN ('DRAFT', 'PENDING_REVIEW', 'APPROVED', 'REJECTED', 'ARCHIVED'));

-- The published revision: what the last approval gave the document, served while the next
-- revision is drafted and reviewed. NULL before the first approval and after an archive.
-- comment_count numbers the document's comments (taken under its row lock).
ALTER TABLE documents
    ADD COLUMN published_version bigint,
    ADD COLUMN published_title   text,
    ADD COLUMN published_body    text,
    ADD COLUMN comment_count     bigint NOT NULL DEFAULT 0,
    ADD CONSTRAINT documents_published_complete CHECK (
        (published_version IS NULL) = (published_title IS NULL)
        AND (published_version IS NULL) = (published_body IS NULL)),
    ADD CONSTRAINT documents_published_not_ahead CHECK (published_version <= version);

UPDATE documents
SET published_version = version, published_title = title, published_body = body
WHERE status = 'APPROVED';

-- Append-only; `seq` counts from 1 per document, in the order the comments committed.
CREATE TABLE comments (
    document_id uuid        NOT NULL REFERENCES documents (id),
    seq         bigint      NOT NULL CONSTRAINT comments_seq_positive CHECK (seq >= 1),
    id          uuid        NOT NULL UNIQUE,
    review_id   uuid        REFERENCES reviews (id),
    author_id   text        NOT NULL,
    body        text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (document_id, seq)
);
