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

use super::{
    fence_key, FencingToken, LockError, LockHandle, LockProvider, OwnerToken, RedisMode,
    RedisSettings, Ttl,
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
        let work = async {
            let conn = self
                .pool
                .get()
                .await
                .map_err(|e| LockError::Unavailable(format!("redis pool: {e}")))?;
            let result = f((*conn).clone()).await;
            if let Err(e) = &result {
                if broken(&conn, e) {
                    let _ = Object::take(conn);
                }
            }
            result.map_err(|e| LockError::Unavailable(format!("redis: {e}")))
        };
        match tokio::time::timeout(self.op_timeout, work).await {
            Ok(r) => r,
            Err(_) => Err(LockError::Unavailable(format!(
                "redis did not answer within {:?}",
                self.op_timeout
            ))),
        }
    }

    /// Runs a compare-and-act script on `handle`'s key as its owner (release, or extend by
    /// `ttl`): true when the key still held the owner's token.
    async fn as_owner(
        &self,
        script: &Lua,
        handle: &LockHandle,
        ttl: Option<Ttl>,
    ) -> Result<bool, LockError> {
        let n: i64 = self
            .run(|mut c| async move {
                script
                    .eval(&mut c, |cmd| {
                        cmd.arg(1).arg(&handle.lock_key);
                        cmd.arg(handle.owner_token.as_str());
                        if let Some(ttl) = ttl {
                            cmd.arg(ttl.as_millis());
                        }
                    })
                    .await
            })
            .await?;
        Ok(n == 1)
    }
}

#[async_trait]
impl LockProvider for RedisLockProvider {
    async fn acquire(&self, key: &str, ttl: Ttl) -> Result<LockHandle, LockError> {
        let token = OwnerToken::generate();
        let started = Instant::now();
        let owner = token.as_str();
        let reply: Result<(i64, i64), LockError> = self
            .run(|mut c| async move {
                let fence = fence_key(key);
                let retention = self.fence_retention.as_millis() as u64;
                self.acquire
                    .eval(&mut c, |cmd| {
                        cmd.arg(2).arg(key).arg(&fence).arg(owner);
                        cmd.arg(ttl.as_millis()).arg(retention);
                    })
                    .await
            })
            .await;
        let (ok, value) = match reply {
            Ok(r) => r,
            Err(e) => {
                // The SET may have landed after we stopped waiting: give the key back in the
                // background, by owner token, so it does not block others for a whole TTL.
                let (this, key, token) = (self.clone(), key.to_string(), token.clone());
                tokio::spawn(async move {
                    let ghost = LockHandle {
                        acquired: true,
                        lock_key: key,
                        owner_token: token,
                        expires_at: Instant::now(),
                        fencing_token: None,
                        holder_ttl: None,
                    };
                    let _ = this.release(&ghost).await;
                });
                return Err(e);
            }
        };
        let acquired = ok == 1;
        Ok(LockHandle {
            acquired,
            lock_key: key.to_string(),
            owner_token: token,
            // Counted from before the call: the lock may have started any time after that.
            expires_at: started + ttl.as_duration(),
            fencing_token: acquired.then(|| FencingToken::new(value)),
            holder_ttl: (!acquired && value > 0).then(|| Duration::from_millis(value as u64)),
        })
    }

    async fn release(&self, handle: &LockHandle) -> Result<bool, LockError> {
        self.as_owner(&self.release, handle, None).await
    }

    async fn extend(&self, handle: &LockHandle, ttl: Ttl) -> Result<bool, LockError> {
        self.as_owner(&self.extend, handle, Some(ttl)).await
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
