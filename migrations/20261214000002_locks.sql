-- Locks kept in PostgreSQL (the database lock provider, `src/lock/postgres.rs`): the edit
-- leases of documents (a person's check-out, `lease:doc:<id>`), which last minutes, survive
-- a Redis loss and need no watchdog. One row per key, kept after a release so that its fence
-- strictly increases for the key's lifetime; the owner token is null while the key is free.
-- Expiry is read against the database's clock, the one clock every instance shares.
--
-- Expand only: a new table the previous release never reads.
CREATE TABLE locks (
    key         text        PRIMARY KEY,
    owner_token text,
    -- Who holds it, for people to read (a document lease: the user's id); null for a lock
    -- no person holds.
    holder      text,
    fence       bigint      NOT NULL CHECK (fence > 0),
    acquired_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);
