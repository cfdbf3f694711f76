//! The MongoDB projection of a document: body, preview, status and version, read by the
//! admin UI and downstream chunkers. Re-derivable from PostgreSQL at any time.
//!
//! Writes only ever move `version` forward: a stale writer can never overwrite a newer one.
//!
//! Reads go through a circuit breaker: while MongoDB is down, a read is skipped at once (the
//! caller serves PostgreSQL's copy) instead of paying server selection on every request.
//! Writes are not gated: the outbox dispatcher has its own pause while MongoDB is down.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use mongodb::bson::{doc, Bson as Value, Document as Bson};
use mongodb::error::{ErrorKind, WriteFailure};
use mongodb::options::{
    Acknowledgment, ClientOptions, ReadPreference, SelectionCriteria, WriteConcern,
};
use mongodb::{Client, Collection};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_with::{serde_as, DurationMilliSeconds};
use uuid::Uuid;

use crate::breaker::{BreakerState, CircuitBreaker, Permit};
use crate::domain::{preview_of, Document, DocumentStatus};

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

/// What a projection write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Projected {
    Inserted,
    Updated,
    /// MongoDB already held this version or a newer one.
    Stale,
}

/// One copy of a document in the projection.
#[derive(Debug, Clone)]
pub struct ProjectedCopy {
    pub version: i64,
    pub status: String,
    pub body: String,
    pub preview: String,
}

/// The fields the API reads back: the top-level copy (the published revision while a
/// revision is in progress, else the document as it is) and the working copy beside it.
#[derive(Debug, Clone)]
pub struct ProjectedDocument {
    pub top: ProjectedCopy,
    /// The version of the document row this projection was written from.
    pub head_version: i64,
    pub published_version: Option<i64>,
    pub working: Option<ProjectedCopy>,
}

impl ProjectedDocument {
    /// The document as it is at `version` (its working copy), if this projection holds it.
    pub fn current(self, version: i64) -> Option<ProjectedCopy> {
        if self.head_version != version {
            return None;
        }
        match self.working {
            Some(w) if w.version == version => Some(w),
            _ if self.top.version == version => Some(self.top),
            _ => None,
        }
    }

    /// The published revision `version`, if this projection holds it.
    pub fn published(self, version: i64) -> Option<ProjectedCopy> {
        (self.published_version == Some(version) && self.top.version == version).then_some(self.top)
    }
}

/// The projection of `doc`: see [`MongoProjection::project`].
fn projection_fields(doc: &Document) -> Bson {
    let copy = |version: i64, title: &str, body: &str, status: &str| {
        doc! {
            "version": version,
            "title": title,
            "body": body,
            "preview": preview_of(body),
            "status": status,
        }
    };
    let working = copy(doc.version, &doc.title, &doc.body, doc.status.as_str());
    let published = match (&doc.published_title, &doc.published_body) {
        (Some(t), Some(b)) if doc.in_revision() => doc
            .published_version
            .map(|v| copy(v, t, b, DocumentStatus::Approved.as_str())),
        _ => None,
    };
    let (mut fields, working) = match published {
        Some(p) => (p, Value::Document(working)),
        None => (working, Value::Null),
    };
    fields.insert("working", working);
    fields.insert("head_version", doc.version);
    fields.insert("published_version", doc.published_version);
    fields.insert("author_id", &doc.author_id);
    fields.insert(
        "current_review_id",
        doc.current_review_id.map(|r| r.to_string()),
    );
    fields.insert("updated_at", doc.updated_at.to_rfc3339());
    fields
}

/// Why a read of the projection gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// MongoDB failed recently: the read breaker is open and the read was not tried.
    #[error("mongodb circuit breaker open: read skipped")]
    Skipped,
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

/// The read breaker of a projection built without settings for it.
const DEFAULT_BREAKER: (u32, Duration) = (1, Duration::from_secs(2));

#[derive(Clone)]
pub struct MongoProjection {
    client: Client,
    coll: Collection<Bson>,
    timeout: Duration,
    /// Shared by the clones: one view of MongoDB's health per process.
    breaker: Arc<CircuitBreaker>,
}

impl MongoProjection {
    /// Parses the URL and builds the client, with majority writes and primary reads; does
    /// not connect (MongoDB may be down).
    pub async fn new(
        url: &str,
        database: &str,
        collection: &str,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        Self::with_concerns(
            url,
            database,
            collection,
            timeout,
            Acknowledgment::Majority,
            ReadPreference::Primary,
        )
        .await
    }

    /// Like `new`, with the given write concern and read preference. A replica set is
    /// named in the URL (`mongodb://a,b,c/?replicaSet=rs0`); the driver follows elections.
    pub async fn with_concerns(
        url: &str,
        database: &str,
        collection: &str,
        timeout: Duration,
        w: Acknowledgment,
        read: ReadPreference,
    ) -> anyhow::Result<Self> {
        let mut opts = ClientOptions::parse(url)
            .await
            .context("invalid mongo url")?;
        opts.server_selection_timeout = Some(timeout);
        opts.connect_timeout = Some(timeout);
        opts.app_name = Some("kh-review".into());
        // A projection write waits for its acknowledgment at most an operation's bound.
        opts.write_concern = Some(WriteConcern::builder().w(w).w_timeout(timeout * 3).build());
        opts.selection_criteria = Some(SelectionCriteria::ReadPreference(read));
        let client = Client::with_options(opts).context("could not build the mongo client")?;
        let coll = client.database(database).collection(collection);
        let (threshold, open_for) = DEFAULT_BREAKER;
        Ok(Self {
            client,
            coll,
            timeout,
            breaker: Arc::new(CircuitBreaker::new(threshold, open_for)),
        })
    }

