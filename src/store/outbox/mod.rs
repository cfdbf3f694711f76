//! The transactional outbox's rows: what the dispatchers take and mark (`delivery`), what admins
//! do with parked rows (`admin`), the events published per minute (`figures`) and the trace
//! context a row keeps (`trace_context`).

pub(super) mod admin;
pub(super) mod delivery;
pub(super) mod figures;
pub(super) mod trace_context;
