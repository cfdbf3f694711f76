-- A claim change and its audit row (src/store/claims.rs, write_claim), in one statement:
-- the review row written unchanged ($2 not NULL: whatever changes a review's claims writes
-- its row, which reviews::locking relies on), the caller's claim inserted or replaced
-- ($2 = 'take') or a reviewer's deleted ($2 = 'end'), and the audit row ($8 not NULL) with
-- its link, the document's chain head moved to it when the chain is on ($17). Every row
-- names the document's space ($19), so the space triggers read nothing.
WITH touched AS (
  UPDATE reviews SET stage = stage WHERE id = $1 AND $2::text IS NOT NULL),
taken AS (
  INSERT INTO review_claims (review_id, reviewer_id, stage, claimed_at, expires_at, space_id)
  SELECT $1, $3::text, $4::int4, $5::timestamptz, $6::timestamptz, $19::text WHERE $2::text = 'take'
  ON CONFLICT (review_id, reviewer_id) DO UPDATE
  SET stage = EXCLUDED.stage, claimed_at = EXCLUDED.claimed_at,
      expires_at = EXCLUDED.expires_at),
ended AS (
  DELETE FROM review_claims
  WHERE review_id = $1 AND reviewer_id = $3 AND $2::text = 'end'),
head AS (
  UPDATE documents SET audit_count = $16, audit_head = $17
  WHERE id = $7 AND $8::text IS NOT NULL AND $17::bytea IS NOT NULL)
INSERT INTO audit_log (document_id, review_id, action, actor_id, from_status, to_status,
                       document_version, request_id, lock_mode, fence_token, seq, hash, at,
                       space_id)
SELECT $7::uuid, $9::uuid, $8, $10::text, $11::text, $12::text, $13::int8, $14::text, $15::text,
       $20::int8, $16::int8, $17, $18::timestamptz, $19
WHERE $8::text IS NOT NULL
