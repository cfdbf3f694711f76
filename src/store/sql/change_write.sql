-- A change's audit row and outbox row, and a comment with them (src/store/tx.rs,
-- write_change): the comment row ($25 its id, NULL: none), numbered by the document row's
-- comment_count, which moves in the same UPDATE as the chain head ($21: the head moves
-- here; with a comment it always does). The outbox row is held for the request ($7, $8)
-- unless an earlier row of the document is undelivered. Every row names the document's
-- space ($24), so the space triggers read nothing.
WITH audit AS (
  INSERT INTO audit_log (document_id, review_id, action, actor_id, from_status,
                         to_status, document_version, request_id, lock_mode, fence_token,
                         seq, hash, at, space_id)
  VALUES ($2, $9, $10, $11, $12, $13, $3, $14, $15, $16, $18, $19, $20, $24)),
head AS (UPDATE documents SET audit_count = COALESCE($18, audit_count),
                              audit_head = COALESCE($19, audit_head),
                              comment_count = comment_count
                                              + ($25::uuid IS NOT NULL)::int
         WHERE id = $2 AND $21::bool
           AND ($19::bytea IS NOT NULL OR $25::uuid IS NOT NULL)
         RETURNING comment_count),
comment AS (
  INSERT INTO comments (document_id, seq, id, review_id, author_id, body, space_id)
  SELECT $2, h.comment_count, $25, $27, $28, $26, $24 FROM head h
  WHERE $25::uuid IS NOT NULL
  RETURNING seq, created_at),
-- Materialized: `waiting` is read twice below, and inlined each read was a scan of its own.
earlier AS MATERIALIZED (
  SELECT EXISTS (SELECT 1 FROM outbox WHERE document_id = $2 AND done_at IS NULL)
         AS waiting),
event AS (
  INSERT INTO outbox (event_id, document_id, document_version, event_type,
                      routing_key, payload, claimed_until, claim_token, projected_at,
                      traceparent, tracestate, space_id)
  SELECT $1, $2, $3, $4, $5, $6,
         CASE WHEN $7::float8 IS NULL OR waiting THEN NULL
              ELSE clock_timestamp() + make_interval(secs => $7) END,
         CASE WHEN $7::float8 IS NULL OR waiting THEN NULL ELSE $8::uuid END,
         CASE WHEN $17 THEN NULL ELSE now() END,
         $22, $23, $24
  FROM earlier
  RETURNING id, claim_token)
SELECT e.id AS "id!", e.claim_token, c.seq AS "comment_seq?",
       c.created_at AS "comment_at?"
FROM event e LEFT JOIN comment c ON true
