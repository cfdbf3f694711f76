-- A row's space, named by its writer when the writer knows it. The triggers of
-- 20261213000001 read the row's document (or review) for every insert: a statement of their
-- own, planned under row-level security, about 20 µs each, three on every approval (its
-- vote, audit and outbox rows). The service's writes of a document's rows name the space
-- they read with the document locked (documents never change space), so the triggers now
-- fire only for a row that names none: every row the previous release inserts, and every
-- writer of this one that names none, is in its document's space as before.
-- Expand only: the functions are unchanged, and the previous release names no space.
-- CREATE OR REPLACE TRIGGER takes SHARE ROW EXCLUSIVE on its table, briefly.
SET LOCAL lock_timeout = '5s';

CREATE OR REPLACE TRIGGER comments_space BEFORE INSERT ON comments
    FOR EACH ROW WHEN (NEW.space_id IS NULL) EXECUTE FUNCTION space_of_document_row();
CREATE OR REPLACE TRIGGER audit_log_space BEFORE INSERT ON audit_log
    FOR EACH ROW WHEN (NEW.space_id IS NULL) EXECUTE FUNCTION space_of_document_row();
CREATE OR REPLACE TRIGGER outbox_space BEFORE INSERT ON outbox
    FOR EACH ROW WHEN (NEW.space_id IS NULL) EXECUTE FUNCTION space_of_document_row();
CREATE OR REPLACE TRIGGER review_votes_space BEFORE INSERT ON review_votes
    FOR EACH ROW WHEN (NEW.space_id IS NULL) EXECUTE FUNCTION space_of_review_row();
CREATE OR REPLACE TRIGGER review_claims_space BEFORE INSERT ON review_claims
    FOR EACH ROW WHEN (NEW.space_id IS NULL) EXECUTE FUNCTION space_of_review_row();
