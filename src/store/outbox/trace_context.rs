//! The W3C trace context an outbox row keeps (columns `traceparent`, `tracestate`): taken
//! from the span current when the row is written, and turned back into the parent of the
//! span that publishes it, whoever does that and however much later. Only well-formed
//! values are ever stored or used; anything else counts as no context at all (a new trace
//! starts), never as an error.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry::Context;
use opentelemetry_sdk::propagation::TraceContextPropagator;

/// The header (and column) names of W3C Trace Context.
pub const TRACEPARENT: &str = "traceparent";
pub const TRACESTATE: &str = "tracestate";

/// A valid trace context as text: `traceparent` and, when not empty, `tracestate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    pub traceparent: String,
    pub tracestate: Option<String>,
}

impl TraceContext {
    /// The context of the span current now (the innermost entered span, or the one the
    /// HTTP layer made current), or None outside any valid span.
    pub fn current() -> Option<Self> {
        Self::of(&Context::current())
    }

    /// The text form of `cx`'s span context, or None when it has none that is valid.
    pub fn of(cx: &Context) -> Option<Self> {
        if !cx.span().span_context().is_valid() {
            return None;
        }
        let mut fields = HashMap::new();
        TraceContextPropagator::new().inject_context(cx, &mut fields);
        let traceparent = fields.remove(TRACEPARENT)?;
        let tracestate = fields.remove(TRACESTATE).filter(|s| !s.is_empty());
        Some(Self {
            traceparent,
            tracestate,
        })
    }

    /// Parses stored or received text; None when `traceparent` is malformed (wrong
    /// version, length or case, an all-zero id). A malformed `tracestate` is dropped,
    /// keeping the `traceparent`, as the W3C specification says.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        if !well_formed(traceparent) {
            return None;
        }
        Self::of(&remote_context(traceparent, tracestate))
    }

    /// The values of the columns `traceparent` and `tracestate` for `context`.
    pub fn columns(context: Option<&Self>) -> (Option<&str>, Option<&str>) {
        let state = context.and_then(|t| t.tracestate.as_deref());
        (context.map(|t| t.traceparent.as_str()), state)
    }

    /// The remote parent this context names, for a span to continue it.
    pub fn parent(&self) -> Context {
        remote_context(&self.traceparent, self.tracestate.as_deref())
    }

    /// The trace id, 32 lowercase hex digits.
    pub fn trace_id(&self) -> &str {
        self.traceparent.get(3..35).unwrap_or_default()
    }

    /// The parent span id, 16 lowercase hex digits.
    pub fn span_id(&self) -> &str {
        self.traceparent.get(36..52).unwrap_or_default()
    }
}

/// The W3C shape the propagator does not check itself: fields of 2, 32, 16 and 2
/// lowercase hex digits (a version 00 value has exactly these four).
fn well_formed(traceparent: &str) -> bool {
    let fields: Vec<&str> = traceparent.split('-').collect();
    let hex = |f: &str| {
        f.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    fields.len() >= 4
        && (fields[0] != "00" || fields.len() == 4)
        && fields
            .iter()
            .zip([2, 32, 16, 2])
            .all(|(f, n)| f.len() == n && hex(f))
}

/// A context whose span is the remote one `traceparent` names (an empty context when it is
/// malformed): the W3C propagator's own validation.
fn remote_context(traceparent: &str, tracestate: Option<&str>) -> Context {
    let mut fields = HashMap::new();
    fields.insert(TRACEPARENT.to_string(), traceparent.to_string());
    if let Some(state) = tracestate {
        fields.insert(TRACESTATE.to_string(), state.to_string());
    }
    TraceContextPropagator::new().extract_with_context(&Context::new(), &fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_round_trips_with_its_parts() {
        let tc = TraceContext::parse(GOOD, Some("vendor=abc,other=1")).unwrap();
        assert_eq!(tc.traceparent, GOOD);
        assert_eq!(tc.tracestate.as_deref(), Some("vendor=abc,other=1"));
        assert_eq!(tc.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(tc.span_id(), "00f067aa0ba902b7");
        assert_eq!(TraceContext::of(&tc.parent()), Some(tc));
    }

    #[test]
    fn an_unsampled_context_keeps_its_flags() {
        let unsampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
        let tc = TraceContext::parse(unsampled, None).unwrap();
        assert_eq!(tc.traceparent, unsampled);
        assert_eq!(tc.tracestate, None);
    }

    #[test]
    fn malformed_traceparents_are_no_context() {
        let bad = [
            "",
            "garbage",
            // version ff is forbidden; an unknown version must still be 55 chars here
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            // all-zero trace id, all-zero span id
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            // upper case, short ids, missing flags, extra field under version 00
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            // not hex
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
        ];
        for tp in bad {
            assert_eq!(TraceContext::parse(tp, None), None, "{tp:?} was accepted");
        }
    }

    #[test]
    fn a_malformed_tracestate_is_dropped_and_the_traceparent_kept() {
        let tc = TraceContext::parse(GOOD, Some("not a list member")).unwrap();
        assert_eq!(tc.traceparent, GOOD);
        assert_eq!(tc.tracestate, None);
    }

    #[test]
    fn outside_any_span_there_is_no_current_context() {
        assert_eq!(TraceContext::current(), None);
    }
}