    /// This projection with a read breaker that opens after `threshold` consecutive failed
    /// reads and stays open for `open_for`.
    pub fn with_breaker(self, threshold: u32, open_for: Duration) -> Self {
        Self {
            breaker: Arc::new(CircuitBreaker::new(threshold, open_for)),
            ..self
        }
    }

    /// The projection `[mongo]` describes; does not connect.
    pub async fn from_settings(settings: &MongoSettings) -> anyhow::Result<Self> {
        let invalid = |key: &str, e: &str| anyhow::anyhow!("{key}: {e}");
        Self::with_concerns(
            settings.url.expose_secret(),
            &settings.database,
            &settings.collection,
            settings.timeout,
            settings
                .acknowledgment()
                .map_err(|e| invalid("mongo.write_concern", e))?,
            settings
                .read_preference()
                .map_err(|e| invalid("mongo.read_preference", e))?,
        )
        .await
        .map(|p| p.with_breaker(settings.breaker_failure_threshold, settings.breaker_open))
    }

    /// The read breaker's state, for `/readyz`.
    pub fn breaker_state(&self) -> BreakerState {
        self.breaker.state()
    }

    fn bound(&self) -> Duration {
        self.timeout * 3
    }

    /// Writes `doc` unless MongoDB already holds its version or a newer one. While a
    /// revision is in progress the top-level fields stay the published revision and the
    /// working copy goes to `working`; `head_version` is the document's own version, the
    /// write guard (projections written before revisions existed have none: their
    /// `version` is it).
    #[tracing::instrument(name = "mongo.project", level = "debug", skip_all, fields(document_id = %doc.id, version = doc.version))]
    pub async fn project(&self, doc: &Document) -> anyhow::Result<Projected> {
        let id = doc.id.to_string();
        let fields = projection_fields(doc);
        let older = doc! { "$or": [
            { "head_version": { "$lt": doc.version } },
            { "head_version": { "$exists": false }, "version": { "$lt": doc.version } },
        ] };
        let same_or_newer = doc! { "$or": [
            { "head_version": { "$gte": doc.version } },
            { "head_version": { "$exists": false }, "version": { "$gte": doc.version } },
        ] };
        // Update only if the stored version is older, in one atomic write (an `_id` index
        // lookup); insert when the document is absent. Every document is projected at
        // creation, so later versions take one round trip.
        let work = async {
            for _ in 0..3 {
                let mut filter = older.clone();
                filter.insert("_id", &id);
                let r = self
                    .coll
                    .update_one(filter, doc! { "$set": fields.clone() })
                    .await
                    .context("mongo update")?;
                if r.matched_count == 1 {
                    return Ok(Projected::Updated);
                }
                let mut full = fields.clone();
                full.insert("_id", &id);
                match self.coll.insert_one(full).await {
                    Ok(_) => return Ok(Projected::Inserted),
                    Err(e) if is_duplicate_key(&e) => {}
                    Err(e) => return Err(anyhow::Error::new(e).context("mongo insert")),
                }
                // Present: stale, unless it was written between the two calls with an older
                // version (then the update goes round again).
                let mut filter = same_or_newer.clone();
                filter.insert("_id", &id);
                let present = self
                    .coll
                    .find_one(filter)
                    .projection(doc! { "version": 1 })
                    .await
                    .context("mongo read")?;
                if present.is_some() {
                    return Ok(Projected::Stale);
                }
            }
            Err(anyhow::anyhow!(
                "mongo projection kept racing with another writer"
            ))
        };
        tokio::time::timeout(self.bound(), work)
            .await
            .map_err(|_| anyhow::anyhow!("mongo did not answer within {:?}", self.bound()))?
    }

    /// The projected document, unless the read breaker is open (then MongoDB is not asked:
    /// [`ReadError::Skipped`]). Each read's outcome feeds the breaker.
    pub async fn get(&self, id: Uuid) -> Result<Option<ProjectedDocument>, ReadError> {
        if self.breaker.permit() == Permit::Rejected {
            return Err(ReadError::Skipped);
        }
        let work = self.coll.find_one(doc! { "_id": id.to_string() });
        let found = tokio::time::timeout(self.bound(), work)
            .await
            .map_err(|_| anyhow::anyhow!("mongo did not answer in time"))
            .and_then(|r| r.context("mongo find"));
        let found = match found {
            Ok(found) => {
                self.breaker.on_success();
                found
            }
            Err(e) => {
                if self.breaker.on_failure() {
                    tracing::warn!(error = %e, "mongodb circuit breaker opened: bodies are served from postgresql");
                }
                return Err(e.into());
            }
        };
        Ok(found.map(|d| {
            let copy = |d: &Bson| ProjectedCopy {
                version: d.get_i64("version").unwrap_or(0),
                status: d.get_str("status").unwrap_or_default().to_string(),
                body: d.get_str("body").unwrap_or_default().to_string(),
                preview: d.get_str("preview").unwrap_or_default().to_string(),
            };
            let top = copy(&d);
            ProjectedDocument {
                head_version: d.get_i64("head_version").unwrap_or(top.version),
                published_version: d.get_i64("published_version").ok(),
                working: d.get_document("working").ok().map(copy),
                top,
            }
        }))
    }

    pub async fn ping(&self) -> anyhow::Result<()> {
        let admin = self.client.database("admin");
        let work = admin.run_command(doc! { "ping": 1 });
        tokio::time::timeout(self.bound(), work)
            .await
            .map_err(|_| anyhow::anyhow!("mongo did not answer in time"))?
            .context("mongo ping")?;
        Ok(())
    }
}

fn is_duplicate_key(e: &mongodb::error::Error) -> bool {
    match e.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(w)) => w.code == 11000,
        ErrorKind::Command(c) => c.code == 11000,
        _ => false,
    }
}
