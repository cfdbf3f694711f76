//! Every message a test reads off a queue is checked against the AsyncAPI document the
//! service serves (`/asyncapi.json`, made by `kh_review::outbox::asyncapi::document` from
//! the app's settings; `routes::events` proves the served one is that): its body against
//! the payload schema of its type, its headers against that message's headers schema
//! (every `ce-` header, each an AMQP long string, nothing undocumented), and the
//! properties and headers against the body (`message_id` and `ce-id` the `event_id`,
//! `ce-subject` the document, `ce-time` the `occurred_at`, `ce-khspace` the `space`). The helpers that read events
//! (`TestApp::take_events` and the rest) call [`conforming`], and a passing test's
//! teardown checks what is left on its queue, so no published message goes unchecked.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use chrono::{DateTime, Utc};
use jsonschema::Validator;
use lapin::types::{AMQPValue, FieldTable};
use lapin::BasicProperties;
use serde_json::{Map, Value};

use kh_review::config::Settings;
use kh_review::outbox::asyncapi;

/// One message's schemas, compiled.
struct MessageSchemas {
    headers: Validator,
    payload: Validator,
}

/// The compiled schemas of every message of one AsyncAPI document, by event type.
pub struct Contract {
    messages: HashMap<String, MessageSchemas>,
}

fn compile(what: &str, schema: &Value) -> Validator {
    jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .unwrap_or_else(|e| panic!("the AsyncAPI schema of {what} does not compile: {e}"))
}

impl Contract {
    /// The messages of `doc` (an AsyncAPI 3 document as the service serves it).
    pub fn of(doc: &Value) -> Self {
        let messages = doc["components"]["messages"].as_object();
        let messages = messages.expect("the AsyncAPI document has components.messages");
        let messages = messages
            .values()
            .map(|m| {
                let ty = m["name"]
                    .as_str()
                    .expect("a message has a name")
                    .to_string();
                let headers = compile(&format!("{ty} headers"), &m["headers"]);
                let payload = compile(&format!("{ty} payload"), &m["payload"]);
                (ty, MessageSchemas { headers, payload })
            })
            .collect();
        Contract { messages }
    }

    /// The contract of the service run with `settings`, compiled once per distinct one.
    pub fn for_settings(settings: &Settings) -> Arc<Contract> {
        static CACHE: OnceLock<Mutex<HashMap<String, Arc<Contract>>>> = OnceLock::new();
        let doc = asyncapi::document(&settings.amqp.exchange, &settings.events);
        let key = doc.to_string();
        let cache = CACHE.get_or_init(Default::default);
        let mut cache = cache.lock().unwrap();
        let contract = cache
            .entry(key)
            .or_insert_with(|| Arc::new(Contract::of(&doc)));
        contract.clone()
    }

    /// The message's body, after checking the message (panics naming what is wrong).
    pub fn check(&self, data: &[u8], props: &BasicProperties) -> Value {
        let body: Value = serde_json::from_slice(data)
            .unwrap_or_else(|e| panic!("a message body is not JSON ({e}): {data:?}"));
        let ty = body["event_type"].as_str().unwrap_or_default();
        let schemas = self.messages.get(ty);
        let schemas = schemas.unwrap_or_else(|| panic!("no AsyncAPI message for {body}"));
        fails("payload", &schemas.payload, &body);
        let headers = headers_json(props.headers().as_ref());
        fails(&format!("{ty} headers"), &schemas.headers, &headers);
        let id = body["event_id"].as_str();
        let message_id = props.message_id().as_ref().map(|m| m.as_str());
        assert_eq!(message_id, id, "message_id is the event_id");
        let content_type = props.content_type().as_ref().map(|c| c.as_str());
        assert_eq!(content_type, Some("application/json"), "datacontenttype");
        assert_eq!(*props.delivery_mode(), Some(2), "persistent");
        assert_eq!(headers["ce-id"].as_str(), id, "ce-id is the event_id");
        assert_eq!(headers["ce-subject"], body["document_id"], "ce-subject");
        assert_eq!(
            headers["ce-khspace"], body["space"],
            "ce-khspace is the space"
        );
        assert_eq!(
            instant(&headers["ce-time"]),
            instant(&body["occurred_at"]),
            "ce-time is the occurred_at: {headers} {body}"
        );
        body
    }
}

/// Panics with every error `validator` finds in `value`.
fn fails(what: &str, validator: &Validator, value: &Value) {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what} does not match /asyncapi.json: {}\n{value}",
        errors.join("; ")
    );
}

fn instant(v: &Value) -> DateTime<Utc> {
    let text = v.as_str().unwrap_or_else(|| panic!("not a time: {v}"));
    DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|e| panic!("not RFC 3339 ({e}): {text}"))
        .with_timezone(&Utc)
}

/// The headers as a JSON object: a long string is a string; any other AMQP value is kept
/// as a description of it, which no header schema accepts.
pub fn headers_json(headers: Option<&FieldTable>) -> Value {
    let mut out = Map::new();
    for (k, v) in headers.map(|h| h.inner().iter()).into_iter().flatten() {
        let value = match v {
            AMQPValue::LongString(s) => Value::String(s.to_string()),
            other => serde_json::json!({"not a long string": format!("{other:?}")}),
        };
        out.insert(k.to_string(), value);
    }
    Value::Object(out)
}

/// Checks one message published by the service run with `settings`; returns its body.
pub fn conforming(settings: &Settings, data: &[u8], props: &BasicProperties) -> Value {
    Contract::for_settings(settings).check(data, props)
}
