-- A replay's `spaces` filter (the keys of the spaces whose documents it sends; NULL: every
-- space), kept with the replay so that a replay resumed after a restart, on any instance,
-- sends what it was asked for. Expand only: a nullable column with no default rewrites
-- nothing, and the previous release neither reads nor writes it (its replays have none).
SET LOCAL lock_timeout = '5s';

ALTER TABLE replays ADD COLUMN spaces text[];
