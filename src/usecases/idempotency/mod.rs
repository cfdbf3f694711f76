//! The idempotency of POSTs: the policy of `Idempotency-Key` (`keys`) and how each use
//! case's result is kept in a key's record (`records`).

mod keys;
mod records;

pub use keys::{
    fingerprint, Begin, Idempotency, IdempotencyKey, IdempotencySettings, Recordable, Recorded,
    SentReply, Settle,
};
