//! Redis lock provider: `SET NX PX` with an owner token, Lua compare-and-delete release,
//! Lua all-or-nothing compare-and-pexpire renewal, and a fencing token from the same script.
//!
//! Fencing tokens are `max(last + 1, redis TIME in µs)`: strictly increasing per key, and
//! still larger than every earlier token after Redis restarts, is flushed or fails over (the
//! time floor survives where the counter does not). So fence counters expire once no lease
//! they issued can be alive (`LockSettings::fence_retention`, minutes). This relies on the
//! Redis hosts' clocks agreeing and not stepping back (`docs/decisions.md`).
//!
//! Works against one server, the master of a Sentinel set-up, or a Redis Cluster; every
//! script touches the keys of one hash slot only (`LockKeys`).
//!
//! Every call is bounded by `op_timeout`; a slow Redis is a down Redis to the caller.

mod connections;
mod lua;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use deadpool::managed::{Object, QueueMode};

use connections::broken;
pub use connections::{Conn, Connections, Pool};
use lua::{Lua, ACQUIRE, EXTEND, RELEASE};

use super::lease::give_back_until;

use super::{
    fence_key, Attempt, FencingToken, LockError, LockHandle, LockProvider, OwnerToken, Ownership,
    RedisMode, RedisSettings, Ttl,
};

#[derive(Clone)]
pub struct RedisLockProvider {
    pool: Pool,
    op_timeout: Duration,
    fence_retention: Duration,
    acquire: Arc<Lua>,
    release: Arc<Lua>,
    extend: Arc<Lua>,
}

impl RedisLockProvider {
    /// One standalone server at `url` (tests and benchmarks), with fence counters kept a
    /// minute. Does not connect.
    pub fn new(url: &str, pool_size: usize, op_timeout: Duration) -> anyhow::Result<Self> {
        let settings = RedisSettings {
            mode: RedisMode::Standalone,
            url: url.to_string().into(),
            nodes: Vec::new(),
            sentinels: Vec::new(),
            master_name: String::new(),
            password: None,
            tls: false,
            key_prefix: String::new(),
            pool_size,
            op_timeout,
        };
        Self::from_settings(&settings, Duration::from_secs(60))
    }

    /// The provider `[redis]` describes, keeping fence counters `fence_retention` after
    /// their last acquisition. Creates the pool; does not connect (Redis may be down at
    /// start-up).
    pub fn from_settings(
        settings: &RedisSettings,
        fence_retention: Duration,
    ) -> anyhow::Result<Self> {
        let manager = Connections::from_settings(settings)
            .map_err(|e| anyhow::anyhow!("invalid redis configuration: {e}"))?;
        // No timeouts of the pool's own: `run` bounds the whole call, checkout included,
        // with one timer. Last in, first out: the connection just used goes out again, so
        // at low load one warm connection serves, and the others age into a health check.
        let pool = Pool::builder(manager)
            .max_size(settings.pool_size)
            .queue_mode(QueueMode::Lifo)
            .build()
            .map_err(|e| anyhow::anyhow!("invalid redis configuration: {e}"))?;
        Ok(Self {
            pool,
            op_timeout: settings.op_timeout,
            fence_retention,
            acquire: Arc::new(Lua::new(ACQUIRE)),
            release: Arc::new(Lua::new(RELEASE)),
            extend: Arc::new(Lua::new(EXTEND)),
        })
    }

    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Runs one Redis operation under the op timeout. A connection that turned out broken
    /// leaves the pool, so the next call does not meet it again.
    async fn run<T, F, Fut>(&self, f: F) -> Result<T, LockError>
    where
        F: FnOnce(Conn) -> Fut,
        Fut: std::future::Future<Output = redis::RedisResult<T>>,
    {
        self.attempt(f).await.map_err(|failed| failed.error)
    }

