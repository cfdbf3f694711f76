-- Spaces (knowledge bases): each document belongs to one space for life; who may do what
-- in a space is its memberships. A space's key is its identifier: it never changes, so the
-- rows of a space name it by its key (`space_id`), and a response or an event needs no join
-- to show it.
--
-- Expand only, safe under the previous release: the new columns have a constant default
-- (no table rewrite), `default`, the space every existing document is in and the one a
-- document the previous release creates lands in. A review takes its document's space
-- from a trigger, so a review the previous release inserts is in the right space whatever
-- space its document is in.
SET LOCAL lock_timeout = '5s';

CREATE TABLE spaces (
    key            text PRIMARY KEY
        CONSTRAINT spaces_key_shape CHECK (key ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    name           text        NOT NULL CONSTRAINT spaces_name_present CHECK (length(name) > 0),
    -- The policy of a document created in the space without one (NULL: the setting
    -- review.default_policy).
    default_policy text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);

INSERT INTO spaces (key, name) VALUES ('default', 'Default') ON CONFLICT (key) DO NOTHING;

-- Who holds which roles in a space: a user (`user:<sub>`) or a group of the token's groups
-- claim (`group:<name>`).
CREATE TABLE space_members (
    space_id   text        NOT NULL REFERENCES spaces (key),
    subject    text        NOT NULL
        CONSTRAINT space_members_subject_shape CHECK (subject ~ '^(user|group):.+$'),
    roles      text[]      NOT NULL
        CONSTRAINT space_members_roles_known
            CHECK (cardinality(roles) > 0 AND roles <@ ARRAY['author', 'reviewer', 'space_admin']),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (space_id, subject)
);

-- A caller's memberships, read on every request: by its user and its groups.
CREATE INDEX space_members_by_subject ON space_members (subject, space_id);

ALTER TABLE documents ADD COLUMN space_id text NOT NULL DEFAULT 'default';
ALTER TABLE reviews ADD COLUMN space_id text NOT NULL DEFAULT 'default';

-- Checked for new rows from here on; the existing ones (all `default`) are validated by the
-- next migration without blocking writes.
ALTER TABLE documents
    ADD CONSTRAINT documents_space_fk FOREIGN KEY (space_id) REFERENCES spaces (key) NOT VALID;
ALTER TABLE reviews
    ADD CONSTRAINT reviews_space_fk FOREIGN KEY (space_id) REFERENCES spaces (key) NOT VALID;

-- A review is in its document's space, whoever inserts it.
CREATE FUNCTION reviews_space_of_document() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    SELECT d.space_id INTO NEW.space_id FROM documents d WHERE d.id = NEW.document_id;
    RETURN NEW;
END
$$;

CREATE TRIGGER reviews_space_of_document
    BEFORE INSERT ON reviews
    FOR EACH ROW EXECUTE FUNCTION reviews_space_of_document();
