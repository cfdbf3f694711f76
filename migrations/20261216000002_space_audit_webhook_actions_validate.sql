-- The check migration 20261216000001 widened NOT VALID, validated in a transaction of its
-- own: it reads the table under a SHARE UPDATE EXCLUSIVE lock, which lets writes go on.
SET LOCAL lock_timeout = '5s';

ALTER TABLE space_audit_log VALIDATE CONSTRAINT space_audit_log_action_known;
