-- A lock taken (src/lock/postgres.rs, `take`): the row of $1 for owner token $2 and holder $3
-- for $4 seconds, when it is free or expired, its fence one up; renewed for the same live
-- holder, token and fence kept. When someone else holds it, the row as it was: its holder,
-- fence and end, `taken` false.
WITH taken AS (
  INSERT INTO locks AS l (key, owner_token, holder, fence, acquired_at, expires_at)
  VALUES ($1, $2, $3, 1, clock_timestamp(), clock_timestamp() + make_interval(secs => $4))
  ON CONFLICT (key) DO UPDATE SET
    owner_token = CASE WHEN l.owner_token IS NOT NULL AND l.expires_at > clock_timestamp()
                       THEN l.owner_token ELSE EXCLUDED.owner_token END,
    fence = CASE WHEN l.owner_token IS NOT NULL AND l.expires_at > clock_timestamp()
                 THEN l.fence ELSE l.fence + 1 END,
    acquired_at = CASE WHEN l.owner_token IS NOT NULL AND l.expires_at > clock_timestamp()
                       THEN l.acquired_at ELSE EXCLUDED.acquired_at END,
    holder = EXCLUDED.holder,
    expires_at = EXCLUDED.expires_at
  -- Free, expired, or live and the same holder's (a renewal; never for a null holder).
  WHERE l.owner_token IS NULL OR l.expires_at <= clock_timestamp() OR l.holder = EXCLUDED.holder
  RETURNING owner_token, holder, fence, expires_at)
SELECT t.owner_token, COALESCE(t.holder, c.holder) AS holder, COALESCE(t.fence, c.fence) AS fence,
       COALESCE(t.expires_at, c.expires_at) AS expires_at, t.fence IS NOT NULL AS taken,
       clock_timestamp() AS now
FROM (SELECT 1) AS one
LEFT JOIN taken t ON true
LEFT JOIN locks c ON c.key = $1 AND t.fence IS NULL
