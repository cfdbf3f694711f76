-- The tamper-evident audit chain. Every audit row carries its position in its chain and
-- its link, hash = HMAC-SHA-256(audit.key, previous link || the row's canonical bytes),
-- made by the service: the key is never in the database. A document's rows form one chain
-- (`audit_log.seq` from 1), whose head (how many rows, the last link) the document row
-- keeps; policy versions and outbox admin actions form one chain of their own, whose head
-- is the one row of `audit_chain_heads`. Existing rows are linked by the service's migrate
-- step right after this migration (it holds the key); until then their columns are NULL.

ALTER TABLE audit_log
    ADD COLUMN seq  bigint,
    ADD COLUMN hash bytea;
-- One row per position of a document's chain (NULLs, the rows not linked yet, are many).
CREATE UNIQUE INDEX audit_log_chain ON audit_log (document_id, seq);
-- The rows not linked yet: all of them right after this migration, none once linked.
CREATE INDEX audit_log_unchained ON audit_log (document_id, id) WHERE hash IS NULL OR seq IS NULL;

-- Constant defaults: no table rewrite.
ALTER TABLE documents
    ADD COLUMN audit_count bigint NOT NULL DEFAULT 0,
    ADD COLUMN audit_head  bytea;

-- The head of the chains that belong to no document; its row is what a write of the chain
-- locks (FOR UPDATE) to take the next position.
CREATE TABLE audit_chain_heads (
    chain text   PRIMARY KEY,
    count bigint NOT NULL DEFAULT 0,
    hash  bytea
);
INSERT INTO audit_chain_heads (chain) VALUES ('admin');

ALTER TABLE policy_versions
    ADD COLUMN chain_seq  bigint,
    ADD COLUMN chain_hash bytea;
ALTER TABLE outbox_admin_actions
    ADD COLUMN chain_seq  bigint,
    ADD COLUMN chain_hash bytea;
CREATE UNIQUE INDEX policy_versions_chain ON policy_versions (chain_seq);
CREATE UNIQUE INDEX outbox_admin_actions_chain ON outbox_admin_actions (chain_seq);