    /// `run`, and on failure also the connection the command went out on (if it got that
    /// far): a command that timed out may still run on the server later.
    async fn attempt<T, F, Fut>(&self, f: F) -> Result<T, Failed>
    where
        F: FnOnce(Conn) -> Fut,
        Fut: std::future::Future<Output = redis::RedisResult<T>>,
    {
        // One deadline for the whole call, checkout included.
        let deadline = tokio::time::Instant::now() + self.op_timeout;
        let timed_out =
            || LockError::Unavailable(format!("redis did not answer within {:?}", self.op_timeout));
        let unsent = |error| Failed {
            error,
            sent_on: None,
        };
        let conn = match tokio::time::timeout_at(deadline, self.pool.get()).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) => return Err(unsent(LockError::Unavailable(format!("redis pool: {e}")))),
            Err(_) => return Err(unsent(timed_out())),
        };
        let sent_on = (*conn).clone();
        let error = match tokio::time::timeout_at(deadline, f(sent_on.clone())).await {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(e)) => {
                if broken(&conn, &e) {
                    let _ = Object::take(conn);
                }
                LockError::Unavailable(format!("redis: {e}"))
            }
            Err(_) => timed_out(),
        };
        Err(Failed {
            error,
            sent_on: Some(sent_on),
        })
    }

    /// Runs a compare-and-act script on `owner`'s key as its owner (release, or extend by
    /// `ttl`): true when the key still held the owner's token.
    async fn as_owner(
        &self,
        script: &Lua,
        owner: &Ownership,
        ttl: Option<Ttl>,
    ) -> Result<bool, LockError> {
        let n: i64 = self
            .run(|mut c| async move { script.eval(&mut c, owner_args(owner, ttl)).await })
            .await?;
        Ok(n == 1)
    }

    /// Gives back the key a failed acquire (`ghost`) may still take on the server, whenever
    /// its request gets there. The compare-and-delete goes out on the connection the acquire
    /// went out on, queued behind it: Redis runs one connection's commands in the order they
    /// arrive, so it runs after the acquire script, however late. On another connection it
    /// could overtake the acquire and leave the key held by no one for a whole TTL. Only if
    /// that connection broke (then the acquire ran before it closed, or never will) does a
    /// fresh one from the pool do it. Waits at most a TTL: by then the key is gone anyway.
    ///
    /// A Cluster connection keeps no such order: the cluster client retries and redirects
    /// each command on its own (a failover under way), so the acquire may land after the
    /// clean-up. There, unless the clean-up found the key, it is repeated until the TTL
    /// has passed.
    fn give_back(&self, ghost: Ownership, sent_on: Conn, ttl: Ttl) {
        let this = self.clone();
        tokio::spawn(async move {
            let until = Instant::now() + ttl.as_duration();
            let ordered = matches!(sent_on, Conn::Node(_));
            let mut conn = sent_on;
            let release = this
                .release
                .eval::<i64>(&mut conn, owner_args(&ghost, None));
            match tokio::time::timeout(ttl.as_duration(), release).await {
                Ok(Ok(1)) => {} // the acquire had run: its key is gone
                _ if !ordered => give_back_until(&this, &ghost, until, false).await,
                Ok(Err(e)) if broken(&conn, &e) => {
                    let _ = this.release(&ghost).await;
                }
                Ok(Err(e)) => {
                    tracing::warn!(lock_key = %ghost.key, error = %e, "giving back a timed-out lock failed; it will expire by ttl")
                }
                Ok(Ok(_)) | Err(_) => {}
            }
        });
    }
}

/// A failed call, and the connection its command went out on, if it got that far.
struct Failed {
    error: LockError,
    sent_on: Option<Conn>,
}

/// The arguments of a compare-and-act script on `owner`'s key: the key, the owner's token,
/// and the new TTL (extend).
fn owner_args(owner: &Ownership, ttl: Option<Ttl>) -> impl Fn(&mut redis::Cmd) + '_ {
    move |cmd| {
        cmd.arg(1).arg(&owner.key);
        cmd.arg(owner.token.as_str());
        if let Some(ttl) = ttl {
            cmd.arg(ttl.as_millis());
        }
    }
}

#[async_trait]
impl LockProvider for RedisLockProvider {
    async fn acquire(&self, key: &str, ttl: Ttl) -> Result<Attempt, LockError> {
        let token = OwnerToken::generate();
        let started = Instant::now();
        let owner = token.as_str();
        let reply = self
            .attempt(|mut c| async move {
                let fence = fence_key(key);
                let retention = self.fence_retention.as_millis() as u64;
                self.acquire
                    .eval::<(i64, i64)>(&mut c, |cmd| {
                        cmd.arg(2).arg(key).arg(&fence).arg(owner);
                        cmd.arg(ttl.as_millis()).arg(retention);
                    })
                    .await
            })
            .await;
        let (ok, value) = match reply {
            Ok(r) => r,
            Err(Failed { error, sent_on }) => {
                // The script may still run after we stopped waiting: give the key back, by
                // owner token, so it does not block others for a whole TTL.
                if let Some(conn) = sent_on {
                    let ghost = Ownership {
                        key: key.to_string(),
                        token,
                    };
                    self.give_back(ghost, conn, ttl);
                }
                return Err(error);
            }
        };
        if ok != 1 {
            // `value` is the holder's remaining TTL in ms, when the key has one.
            let holder_ttl = (value > 0).then(|| Duration::from_millis(value as u64));
            return Ok(Attempt::Busy { holder_ttl });
        }
        Ok(Attempt::Held(LockHandle {
            ownership: Ownership {
                key: key.to_string(),
                token,
            },
            // Counted from before the call: the lock may have started any time after that.
            expires_at: started + ttl.as_duration(),
            fencing_token: FencingToken::new(value),
        }))
    }

    async fn release(&self, owner: &Ownership) -> Result<bool, LockError> {
        self.as_owner(&self.release, owner, None).await
    }

    async fn extend(&self, owner: &Ownership, ttl: Ttl) -> Result<bool, LockError> {
        self.as_owner(&self.extend, owner, Some(ttl)).await
    }

    async fn locked(&self, key: &str) -> Result<bool, LockError> {
        let n: i64 = self
            .run(|mut c| async move { redis::cmd("EXISTS").arg(key).query_async(&mut c).await })
            .await?;
        Ok(n == 1)
    }

    /// `PING`, under the op timeout.
    async fn ping(&self) -> Result<(), LockError> {
        self.run(|mut c| async move { redis::cmd("PING").query_async::<String>(&mut c).await })
            .await
            .map(|_| ())
    }
}
