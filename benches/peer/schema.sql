-- benches/peer/schema.sql: the tables of the benchmark peer (benches/peer/app.py), the seed
-- design's two rows per approval, in a PostgreSQL database of its own. Idempotent.

CREATE TABLE IF NOT EXISTS documents (
    id         uuid PRIMARY KEY,
    title      text NOT NULL,
    body       text NOT NULL,
    author_id  text NOT NULL,
    status     text NOT NULL,
    version    int NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS reviews (
    id           uuid PRIMARY KEY,
    document_id  uuid NOT NULL REFERENCES documents (id),
    status       text NOT NULL,
    submitted_by text NOT NULL,
    decided_by   text,
    decided_at   timestamptz,
    comment      text
);
