//! The lock rows: a raw `SET NX PX` + `DEL` on one key through the service's Redis pool
//! (the floor), against the lock provider's acquire (with its fencing token) and
//! compare-and-delete release on the same workload, in turns.

use std::time::Duration;

use kh_review::lock::redis::RedisLockProvider;
use kh_review::lock::{Attempt, LockProvider, Ttl};
use uuid::Uuid;

use super::{drive, interleaved, names, sized, BenchEnv, Figures, Measure, Report};

/// 1. Lock floor: raw SET NX PX + DEL, then the provider's acquire + release.
pub async fn lock_rows(report: &mut Report, env: &BenchEnv) -> anyhow::Result<f64> {
    let provider = RedisLockProvider::new(&env.redis_url, 64, Duration::from_millis(500))?;
    // The service's lock TTL (`lock.ttl_ms`), for the raw SET and the provider alike.
    let ttl = env.settings.lock.ttl;
    let mut at_one = 0.0;
    for conc in [1usize, 32] {
        let ops = if conc == 1 {
            sized(6_000, 200)
        } else {
            sized(8_000, 320)
        };
        let raw: Measure = Box::new(|| Box::pin(lock_raw(&provider, ttl, conc, ops)));
        let prov: Measure = Box::new(|| Box::pin(lock_provider(&provider, ttl, conc, ops)));
        let [raw, prov] = interleaved(vec![raw, prov])
            .await?
            .try_into()
            .expect("two rows");
        report.row("lock floor: SET NX PX + DEL", conc, &raw, None);
        report.row(
            "lock provider: acquire + release",
            conc,
            &prov,
            Some(("vs floor", prov.p50_ms / raw.p50_ms)),
        );
        if conc == 1 {
            at_one = prov.p50_ms / raw.p50_ms;
        }
    }
    Ok(at_one)
}

async fn lock_raw(
    p: &RedisLockProvider,
    ttl: Ttl,
    conc: usize,
    ops: usize,
) -> anyhow::Result<Figures> {
    let pool = p.pool().clone();
    let key = format!("{}floor:{}", names().redis_prefix, Uuid::new_v4().simple());
    drive(conc, ops, move |i| {
        let (pool, key) = (pool.clone(), key.clone());
        async move {
            let mut c = pool.get().await?;
            let token = format!("t{i}");
            let set: Option<String> = redis::cmd("SET")
                .arg(&key)
                .arg(&token)
                .arg("NX")
                .arg("PX")
                .arg(ttl.as_millis())
                .query_async(&mut *c)
                .await?;
            if set.is_some() {
                let _: i64 = redis::cmd("DEL").arg(&key).query_async(&mut *c).await?;
            }
            anyhow::Ok(true)
        }
    })
    .await
}

async fn lock_provider(
    p: &RedisLockProvider,
    ttl: Ttl,
    conc: usize,
    ops: usize,
) -> anyhow::Result<Figures> {
    let p = p.clone();
    let key = format!("{}prov:{}", names().redis_prefix, Uuid::new_v4().simple());
    drive(conc, ops, move |_| {
        let (p, key) = (p.clone(), key.clone());
        async move {
            if let Attempt::Held(h) = p.acquire(&key, ttl).await? {
                let released = p.release(&h.ownership).await?;
                anyhow::ensure!(released, "release of an acquired lock failed");
            }
            anyhow::Ok(true)
        }
    })
    .await
}
