//! What admins do with replays: ask for one (its target queue must be one of
//! `replay.allowed_target_queues` and exist; one running replay per queue), read one, list the recent ones, cancel one. The runner
//! (`outbox::replay`) sends them; asking here wakes this instance's runner.

use std::sync::Arc;

use serde_json::Value;
use uuid::Uuid;

use super::commit::commit;
use super::error::Error;
use crate::domain::replay::{ReplayRequest, ReplayState};
use crate::domain::UserId;
use crate::outbox::replay::ReplayRunner;
use crate::store::{HeldKey, PgStore, ReplayRecord, StoreError, StoreFailure};
use crate::usecases::idempotency::Recordable;

/// Why a replay was not started or changed; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("no replay {0}")]
    NotFound(Uuid),
    /// Another replay to this queue is running (on any instance).
    #[error("a replay to the queue {0:?} is running; cancel it or wait until it ends")]
    Running(String),
    #[error("the target queue {0:?} does not exist on the broker")]
    NoSuchQueue(String),
    /// The queue is not one `replay.allowed_target_queues` allows (whether it exists is
    /// not asked).
    #[error(
        "the target queue {0:?} is not one replays may send to (replay.allowed_target_queues)"
    )]
    TargetNotAllowed(String),
    /// Only a running replay can be cancelled; its state is given.
    #[error("replay {0} is {1}, not running")]
    Finished(Uuid, &'static str),
    #[error("the idempotency key was taken over by a retry")]
    KeyTakenOver,
    /// RabbitMQ did not answer whether the queue exists.
    #[error("rabbitmq: {0:#}")]
    Broker(anyhow::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl StoreFailure for ReplayError {
    fn read_only(&self) -> bool {
        matches!(self, ReplayError::Store(e) if e.read_only())
    }
}

impl From<Error> for ReplayError {
    fn from(e: Error) -> Self {
        match e {
            Error::KeyTakenOver => ReplayError::KeyTakenOver,
            Error::Store(s) => ReplayError::Store(s),
            other => ReplayError::Store(StoreError::Unexpected(anyhow::anyhow!(
                "a replay's commit: {other}"
            ))),
        }
    }
}

/// A replay asked for: the reply shows it as it was written.
impl Recordable for ReplayRecord {
    fn to_record(&self) -> Value {
        serde_json::to_value(self).expect("a replay serializes")
    }
    fn from_record(record: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(record)
    }
}

pub struct ReplayService {
    store: PgStore,
    runner: Arc<ReplayRunner>,
}

impl ReplayService {
    pub fn new(store: PgStore, runner: Arc<ReplayRunner>) -> Self {
        Self { store, runner }
    }

    /// Starts a replay of `req` for `admin`, once its target queue is known to be allowed and
    /// to exist; with `held`, it is recorded under that idempotency key in the same
    /// transaction.
    pub async fn start(
        &self,
        req: ReplayRequest,
        admin: &UserId,
        request_id: &str,
        held: Option<&HeldKey>,
    ) -> Result<ReplayRecord, ReplayError> {
        let queue = req.target_queue.clone();
        if !self.runner.allows_target(&queue) {
            return Err(ReplayError::TargetNotAllowed(queue));
        }
        let exists = self.runner.channel().queue_exists(&queue).await;
        if !exists.map_err(ReplayError::Broker)? {
            return Err(ReplayError::NoSuchQueue(queue));
        }
        let store = &self.store;
        let id = Uuid::now_v7();
        let started = store
            .bounded(async {
                match store
                    .write_replay(id, &req, admin.as_str(), request_id)
                    .await?
                {
                    Some(uncommitted) => {
                        Ok::<_, ReplayError>(Some(commit(uncommitted, None, held).await?))
                    }
                    None => Ok(None),
                }
            })
            .await?;
        let Some(started) = started else {
            return Err(ReplayError::Running(queue));
        };
        let replay = started.value;
        tracing::warn!(replay_id = %replay.id, mode = replay.mode.as_str(), queue = %replay.target_queue, total = replay.total, admin = admin.as_str(), "replay asked for");
        self.runner.wake();
        Ok(replay)
    }

    pub async fn get(&self, id: Uuid) -> Result<ReplayRecord, ReplayError> {
        self.store
            .replay(id)
            .await?
            .ok_or(ReplayError::NotFound(id))
    }

    /// The running replays and the `limit` most recent others.
    pub async fn recent(&self, limit: i64) -> Result<Vec<ReplayRecord>, ReplayError> {
        Ok(self.store.recent_replays(limit).await?)
    }

    /// Cancels a running replay; one already cancelled is answered as it is.
    pub async fn cancel(&self, id: Uuid, admin: &UserId) -> Result<ReplayRecord, ReplayError> {
        let replay = self
            .store
            .cancel_replay(id)
            .await?
            .ok_or(ReplayError::NotFound(id))?;
        match replay.state {
            ReplayState::Cancelled => {
                tracing::warn!(replay_id = %id, admin = admin.as_str(), sent = replay.sent, "replay cancelled");
                Ok(replay)
            }
            other => Err(ReplayError::Finished(id, other.as_str())),
        }
    }
}
