-- A vote's or a withdrawal's writes in one statement (src/store/reviews/combined.rs): the
-- vote row, the claims it ends, the review row, the document row (or its chain head alone),
-- the audit row and the outbox row. Every value is the plan's ($1..$51, bound there). The
-- rows name their space ($51, the document's as it was read locked), so the space triggers
-- (migration 20261219000001) have nothing to read.
WITH vote AS (
  INSERT INTO review_votes (review_id, voter_id, stage, vote, comment, fence_token, space_id)
  SELECT $1, $2, $3, $4, $5, $6, $51 WHERE $2::text IS NOT NULL
  RETURNING at),
ended AS (
  DELETE FROM review_claims
  WHERE review_id = $1 AND ($7::bool OR reviewer_id = $2)),
-- The review row is written even when the plan leaves it as it is ($8 false: a vote that
-- decides nothing): whatever changes a review's votes or claims writes its row
-- (src/store/reviews/locking.rs relies on it).
reviewed AS (
  UPDATE reviews SET status = $9, stage = $10, decided_by = $11,
         decided_at = CASE WHEN $8::bool THEN $15 ELSE decided_at END,
         comment = $12, reason = $13, fence_token = $14
  WHERE id = $1),
document AS (
  UPDATE documents SET title = COALESCE($18, title), body = COALESCE($19, body),
         status = COALESCE($20, status), version = COALESCE($21, version),
         current_review_id = CASE WHEN $17::bool THEN $22 ELSE current_review_id END,
         fence_token = CASE WHEN $17 THEN $23 ELSE fence_token END,
         policy = COALESCE($24, policy),
         updated_at = CASE WHEN $17 THEN $16 ELSE updated_at END,
         published_version = CASE $25 WHEN 'publish' THEN $21 WHEN 'withdraw' THEN NULL
                                      ELSE published_version END,
         published_title = CASE $25 WHEN 'publish' THEN COALESCE($18, title)
                                    WHEN 'withdraw' THEN NULL ELSE published_title END,
         published_body = CASE $25 WHEN 'publish' THEN COALESCE($19, body)
                                   WHEN 'withdraw' THEN NULL ELSE published_body END,
         audit_count = COALESCE($26, audit_count), audit_head = COALESCE($27, audit_head),
         contributors = COALESCE($48, contributors),
         verify_by = CASE $49 WHEN 'set' THEN $50 ELSE verify_by END
  WHERE id = $28 AND ($17 OR $27::bytea IS NOT NULL)),
audit AS (
  INSERT INTO audit_log (document_id, review_id, action, actor_id, from_status,
                         to_status, document_version, request_id, lock_mode,
                         fence_token, seq, hash, at, space_id)
  VALUES ($28, $29, $30, $31, $32, $33, $34, $35, $36, $37, $26, $27, $38, $51)),
-- Materialized: `waiting` is read twice below, and inlined each read was a scan of its own.
earlier AS MATERIALIZED (
  SELECT EXISTS (SELECT 1 FROM outbox WHERE document_id = $28 AND done_at IS NULL)
         AS waiting),
event AS (
  INSERT INTO outbox (event_id, document_id, document_version, event_type,
                      routing_key, payload, claimed_until, claim_token, projected_at,
                      traceparent, tracestate, space_id)
  SELECT $39, $28, $34, $40, $41, $42,
         CASE WHEN $43::float8 IS NULL OR waiting THEN NULL
              ELSE clock_timestamp() + make_interval(secs => $43) END,
         CASE WHEN $43::float8 IS NULL OR waiting THEN NULL ELSE $44::uuid END,
         CASE WHEN $45 THEN NULL ELSE now() END,
         $46, $47, $51
  FROM earlier
  RETURNING id, claim_token)
SELECT e.id AS "id!", e.claim_token, (SELECT at FROM vote) AS vote_at FROM event e
