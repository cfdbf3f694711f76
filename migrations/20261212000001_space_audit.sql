-- The audit of spaces. A space's settings and memberships change in a chain of the space's
-- own: `space_audit_log`, one row per change, linked by the service (the key is never in
-- the database) under the space row's lock, whose `audit_count`/`audit_head` keep the
-- chain's head, as a document's row keeps its chain's. A space's creation joins the admin
-- chain (the platform's, with policy versions and outbox admin actions): a row of
-- `space_admin_actions`, linked under the head row `admin` of `audit_chain_heads`.
--
-- A space's default policy must name a policy: checked for new rows from here on, the
-- existing ones (`default`, with none) validated by the next migration without blocking
-- writes. Expand only: new tables, and columns with constant defaults (no table rewrite).
SET LOCAL lock_timeout = '5s';

ALTER TABLE spaces
    ADD COLUMN audit_count bigint NOT NULL DEFAULT 0,
    ADD COLUMN audit_head  bytea;

ALTER TABLE spaces
    ADD CONSTRAINT spaces_default_policy_fkey
        FOREIGN KEY (default_policy) REFERENCES policies (name) NOT VALID;

CREATE TABLE space_audit_log (
    id             bigserial   PRIMARY KEY,
    space_id       text        NOT NULL REFERENCES spaces (key),
    action         text        NOT NULL
        CONSTRAINT space_audit_log_action_known
            CHECK (action IN ('space.updated', 'member.put', 'member.removed')),
    -- A membership's subject, its roles after the change and before it (NULL: none).
    subject        text,
    roles          text[],
    previous_roles text[],
    -- The space's settings after the change (`space.updated`).
    name           text,
    default_policy text,
    actor_id       text        NOT NULL,
    request_id     text,
    at             timestamptz NOT NULL DEFAULT now(),
    -- Its position in the space's chain (from 1), its link, and the format it was linked
    -- in (derived from the row's type: 2 and later); NULL until linked.
    seq            bigint,
    hash           bytea,
    format         smallint    NOT NULL DEFAULT 2
);
-- One row per position of a space's chain.
CREATE UNIQUE INDEX space_audit_log_chain ON space_audit_log (space_id, seq);
-- The rows not linked yet (written with `audit.chain` off): none once linked.
CREATE INDEX space_audit_log_unchained ON space_audit_log (space_id, id)
    WHERE hash IS NULL OR seq IS NULL;

CREATE TABLE space_admin_actions (
    id             bigserial   PRIMARY KEY,
    space_id       text        NOT NULL REFERENCES spaces (key),
    action         text        NOT NULL
        CONSTRAINT space_admin_actions_action_known CHECK (action IN ('space.created')),
    name           text        NOT NULL,
    default_policy text,
    actor_id       text        NOT NULL,
    request_id     text,
    at             timestamptz NOT NULL DEFAULT now(),
    -- The admin chain's columns, as on policy_versions and outbox_admin_actions: a kind
    -- that arrived after formats, so never format 1.
    chain_seq      bigint,
    chain_hash     bytea,
    chain_format   smallint    NOT NULL DEFAULT 2
        CONSTRAINT space_admin_actions_format_derived CHECK (chain_format >= 2)
);
CREATE UNIQUE INDEX space_admin_actions_chain ON space_admin_actions (chain_seq);
