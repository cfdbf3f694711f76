//! The event schemas of `docs/events.md`, read from the page: the envelope's JSON Schema and
//! each type's `data` row. The consumer tests check the events the service published
//! against them ([`as_documented`]), so the page cannot drift from the events.

use serde_json::Value;

fn page() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/events.md");
    std::fs::read_to_string(path).unwrap()
}

/// The envelope's schema: the first JSON block of the page's "Schema" section.
fn envelope() -> Value {
    let page = page();
    let from = page
        .find("## Schema")
        .expect("docs/events.md has a Schema section");
    let start = from + page[from..].find("```json\n").unwrap() + "```json\n".len();
    let end = start + page[start..].find("```").unwrap();
    serde_json::from_str(&page[start..end]).expect("the envelope's schema is JSON")
}

/// The `data` schema of `event_type`: its row of the page's table.
fn data_schema(event_type: &str) -> Value {
    let page = page();
    let row = format!("| `{event_type}` | `");
    let line = page.lines().find(|l| l.starts_with(&row));
    let line = line.unwrap_or_else(|| panic!("docs/events.md has no data row for {event_type}"));
    let json = line[row.len()..]
        .trim_end()
        .trim_end_matches('|')
        .trim_end();
    serde_json::from_str(json.trim_end_matches('`'))
        .unwrap_or_else(|e| panic!("the data schema of {event_type} is not JSON: {e}"))
}

/// Whether `v` is of the JSON Schema `type` `ty` (one name or a list of them).
fn of_type(v: &Value, ty: &Value) -> bool {
    let names: Vec<&str> = match ty {
        Value::String(s) => vec![s.as_str()],
        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
        _ => return true,
    };
    names.iter().any(|n| match *n {
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "object" => v.is_object(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        _ => false,
    })
}

/// Fails unless `value` holds every required property and only documented ones, each of
/// its type, in its `enum` and not below its `minimum`.
fn conforms(what: &str, value: &Value, schema: &Value) {
    let obj = value.as_object();
    let obj = obj.unwrap_or_else(|| panic!("{what}: not an object: {value}"));
    for key in schema["required"].as_array().unwrap() {
        let key = key.as_str().unwrap();
        assert!(obj.contains_key(key), "{what}: no {key} in {value}");
    }
    let props = schema["properties"].as_object().unwrap();
    for (k, v) in obj {
        let p = props.get(k);
        let p = p.unwrap_or_else(|| panic!("{what}: {k} is not in docs/events.md: {value}"));
        if let Some(allowed) = p["enum"].as_array() {
            assert!(allowed.contains(v), "{what}: {k} {v} is not documented");
        }
        let typed = p.get("type").is_none_or(|t| of_type(v, t));
        assert!(typed, "{what}: {k} {v} is not of type {}", p["type"]);
        let low = p["minimum"].as_i64().zip(v.as_i64());
        assert!(
            low.is_none_or(|(min, n)| n >= min),
            "{what}: {k} {v} is below its minimum"
        );
    }
}

/// Fails unless `event` matches the envelope and its type's `data` row of docs/events.md.
pub fn as_documented(event: &Value) {
    conforms("envelope", event, &envelope());
    let ty = event["event_type"].as_str().unwrap();
    conforms(ty, &event["data"], &data_schema(ty));
}

#[test]
fn every_documented_event_type_has_a_data_schema() {
    let envelope = envelope();
    let types = envelope["properties"]["event_type"]["enum"].as_array();
    for ty in types.expect("the envelope lists the event types") {
        let schema = data_schema(ty.as_str().unwrap());
        assert_eq!(schema["type"], "object", "{ty}");
        assert!(schema["required"].is_array(), "{ty}");
    }
}
