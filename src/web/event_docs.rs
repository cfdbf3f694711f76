//! The bodies of `/asyncapi.json` and `/schemas/events/{type}.json` (`events.rs`), made
//! once at start-up from the one source of the event schemas (`outbox::schemas`) and the
//! settings.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::outbox::{asyncapi, schemas, EventSettings};

/// The documents the two routes answer with, serialised once.
#[derive(Clone)]
pub struct EventDocs {
    asyncapi: Arc<Vec<u8>>,
    schemas: Arc<HashMap<String, Vec<u8>>>,
}

impl EventDocs {
    /// The documents for the exchange `exchange` (`amqp.exchange`) and `events`.
    pub fn new(exchange: &str, events: &EventSettings) -> Self {
        let doc = asyncapi::document(exchange, events);
        let schemas = schemas::event_types()
            .into_iter()
            .filter_map(|ty| {
                let schema = schemas::served_schema(ty, &events.schema_url(ty))?;
                Some((ty.to_string(), to_bytes(&schema)))
            })
            .collect();
        Self {
            asyncapi: Arc::new(to_bytes(&doc)),
            schemas: Arc::new(schemas),
        }
    }

    /// `/asyncapi.json`'s body.
    pub fn asyncapi(&self) -> &[u8] {
        &self.asyncapi
    }

    /// The body of `/schemas/events/{event_type}.json`; None for a type without a schema.
    pub fn schema(&self, event_type: &str) -> Option<&[u8]> {
        self.schemas.get(event_type).map(Vec::as_slice)
    }
}

fn to_bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec_pretty(v).expect("a JSON value serialises")
}
