-- Freshness: re-verification. A policy may say how long an approval holds
-- (`reverify_after_secs`) and how long a re-verification may stay undecided
-- (`reverify_grace_secs`); an approved document carries the time its next re-verification is
-- due (`verify_by`); a review is of kind `publish` (a submit opened it) or `reverify` (the
-- scheduler did); a document nobody re-verified in time is EXPIRED.
--
-- Expand only, safe under the previous release: every column is nullable or has a constant
-- default (no rewrite), the previous release never names them (its approvals leave
-- `verify_by` NULL: no re-verification is scheduled for them), and the status check is
-- widened, never narrowed.
SET LOCAL lock_timeout = '5s';

ALTER TABLE policy_versions
    ADD COLUMN reverify_after_secs int4,
    ADD COLUMN reverify_grace_secs int4;
ALTER TABLE policy_versions
    ADD CONSTRAINT policy_versions_reverify_after_range
        CHECK (reverify_after_secs BETWEEN 60 AND 157680000) NOT VALID,
    ADD CONSTRAINT policy_versions_reverify_grace_range
        CHECK (reverify_grace_secs BETWEEN 60 AND 31536000) NOT VALID,
    ADD CONSTRAINT policy_versions_grace_needs_after
        CHECK (reverify_grace_secs IS NULL OR reverify_after_secs IS NOT NULL) NOT VALID;

ALTER TABLE documents ADD COLUMN verify_by timestamptz;

ALTER TABLE reviews ADD COLUMN kind text NOT NULL DEFAULT 'publish';
ALTER TABLE reviews ADD CONSTRAINT reviews_kind_known
    CHECK (kind IN ('publish', 'reverify')) NOT VALID;

-- The status check is replaced by a wider one in this transaction: every row the old one
-- let in, the new one does, and no moment is left without a check.
-- squawk-ignore ban-drop-constraint
ALTER TABLE documents DROP CONSTRAINT documents_status_known;
ALTER TABLE documents ADD CONSTRAINT documents_status_known
    CHECK (status IN ('DRAFT', 'PENDING_REVIEW', 'APPROVED', 'REJECTED', 'ARCHIVED', 'EXPIRED'))
    NOT VALID;
