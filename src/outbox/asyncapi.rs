//! The AsyncAPI 3.0 description of what the service publishes, served at `/asyncapi.json`:
//! the topic exchange, a channel per routing key, the operations (the service sends), each
//! message's headers (the CloudEvents `ce-` headers, the trace context, a replay's id) and
//! payload (from [`super::schemas`], the one source of the schemas), and the replay path
//! (the default exchange, to one target queue). Built from the settings that shape what is
//! sent (the exchange's name, `events.source`, `events.public_base_url`), never from the
//! broker's address or credentials.

use serde_json::{json, Map, Value};

use super::envelope::{EventSettings, SPACE_HEADER, SPEC_VERSION};
use super::schemas;

/// What a space key looks like (`domain::SpaceKey`).
const SPACE_KEY_PATTERN: &str = "^[a-z0-9][a-z0-9-]{0,62}$";

/// The AMQP bindings' version this document follows.
const AMQP_BINDING: &str = "0.3.0";

/// The AsyncAPI key of `event_type` (channel, message and operation ids allow no dots).
pub fn message_id(event_type: &str) -> String {
    event_type.replace('.', "_")
}

/// The whole document, for the exchange named `exchange_name` (`amqp.exchange`).
pub fn document(exchange_name: &str, events: &EventSettings) -> Value {
    let types = schemas::event_types();
    let live: Vec<&str> = types
        .iter()
        .copied()
        .filter(|t| *t != "document.snapshot")
        .collect();
    let mut channels = Map::new();
    let mut operations = Map::new();
    let mut messages = Map::new();
    for ty in &types {
        messages.insert(message_id(ty), message(ty, events));
    }
    for ty in &live {
        let id = message_id(ty);
        channels.insert(id.clone(), routing_key_channel(ty, exchange_name));
        operations.insert(
            format!("send_{id}"),
            json!({
                "action": "send",
                "title": format!("Publish {ty}"),
                "summary": schemas::summary(ty),
                "channel": {"$ref": format!("#/channels/{id}")},
                "messages": [{"$ref": format!("#/channels/{id}/messages/{id}")}],
                "bindings": {"amqp": publish_binding()}
            }),
        );
    }
    let replayed: Vec<&str> = types
        .iter()
        .copied()
        .filter(|t| !schemas::is_service_event(t))
        .collect();
    channels.insert("replay".into(), replay_channel(&replayed));
    operations.insert(
        "send_replay".into(),
        json!({
            "action": "send",
            "title": "Replay to one queue",
            "summary": "A replay (POST /api/v1/admin/replays) re-sends stored events (history) or one document.snapshot per published document (snapshot) to its target queue only, through the default exchange, each with a kh-replay-id header.",
            "channel": {"$ref": "#/channels/replay"},
            "messages": replayed.iter().map(|t| json!({"$ref": format!("#/channels/replay/messages/{}", message_id(t))})).collect::<Vec<_>>(),
            "bindings": {"amqp": publish_binding()}
        }),
    );
    json!({
        "asyncapi": "3.0.0",
        "info": {
            "title": "kh-review events",
            "version": env!("CARGO_PKG_VERSION"),
            "description": format!(
                "The events of the document-review service, published to the durable topic exchange `{}` with the event type as routing key. Every message is a CloudEvent {SPEC_VERSION} in binary content mode: the JSON body is the event, its attributes are `ce-` headers (long strings), with the extension attribute `khspace` (header `ce-khspace`: the key of the document's space, as the body's `space`), and `datacontenttype` is the `content_type` property. Delivery is at least once: deduplicate by `event_id` (`ce-id`); dispatch on `event_type` (`ce-type`), never on the routing key; ignore types you do not know.",
                exchange_name
            ),
        },
        "defaultContentType": "application/json",
        "channels": channels,
        "operations": operations,
        "components": {"messages": messages},
    })
}

/// The exchange, as the service declares it.
fn exchange(name: &str) -> Value {
    json!({"name": name, "type": "topic", "durable": true, "autoDelete": false, "vhost": "/"})
}

fn publish_binding() -> Value {
    json!({"deliveryMode": 2, "mandatory": true, "bindingVersion": AMQP_BINDING})
}

fn routing_key_channel(ty: &str, exchange_name: &str) -> Value {
    let id = message_id(ty);
    json!({
        "address": ty,
        "title": ty,
        "description": format!("Routing key `{ty}` of exchange `{exchange_name}`. Bind a durable queue of your own to it."),
        "messages": {id.clone(): {"$ref": format!("#/components/messages/{id}")}},
        "bindings": {"amqp": {"is": "routingKey", "exchange": exchange(exchange_name), "bindingVersion": AMQP_BINDING}}
    })
}

fn replay_channel(types: &[&str]) -> Value {
    let messages: Map<String, Value> = types
        .iter()
        .map(|t| {
            let id = message_id(t);
            let reference = json!({"$ref": format!("#/components/messages/{id}")});
            (id, reference)
        })
        .collect();
    json!({
        "address": "{target_queue}",
        "title": "A replay's target queue",
        "description": "The default exchange (\"\"), routing key = the replay's target queue: a replay reaches that queue alone, never the topic exchange's other consumers. A consumer processes a message carrying kh-replay-id even if it has seen its event_id, and keeps the highest document_version.",
        "parameters": {"target_queue": {"description": "The `target_queue` the replay was started with."}},
        "messages": messages,
        "bindings": {"amqp": {
            "is": "queue",
            "queue": {"name": "{target_queue}", "durable": true, "exclusive": false, "autoDelete": false, "vhost": "/"},
            "bindingVersion": AMQP_BINDING
        }}
    })
}

