-- The second wall, step 1 of 3: every table holding a space's rows names the space
-- (`space_id`), so that row-level security (step 3) can decide on the row alone.
--
-- Expand only, safe under the previous release: the columns are nullable with no default
-- (no table rewrite), and a trigger fills them from the row's document (or review), so a
-- row the previous release inserts, which names no space, is in its document's space all
-- the same. The rows already there are filled by the next migration, outside this one's
-- table locks. An idempotency record names no document: it takes the space of the write
-- whose result it records (`save_result`), and is the caller's alone until then.
SET LOCAL lock_timeout = '5s';

ALTER TABLE review_votes ADD COLUMN space_id text;
ALTER TABLE review_claims ADD COLUMN space_id text;
ALTER TABLE comments ADD COLUMN space_id text;
ALTER TABLE audit_log ADD COLUMN space_id text;
ALTER TABLE outbox ADD COLUMN space_id text;
ALTER TABLE idempotency_keys ADD COLUMN space_id text;

-- A row of a document is in its document's space, whoever inserts it.
CREATE FUNCTION space_of_document_row() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    SELECT d.space_id INTO NEW.space_id FROM documents d WHERE d.id = NEW.document_id;
    RETURN NEW;
END
$$;

-- A vote or claim is in its review's space.
CREATE FUNCTION space_of_review_row() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    SELECT r.space_id INTO NEW.space_id FROM reviews r WHERE r.id = NEW.review_id;
    RETURN NEW;
END
$$;

CREATE TRIGGER comments_space BEFORE INSERT ON comments
    FOR EACH ROW EXECUTE FUNCTION space_of_document_row();
CREATE TRIGGER audit_log_space BEFORE INSERT ON audit_log
    FOR EACH ROW EXECUTE FUNCTION space_of_document_row();
CREATE TRIGGER outbox_space BEFORE INSERT ON outbox
    FOR EACH ROW EXECUTE FUNCTION space_of_document_row();
CREATE TRIGGER review_votes_space BEFORE INSERT ON review_votes
    FOR EACH ROW EXECUTE FUNCTION space_of_review_row();
CREATE TRIGGER review_claims_space BEFORE INSERT ON review_claims
    FOR EACH ROW EXECUTE FUNCTION space_of_review_row();
