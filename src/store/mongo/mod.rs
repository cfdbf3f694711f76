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
use mongodb::bson::{doc, Document as Bson};
use mongodb::error::{ErrorKind, WriteFailure};
use mongodb::options::{
    Acknowledgment, ClientOptions, CollectionOptions, ReadConcern, ReadPreference,
    SelectionCriteria, WriteConcern,
};
use mongodb::{Client, Collection};
use secrecy::ExposeSecret;
use uuid::Uuid;

use crate::breaker::{BreakerState, CircuitBreaker, Permit};
use crate::domain::Document;

mod checkpoints;
mod fields;
mod group;
mod settings;

pub use checkpoints::{CheckpointStore, Header as CheckpointHeader, Inserted};
use fields::projection_fields;
pub use fields::{ProjectedCopy, ProjectedDocument};
pub use group::GroupFigures;
use group::Groups;
pub use settings::MongoSettings;

/// What a projection write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Projected {
    Inserted,
    Updated,
    /// A majority of MongoDB already held a newer copy.
    Stale,
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
    /// The same collection read at `majority`: what a projection write that found a newer
    /// copy checks, so that a copy no majority holds (a primary that may yet roll it back)
    /// never lets an event go out.
    majority: Collection<Bson>,
    timeout: Duration,
    /// Shared by the clones: one view of MongoDB's health per process.
    breaker: Arc<CircuitBreaker>,
    /// Concurrent updates sent in one command (`mongo.group_writes`); none: each alone.
    groups: Option<Arc<Groups>>,
}

impl MongoProjection {
    /// Parses the URL and builds the client, with majority writes, primary reads and
    /// grouped updates; does not connect (MongoDB may be down).
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
        let majority = client.database(database).collection_with_options(
            collection,
            CollectionOptions::builder()
                .read_concern(ReadConcern::majority())
                .build(),
        );
        let (threshold, open_for) = DEFAULT_BREAKER;
        let groups = Groups::new(group::Target {
            db: client.database(database),
            collection: collection.to_string(),
            write_concern: coll
                .write_concern()
                .map(mongodb::bson::to_document)
                .transpose()
                .context("the write concern as a command field")?,
            bound: timeout * 3,
        });
        Ok(Self {
            client,
            coll,
            majority,
            timeout,
            breaker: Arc::new(CircuitBreaker::new(threshold, open_for)),
            groups: Some(Arc::new(groups)),
        })
    }

    /// This projection with its concurrent updates grouped into one command (`true`, the
    /// default) or each sent alone.
    pub fn grouped(self, on: bool) -> Self {
        Self {
            groups: self.groups.filter(|_| on),
            ..self
        }
    }

    /// How many grouped commands were sent and how many updates they carried (none when
    /// updates are not grouped).
    pub fn group_figures(&self) -> Option<Arc<GroupFigures>> {
        self.groups.as_ref().map(|g| g.figures())
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
        .map(|p| p.grouped(settings.group_writes))
    }

    /// The read breaker's state, for `/readyz`.
    pub fn breaker_state(&self) -> BreakerState {
        self.breaker.state()
    }

    fn bound(&self) -> Duration {
        self.timeout * 3
    }

    /// Writes `doc` unless MongoDB already holds a newer copy. While a revision is in
    /// progress the top-level fields stay the published revision and the working copy goes
    /// to `working`. The write guard is the pair (`head_version`, `head_commit`): the
    /// document's own version and the time its row was committed (`updated_at`), so a copy
    /// written from a transaction a PostgreSQL failover lost (the new primary issues the
    /// same version again, later, with another body) is replaced, never kept. The same copy
    /// again is written again: it waits for the write concern once more, so a write that
    /// never reached a majority is not taken for done. Projections written before
    /// revisions (no `head_version`: their `version` is it) or before `head_commit` are
    /// replaced at the same version.
    #[tracing::instrument(name = "mongo.project", level = "debug", skip_all, fields(document_id = %doc.id, version = doc.version))]
    pub async fn project(&self, doc: &Document) -> anyhow::Result<Projected> {
        let id = doc.id.to_string();
        let fields = projection_fields(doc);
        let (v, at) = (doc.version, doc.updated_at.timestamp_micros());
        let not_newer = doc! { "_id": &id, "$or": [
            { "head_version": { "$lt": v } },
            { "head_version": v, "head_commit": { "$lte": at } },
            { "head_version": v, "head_commit": { "$exists": false } },
            { "head_version": { "$exists": false }, "version": { "$lte": v } },
        ] };
        let newer = doc! { "_id": &id, "$or": [
            { "head_version": { "$gt": v } },
            { "head_version": v, "head_commit": { "$gt": at } },
            { "head_version": { "$exists": false }, "version": { "$gt": v } },
        ] };
        // Update unless the stored copy is newer, in one atomic write (an `_id` index
        // lookup); insert when the document is absent. First with the concurrent updates of
        // other documents in one command (`group`), then, unless every update of that
        // command matched, alone. Every document is projected at creation, so later
        // versions take one round trip.
        let work = async {
            if let Some(groups) = &self.groups {
                if groups.update(not_newer.clone(), fields.clone()).await {
                    return Ok(Projected::Updated);
                }
            }
            for _ in 0..3 {
                let r = self
                    .coll
                    .update_one(not_newer.clone(), doc! { "$set": fields.clone() })
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
                // Present: stale if a majority holds a newer copy; else it was written
                // between the two calls with an older one, or the newer copy is not
                // majority-committed yet (then the update goes round again).
                let present = self
                    .majority
                    .find_one(newer.clone())
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

pub(super) fn is_duplicate_key(e: &mongodb::error::Error) -> bool {
    match e.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(w)) => w.code == 11000,
        ErrorKind::Command(c) => c.code == 11000,
        _ => false,
    }
}
