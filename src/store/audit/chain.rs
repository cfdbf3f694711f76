//! `[audit]`, and the key the store links audit rows with (how a write links its row is in
//! `links`; the rows linked by the migrate step, in `linking`; the check, in
//! `verify`).

use std::sync::Arc;
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_with::{serde_as, DurationSeconds};

use crate::domain::audit::format::{AdminKind, AdminKinds};
use crate::domain::audit::AuditKey;

/// The public key of `config/default.toml`: only ever accepted in development and test.
pub const DEV_AUDIT_KEY: &str = "development-only-audit-key-change-me";

/// `[audit]` in `config/default.toml`.
#[serde_as]
#[derive(Debug, Clone, Deserialize)]
pub struct AuditSettings {
    /// The HMAC key of the chain. Held by the service, never by the database.
    pub key: SecretString,
    /// false: audit rows are written unlinked (a benchmark's baseline; development and
    /// test only).
    #[serde(default = "yes")]
    pub chain: bool,
    /// How often a checkpoint of every chain is written (`checkpoint_secs`).
    #[serde_as(as = "DurationSeconds<u64>")]
    #[serde(rename = "checkpoint_secs", default = "checkpoint_every")]
    pub checkpoint_every: Duration,
    /// The MongoDB server of the checkpoints; None: `mongo.url`'s.
    #[serde(default)]
    pub checkpoint_url: Option<SecretString>,
    /// The checkpoints' collection (their chains go to `<name>_chains`), in
    /// `mongo.database`.
    #[serde(default = "checkpoint_collection")]
    pub checkpoint_collection: String,
}

fn yes() -> bool {
    true
}

fn checkpoint_every() -> Duration {
    Duration::from_secs(300)
}

fn checkpoint_collection() -> String {
    "audit_checkpoints".to_string()
}

impl Default for AuditSettings {
    fn default() -> Self {
        Self {
            key: SecretString::from(DEV_AUDIT_KEY),
            chain: true,
            checkpoint_every: checkpoint_every(),
            checkpoint_url: None,
            checkpoint_collection: checkpoint_collection(),
        }
    }
}

/// The key the store links audit rows with, whether it does, and how it reads each kind
/// of the admin chain's rows.
#[derive(Debug, Clone)]
pub struct AuditChain {
    key: Arc<AuditKey>,
    on: bool,
    kinds: Arc<AdminKinds>,
}

impl AuditChain {
    pub fn from_settings(settings: &AuditSettings) -> Self {
        Self {
            key: Arc::new(AuditKey::new(settings.key.expose_secret().as_bytes())),
            on: settings.chain,
            kinds: Arc::default(),
        }
    }

    /// The chain reading rows of `kind`'s kind as its type: what a release whose type has
    /// a field more does (the tests of the formats).
    pub fn with_kind(mut self, kind: AdminKind) -> Self {
        self.kinds = Arc::new(AdminKinds::clone(&self.kinds).with(kind));
        self
    }

    /// How the admin chain's rows are read, by kind.
    pub fn kinds(&self) -> &AdminKinds {
        &self.kinds
    }

    pub fn key(&self) -> &AuditKey {
        &self.key
    }

    /// Whether rows are linked (`audit.chain`).
    pub fn on(&self) -> bool {
        self.on
    }
}

impl Default for AuditChain {
    fn default() -> Self {
        Self::from_settings(&AuditSettings::default())
    }
}
