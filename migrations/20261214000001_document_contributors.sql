-- Editing together: a document lists its contributors, everyone who edited it since its last
-- approval (an approval empties the list). A contributor of the version under review may not
-- vote on it.
--
-- Expand only, safe under the previous release: a column with a constant default is added
-- without rewriting the table, and the previous release, which never names it, leaves it as
-- it is (its edits add no one; its approvals do not empty it).
SET LOCAL lock_timeout = '5s';

ALTER TABLE documents ADD COLUMN contributors text[] NOT NULL DEFAULT '{}';

-- Until now only a document's author could edit it: it is its one contributor where an edit
-- was audited after the last approval (or since its creation, before the first).
UPDATE documents d SET contributors = ARRAY[d.author_id]
WHERE d.status <> 'ARCHIVED'
  AND EXISTS (
      SELECT 1 FROM audit_log a
      WHERE a.document_id = d.id AND a.action = 'edit'
        AND a.id > COALESCE((SELECT max(b.id) FROM audit_log b
                             WHERE b.document_id = d.id AND b.action = 'approve'
                               AND b.to_status = 'APPROVED'), 0));
