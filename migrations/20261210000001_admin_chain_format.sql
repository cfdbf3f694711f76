-- The format each row of the admin chain is linked in (see src/domain/audit_format.rs):
-- 1, the columns listed by hand, for every row linked so far and by a release before this
-- column (its INSERTs leave the default, and it links in format 1); 2 and later, derived
-- from the row's type, set by the release that links the row. Expand only: constant
-- defaults, no table rewrite.
SET LOCAL lock_timeout = '5s';

ALTER TABLE policy_versions
    ADD COLUMN chain_format smallint NOT NULL DEFAULT 1;
ALTER TABLE outbox_admin_actions
    ADD COLUMN chain_format smallint NOT NULL DEFAULT 1;
