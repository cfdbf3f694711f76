//! `[mongo]`: where the projection lives and how its writes are acknowledged.

use std::time::Duration;

use mongodb::options::{Acknowledgment, ReadPreference};
use secrecy::SecretString;
use serde::Deserialize;
use serde_with::{serde_as, DurationMilliSeconds};

/// `[mongo]` in `config/default.toml`.
#[serde_as]
#[derive(Debug, Clone, Deserialize)]
pub struct MongoSettings {
    pub url: SecretString,
    pub database: String,
    pub collection: String,
    /// Server selection and connect timeout; a whole operation is bounded by three times it.
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "timeout_ms")]
    pub timeout: Duration,
    /// `majority`, or how many nodes must acknowledge a projection write (at least 1).
    pub write_concern: String,
    /// Where reads of the body go: `primary`, `primaryPreferred`, `secondary`,
    /// `secondaryPreferred` or `nearest`.
    pub read_preference: String,
    /// Consecutive failed reads that open the read breaker.
    pub breaker_failure_threshold: u32,
    /// How long the read breaker stays open before one read probes MongoDB again.
    #[serde_as(as = "DurationMilliSeconds<u64>")]
    #[serde(rename = "breaker_open_ms")]
    pub breaker_open: Duration,
    /// Projection updates that arrive while two are on their way go out together in the next
    /// `update` command (false: each in its own).
    pub group_writes: bool,
}

impl MongoSettings {
    /// The write concern `mongo.write_concern` names.
    pub fn acknowledgment(&self) -> Result<Acknowledgment, &'static str> {
        match self.write_concern.trim() {
            "majority" => Ok(Acknowledgment::Majority),
            n => match n.parse::<u32>() {
                Ok(0) => Err("must acknowledge: 0 (unacknowledged writes) is refused"),
                Ok(n) => Ok(Acknowledgment::Nodes(n)),
                Err(_) => Err("must be \"majority\" or a number of nodes (at least 1)"),
            },
        }
    }

    /// The read preference `mongo.read_preference` names.
    pub fn read_preference(&self) -> Result<ReadPreference, &'static str> {
        Ok(match self.read_preference.trim() {
            "primary" => ReadPreference::Primary,
            "primaryPreferred" => ReadPreference::PrimaryPreferred { options: None },
            "secondary" => ReadPreference::Secondary { options: None },
            "secondaryPreferred" => ReadPreference::SecondaryPreferred { options: None },
            "nearest" => ReadPreference::Nearest { options: None },
            _ => return Err(
                "must be one of primary, primaryPreferred, secondary, secondaryPreferred, nearest",
            ),
        })
    }
}
