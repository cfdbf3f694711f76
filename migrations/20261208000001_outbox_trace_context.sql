-- The W3C trace context of the request (or background task) that wrote an outbox row,
-- captured by the same INSERT, so that whoever publishes the row later (the request
-- itself, a dispatcher on another instance, a retry after a parking) sends it on as the
-- message's `traceparent` / `tracestate` headers. Nullable, no default: adding them
-- rewrites nothing, and rows written before have none.
ALTER TABLE outbox
    ADD COLUMN traceparent text,
    ADD COLUMN tracestate text;
