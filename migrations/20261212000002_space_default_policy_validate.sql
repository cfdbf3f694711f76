-- The foreign key of a space's default policy, added NOT VALID by the previous migration,
-- validated under a lock that lets writes go on.
SET LOCAL lock_timeout = '5s';
ALTER TABLE spaces VALIDATE CONSTRAINT spaces_default_policy_fkey;
