-- The checks migration 20261215000001 added NOT VALID, validated in a transaction of their
-- own: validation reads each table under SHARE UPDATE EXCLUSIVE, which lets reads and
-- writes go on (the ACCESS EXCLUSIVE lock of the ALTERs was released at that commit).
SET LOCAL lock_timeout = '5s';

ALTER TABLE policy_versions VALIDATE CONSTRAINT policy_versions_reverify_after_range;
ALTER TABLE policy_versions VALIDATE CONSTRAINT policy_versions_reverify_grace_range;
ALTER TABLE policy_versions VALIDATE CONSTRAINT policy_versions_grace_needs_after;
ALTER TABLE reviews VALIDATE CONSTRAINT reviews_kind_known;
ALTER TABLE documents VALIDATE CONSTRAINT documents_status_known;
