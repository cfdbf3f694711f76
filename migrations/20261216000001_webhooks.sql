-- Standard Webhooks per space: the endpoints a space's admins register, and one delivery row
-- per (endpoint, event). The deliveries are made by a trigger on `outbox`, in the
-- transaction that writes the event: nothing is lost across a crash, and no cursor over the
-- outbox is needed. A delivery keeps its own copy of the event's body, so a purged outbox
-- row leaves its deliveries (and their re-sends) as they were.
--
-- Expand only: new tables and a trigger. The previous release never reads the tables; its
-- outbox inserts fire the trigger too, and this release delivers what they made.
SET LOCAL lock_timeout = '5s';

CREATE TABLE webhooks (
    id              uuid        PRIMARY KEY,
    space_id        text        NOT NULL REFERENCES spaces (key),
    url             text        NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
    event_types     text[]      NOT NULL CHECK (cardinality(event_types) BETWEEN 1 AND 32),
    -- The signing secret (`whsec_...`), and the one it replaced while both sign (until
    -- `previous_until`, 24 h after a rotation).
    secret          text        NOT NULL,
    previous_secret text,
    previous_until  timestamptz,
    enabled         boolean     NOT NULL DEFAULT true,
    -- Why it is disabled: by whom, a 410, or days of failures.
    disabled_reason text,
    disabled_at     timestamptz,
    -- Since when every attempt failed (null: the last one succeeded, or none was made).
    failing_since   timestamptz,
    created_by      text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT webhooks_previous_pair CHECK ((previous_secret IS NULL) = (previous_until IS NULL))
);
CREATE INDEX webhooks_space ON webhooks (space_id, created_at, id);

CREATE TABLE webhook_deliveries (
    id              bigserial   PRIMARY KEY,
    webhook_id      uuid        NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    space_id        text        NOT NULL,
    event_id        uuid        NOT NULL,
    event_type      text        NOT NULL,
    payload         jsonb       NOT NULL,
    state           text        NOT NULL DEFAULT 'pending'
                                CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    -- An instance sending it holds it until then; past it, another may send it again.
    claimed_until   timestamptz,
    last_status     integer,
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz,
    CONSTRAINT webhook_deliveries_once UNIQUE (webhook_id, event_id)
);
-- The worker's claim: an endpoint's due deliveries, oldest first.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (webhook_id, next_attempt_at)
    WHERE state = 'pending';
-- The delivery log: an endpoint's deliveries, newest first.
CREATE INDEX webhook_deliveries_log ON webhook_deliveries (webhook_id, id);
-- The purge: deliveries done with, oldest first.
CREATE INDEX webhook_deliveries_done ON webhook_deliveries (created_at)
    WHERE state <> 'pending';

-- One delivery per endpoint of the event's space that is enabled and takes its type, for
-- every event the service publishes (a row with a routing key).
CREATE FUNCTION webhook_deliveries_of_event() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_deliveries (webhook_id, space_id, event_id, event_type, payload)
    SELECT w.id, w.space_id, NEW.event_id, NEW.event_type, NEW.payload
    FROM webhooks w
    WHERE w.space_id = NEW.space_id AND w.enabled AND NEW.event_type = ANY (w.event_types)
    ON CONFLICT ON CONSTRAINT webhook_deliveries_once DO NOTHING;
    RETURN NULL;
END
$$;
CREATE TRIGGER outbox_webhooks AFTER INSERT ON outbox
    FOR EACH ROW WHEN (NEW.routing_key IS NOT NULL AND NEW.space_id IS NOT NULL)
    EXECUTE FUNCTION webhook_deliveries_of_event();

-- A space's chain records its endpoints' changes too (validated in 20261216000002). The
-- previous release reads the action as text and never writes these.
-- squawk-ignore ban-drop-constraint
ALTER TABLE space_audit_log DROP CONSTRAINT space_audit_log_action_known;
ALTER TABLE space_audit_log ADD CONSTRAINT space_audit_log_action_known
    CHECK (action IN ('space.updated', 'member.put', 'member.removed', 'webhook.created',
                      'webhook.removed', 'webhook.rotated', 'webhook.enabled',
                      'webhook.disabled'))
    NOT VALID;

-- Row-level security, as on every table holding a space's rows (migration 20261213000003).
ALTER TABLE webhooks ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhooks FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON webhooks TO CURRENT_USER USING (true) WITH CHECK (true);
CREATE POLICY space_rows ON webhooks
    USING (kh_space_visible(space_id)) WITH CHECK (kh_space_visible(space_id));

ALTER TABLE webhook_deliveries ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhook_deliveries FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON webhook_deliveries TO CURRENT_USER USING (true) WITH CHECK (true);
CREATE POLICY space_rows ON webhook_deliveries
    USING (kh_space_visible(space_id)) WITH CHECK (kh_space_visible(space_id));
