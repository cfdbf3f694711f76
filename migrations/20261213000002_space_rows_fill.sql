-- The second wall, step 2 of 3: the rows written before their tables named the space get
-- their document's (or review's). Row locks only, no table lock: the previous release
-- keeps writing meanwhile, and its new rows are filled by the triggers of step 1. A record
-- of an idempotency key written before (it names no document) stays without a space: it is
-- its caller's, as before.
SET LOCAL lock_timeout = '5s';

UPDATE comments t SET space_id = d.space_id
  FROM documents d WHERE d.id = t.document_id AND t.space_id IS NULL;
UPDATE audit_log t SET space_id = d.space_id
  FROM documents d WHERE d.id = t.document_id AND t.space_id IS NULL;
UPDATE outbox t SET space_id = d.space_id
  FROM documents d WHERE d.id = t.document_id AND t.space_id IS NULL;
UPDATE review_votes t SET space_id = r.space_id
  FROM reviews r WHERE r.id = t.review_id AND t.space_id IS NULL;
UPDATE review_claims t SET space_id = r.space_id
  FROM reviews r WHERE r.id = t.review_id AND t.space_id IS NULL;
