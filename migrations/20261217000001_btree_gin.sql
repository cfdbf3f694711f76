-- btree_gin: GIN operator classes for plain equality on scalar columns, so that one GIN
-- index can hold a document's space beside its title's trigrams (the next migration).
-- It ships with PostgreSQL (contrib) and is a trusted extension, like pg_trgm: the
-- database's owner, who runs the migrations, may create it.
SET LOCAL lock_timeout = '5s';
CREATE EXTENSION IF NOT EXISTS btree_gin;
