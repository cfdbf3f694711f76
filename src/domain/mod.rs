//! Domain types: validated inputs and the state machine. Nothing here does I/O.

mod inputs;
mod state;

pub use inputs::{Comment, DocumentBody, DocumentTitle, InputError, RejectReason, UserId};
pub use state::{Action, DocumentStatus, InvalidTransition, ReviewStatus};

/// How much of the body the preview keeps, in characters.
pub const PREVIEW_CHARS: usize = 280;

/// The preview shown in lists: the first [`PREVIEW_CHARS`] characters, whitespace folded.
pub fn preview_of(body: &str) -> String {
    let folded: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    folded.chars().take(PREVIEW_CHARS).collect()
}
