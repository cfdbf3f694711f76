-- A review and its document locked in one statement (src/store/reviews/locking.rs): the
-- document row first, then the review row, each skipped rather than waited for; with the
-- review's policy stages, votes and claims, whether the review row read is the one this
-- statement's snapshot holds (`fresh`), the time once both locks are held, and the caller's
-- memberships as the transaction's BEGIN read them (`kh.memberships`, when it did:
-- src/store/spaces/memberships.rs).
SELECT l.id AS "id!", l.title AS "title!", l.body AS "body!",
       l.status AS "status!: DocumentStatus", l.version AS "version!",
       l.author_id AS "author_id!", l.space_id AS "space!", l.current_review_id, l.policy AS "policy!",
       l.fence_token AS "fence_token: FencingToken", l.created_at AS "created_at!",
       l.updated_at AS "updated_at!", l.published_version, l.published_title,
       l.published_body, l.contributors AS "contributors!", l.verify_by, l.audit_count AS "audit_count!", l.audit_head, l.begun AS "begun!",
       l.review_id AS "review_id!", l.document_id AS "document_id!",
       l.review_status AS "review_status!: ReviewStatus",
       l.document_version AS "document_version!", l.submitted_by AS "submitted_by!",
       l.submitted_at AS "submitted_at!", l.decided_by, l.decided_at, l.comment, l.reason,
       l.review_fence AS "review_fence: FencingToken", l.review_policy AS "review_policy!",
       l.policy_version AS "policy_version!", l.stage AS "stage!", l.due_at,
       l.kind AS "kind!: ReviewKind", l.reverify_after_secs,
       l.claim_ttl_secs AS "claim_ttl_secs!", l.stages AS "stages!: Json<Vec<Stage>>",
       l.votes AS "votes!: Json<Vec<Vote>>", l.claims AS "claims!: Json<Vec<Claim>>",
       l.fresh AS "fresh!", clock_timestamp() AS "now!",
       current_setting('kh.memberships', true) AS memberships
FROM (
  SELECT d.id, d.title, d.body, d.status, d.version, d.author_id, d.space_id, d.current_review_id,
         d.policy, d.fence_token, d.created_at, d.updated_at, d.published_version,
         d.published_title, d.published_body, d.contributors, d.verify_by, d.audit_count, d.audit_head, now() AS begun,
         r.id AS review_id, r.document_id, r.status AS review_status, r.document_version,
         r.submitted_by, r.submitted_at, r.decided_by, r.decided_at, r.comment, r.reason,
         r.fence_token AS review_fence, r.policy AS review_policy, r.policy_version, r.stage,
         r.due_at, r.kind, pv.reverify_after_secs, pv.claim_ttl_secs, pv.stages,
         COALESCE((SELECT json_agg(json_build_object(
                     'voter_id', v.voter_id, 'stage', v.stage, 'kind', v.vote,
                     'comment', v.comment, 'at', v.at) ORDER BY v.at)
                   FROM review_votes v WHERE v.review_id = r.id), '[]') AS votes,
         COALESCE((SELECT json_agg(json_build_object(
                     'reviewer_id', c.reviewer_id, 'stage', c.stage,
                     'claimed_at', c.claimed_at, 'expires_at', c.expires_at))
                   FROM review_claims c WHERE c.review_id = r.id), '[]') AS claims,
         -- The locked review row is the one the snapshot holds: no transaction touched it
         -- (nor, so, the review's votes or claims) since this statement began.
         r.xmin::text = (SELECT r2.xmin::text FROM reviews r2 WHERE r2.id = r.id) AS fresh
  FROM reviews r
  JOIN documents d ON d.id = r.document_id
  JOIN policy_versions pv ON pv.name = r.policy AND pv.version = r.policy_version
  WHERE r.id = $1
  FOR UPDATE OF d, r SKIP LOCKED) l
