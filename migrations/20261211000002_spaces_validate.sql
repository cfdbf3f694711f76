-- The space foreign keys added NOT VALID by the previous migration, validated under a lock
-- that lets writes go on (every existing row is in `default`).
SET LOCAL lock_timeout = '5s';
ALTER TABLE documents VALIDATE CONSTRAINT documents_space_fk;
ALTER TABLE reviews VALIDATE CONSTRAINT reviews_space_fk;
