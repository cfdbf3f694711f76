-- The titles the title search reads, apart from the documents: each document's id, space
-- and title, copied by a trigger whenever a document is inserted or its title or space
-- changes, as the previous release writes documents too. An approval, a submission or any
-- other change of status leaves this row alone, so its index (20261218000004) is not
-- written again: every update of a document that is not HOT wrote its title's trigrams
-- into documents_title_trgm_by_space once more (12 to 30 us an update, measured on 4,000
-- updates at 1,000,000 documents), and the search's keys would cost 110 to 130 us.
-- The service's role may not read or write it: only the title search's functions, which
-- run as the owner and check the space the transaction declared, and the trigger's.
-- Expand: the next migration copies the documents written before this one.
SET LOCAL lock_timeout = '5s';

CREATE TABLE document_titles (
    id uuid PRIMARY KEY REFERENCES documents (id) ON DELETE CASCADE,
    space_id text NOT NULL,
    title text NOT NULL
);
-- The schema's default privileges give every new table to the service's role; not this
-- one, which no policy walls (the service reads it through the search's functions only).
REVOKE ALL ON document_titles FROM kh_service;

CREATE FUNCTION kh_document_title_copy() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = public, pg_temp AS $$
BEGIN
    INSERT INTO document_titles (id, space_id, title)
    VALUES (NEW.id, NEW.space_id, NEW.title)
    ON CONFLICT (id) DO UPDATE SET space_id = EXCLUDED.space_id, title = EXCLUDED.title;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION kh_document_title_copy() FROM PUBLIC;

CREATE TRIGGER documents_title_copy_insert AFTER INSERT ON documents
    FOR EACH ROW EXECUTE FUNCTION kh_document_title_copy();
CREATE TRIGGER documents_title_copy_update AFTER UPDATE OF title, space_id ON documents
    FOR EACH ROW
    WHEN (OLD.title IS DISTINCT FROM NEW.title OR OLD.space_id IS DISTINCT FROM NEW.space_id)
    EXECUTE FUNCTION kh_document_title_copy();