fn message(ty: &str, events: &EventSettings) -> Value {
    json!({
        "name": ty,
        "title": ty,
        "summary": schemas::summary(ty),
        "contentType": "application/json",
        "headers": headers_schema(ty, events),
        "payload": schemas::payload_schema(ty),
        "bindings": {"amqp": {"messageType": ty, "bindingVersion": AMQP_BINDING}}
    })
}

/// The headers of a message of `ty`: every `ce-` header (but `ce-subject` and
/// `ce-khspace` for the service's own events, which are about no document), and the
/// optional trace context and replay id. Nothing else is sent; a consumer may also find
/// the broker's own `x-` headers.
fn headers_schema(ty: &str, events: &EventSettings) -> Value {
    let mut schema = document_headers_schema(ty, events);
    if schemas::is_service_event(ty) {
        let about_a_document = ["ce-subject", SPACE_HEADER];
        if let Some(props) = schema["properties"].as_object_mut() {
            for h in about_a_document {
                props.remove(h);
            }
        }
        schema["required"] = json!(super::envelope::CE_HEADERS
            .iter()
            .filter(|h| !about_a_document.contains(h))
            .collect::<Vec<_>>());
    }
    schema
}

fn document_headers_schema(ty: &str, events: &EventSettings) -> Value {
    let long_string = |description: &str| json!({"type": "string", "description": description});
    json!({
        "type": "object",
        "required": super::envelope::CE_HEADERS,
        "additionalProperties": false,
        "properties": {
            "ce-specversion": {"const": SPEC_VERSION, "description": "CloudEvents specversion"},
            "ce-id": {"type": "string", "format": "uuid", "description": "CloudEvents id: the event_id (also the message_id property)"},
            "ce-source": {"const": events.source, "description": "CloudEvents source (setting events.source)"},
            "ce-type": {"const": ty, "description": "CloudEvents type: the event_type"},
            "ce-subject": {"type": "string", "format": "uuid", "description": "CloudEvents subject: the document_id"},
            "ce-time": {"type": "string", "format": "date-time", "description": "CloudEvents time: the occurred_at, RFC 3339 UTC"},
            "ce-dataschema": {"const": events.schema_url(ty), "description": "CloudEvents dataschema: this type's JSON Schema, served by the service"},
            SPACE_HEADER: {"type": "string", "pattern": SPACE_KEY_PATTERN, "description": "CloudEvents extension attribute khspace: the key of the document's space (knowledge base), the body's space"},
            "traceparent": {
                "type": "string",
                "pattern": "^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$",
                "description": "W3C trace context of the request that caused the event, captured with its outbox row"
            },
            "tracestate": long_string("W3C tracestate, beside traceparent"),
            "kh-replay-id": long_string("Only on a replayed message: the replay's id")
        },
        "patternProperties": {
            "^x-": {"description": "Headers the broker adds on delivery (x-delivery-count from a quorum queue, x-death after dead-lettering), never the service"}
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Value {
        document("x.events", &EventSettings::default())
    }

    #[test]
    fn a_channel_and_an_operation_per_routing_key_and_the_replay() {
        let d = doc();
        let channels = d["channels"].as_object().unwrap();
        // A channel per published type of the table, the two service events', and the
        // replay's.
        let keys = crate::domain::EventType::published().count() + 2;
        assert_eq!(channels.len(), keys + 1, "every routing key and the replay");
        let approved = &channels["document_approved"];
        assert_eq!(approved["address"], "document.approved");
        assert_eq!(approved["bindings"]["amqp"]["exchange"]["name"], "x.events");
        assert!(channels
            .values()
            .all(|c| c["address"] != "document.snapshot"));
        let replay = &channels["replay"]["messages"];
        assert!(replay.get("document_snapshot").is_some());
        assert!(replay.get("audit_checkpoint").is_none(), "never replayed");
        assert_eq!(d["operations"].as_object().unwrap().len(), keys + 1);
        let checkpoint = &d["components"]["messages"]["audit_checkpoint"]["headers"];
        assert!(checkpoint["properties"].get("ce-subject").is_none());
        assert!(checkpoint["properties"].get("ce-khspace").is_none());
        let approved = &d["components"]["messages"]["document_approved"]["headers"];
        assert!(approved["required"]
            .as_array()
            .unwrap()
            .contains(&json!("ce-khspace")));
        assert!(!checkpoint["required"]
            .as_array()
            .unwrap()
            .contains(&json!("ce-subject")));
        let msg = &d["components"]["messages"]["document_approved"];
        assert_eq!(
            msg["payload"]["properties"]["event_type"]["const"],
            "document.approved"
        );
        assert_eq!(
            msg["headers"]["properties"]["ce-dataschema"]["const"],
            "http://127.0.0.1:8080/schemas/events/document.approved.json"
        );
    }
}
