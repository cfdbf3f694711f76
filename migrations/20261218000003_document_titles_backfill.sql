-- The titles of the documents written before the trigger of 20261218000002. A document
-- written since has its row from the trigger, which this one leaves as it is (the
-- trigger's copy is as new or newer). Its own transaction: the trigger's lock on
-- documents was released with the previous migration, and this reads documents without
-- blocking their writes. Before the index (the next migration), which builds faster
-- over the rows at once than row by row.
SET LOCAL lock_timeout = '5s';

INSERT INTO document_titles (id, space_id, title)
SELECT id, space_id, title FROM documents
ON CONFLICT (id) DO NOTHING;
