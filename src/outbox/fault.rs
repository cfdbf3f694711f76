//! How a delivery fails: in which phase, and whether a dependency was down or the row
//! itself was refused (which decides what becomes of the row).

/// A phase of a delivery: the projection, then the publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Projection,
    Publish,
}

/// Why a delivery failed, which decides what becomes of the row.
#[derive(Debug)]
pub(super) enum Fault {
    /// MongoDB or RabbitMQ is unreachable or too slow. Nothing about the row: it goes back
    /// as it was (its error noted), and that dependency's pass pauses.
    Down(Phase, String),
    /// The row itself was refused (unroutable, nacked, its document missing): it is retried
    /// with a backoff of its own.
    Refused(Phase, String),
}

impl Fault {
    pub(super) fn phase(&self) -> Phase {
        match self {
            Fault::Down(phase, _) | Fault::Refused(phase, _) => *phase,
        }
    }

    pub(super) fn is_down(&self) -> bool {
        matches!(self, Fault::Down(..))
    }

    pub(super) fn describe(&self) -> String {
        let (Fault::Down(phase, e) | Fault::Refused(phase, e)) = self;
        match phase {
            Phase::Projection => format!("projection: {e}"),
            Phase::Publish => format!("publish: {e}"),
        }
    }
}
