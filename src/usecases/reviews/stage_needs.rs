//! What each review's current stage needs, as this instance last saw it: the choice of a
//! vote's outer lock without a read of PostgreSQL before the lock (a round trip, and a
//! connection held while the lock is taken). Filled by every submit and vote this instance
//! runs; on a miss the vote takes the review's key, and reads the stage only when that key
//! is busy (`ReviewService::decide`), one read for the requests that ask at once. A value gone stale (another instance moved the stage
//! on) only picks the other key: the rules judge what the row lock finds, so the choice
//! decides nothing.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;
use uuid::Uuid;

use crate::domain::{Review, ReviewStatus};

/// At most this many reviews are remembered; then the memory starts again.
const CAPACITY: usize = 50_000;

/// A read of one review's stage, shared by whoever asks while it runs.
type Reading = Arc<OnceCell<Option<u8>>>;

#[derive(Debug, Default)]
pub struct StageNeeds {
    needs: Mutex<HashMap<Uuid, u8>>,
    reading: Mutex<HashMap<Uuid, Reading>>,
}

impl StageNeeds {
    /// What `review_id`'s current stage needs: remembered, or read by `read` (`None`: no
    /// such review), one read for all the callers that ask at once (64 duplicates of one
    /// click make one read, not 64).
    pub async fn get_or_read<F, Fut, E>(&self, review_id: Uuid, read: F) -> Result<Option<u8>, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Option<i32>, E>>,
    {
        if let Some(n) = self.get(review_id) {
            return Ok(Some(n));
        }
        let cell = self.lock_reading().entry(review_id).or_default().clone();
        let init = || async { Ok(read().await?.and_then(|n| u8::try_from(n).ok())) };
        let got = cell.get_or_try_init(init).await.copied();
        let mut reading = self.lock_reading();
        if reading
            .get(&review_id)
            .is_some_and(|c| Arc::ptr_eq(c, &cell))
        {
            reading.remove(&review_id);
        }
        drop(reading);
        if let Ok(Some(n)) = got {
            self.put(review_id, n);
        }
        got
    }

    fn lock_reading(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, Reading>> {
        self.reading.lock().expect("poisoned")
    }

    pub fn get(&self, review_id: Uuid) -> Option<u8> {
        self.needs
            .lock()
            .expect("poisoned")
            .get(&review_id)
            .copied()
    }

    /// Remembers what `review`'s current stage needs; forgets a decided review.
    pub fn note(&self, review: &Review) {
        let mut needs = self.needs.lock().expect("poisoned");
        if review.status != ReviewStatus::Pending {
            needs.remove(&review.id);
            return;
        }
        if let Some(stage) = review.current_stage() {
            if needs.len() >= CAPACITY {
                needs.clear();
            }
            needs.insert(review.id, stage.required_approvals);
        }
    }

    pub fn put(&self, review_id: Uuid, n: u8) {
        let mut needs = self.needs.lock().expect("poisoned");
        if needs.len() >= CAPACITY {
            needs.clear();
        }
        needs.insert(review_id, n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Stage;

    fn review(status: ReviewStatus, stage: i32) -> Review {
        let record = serde_json::json!({
            "id": Uuid::now_v7(), "document_id": Uuid::now_v7(), "status": status,
            "document_version": 2, "submitted_by": "alice",
            "submitted_at": "2026-12-01T10:00:00Z", "decided_by": null, "decided_at": null,
            "comment": null, "reason": null, "fence_token": null, "stage": stage,
        });
        let mut r: Review = serde_json::from_value(record).unwrap();
        r.stages = vec![
            Stage::default_stage(),
            Stage {
                name: "legal".into(),
                required_approvals: 3,
                eligible_groups: vec![],
            },
        ];
        r
    }

    #[tokio::test]
    async fn callers_that_ask_at_once_share_one_read() {
        let needs = Arc::new(StageNeeds::default());
        let reads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (gate, _) = tokio::sync::watch::channel(false);
        let id = Uuid::now_v7();
        let askers = (0..8).map(|_| {
            let (needs, reads, mut open) = (needs.clone(), reads.clone(), gate.subscribe());
            tokio::spawn(async move {
                let read = || async move {
                    reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    open.wait_for(|o| *o).await.unwrap();
                    Ok::<_, ()>(Some(3))
                };
                needs.get_or_read(id, read).await
            })
        });
        let askers: Vec<_> = askers.collect();
        tokio::task::yield_now().await;
        gate.send(true).unwrap();
        for a in askers {
            assert_eq!(a.await.unwrap(), Ok(Some(3)));
        }
        assert_eq!(
            reads.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "one read"
        );
        assert_eq!(needs.get(id), Some(3), "remembered");
        assert!(needs.lock_reading().is_empty(), "no read left behind");
    }

    #[test]
    fn a_pending_review_is_remembered_at_its_stage_and_a_decided_one_forgotten() {
        let needs = StageNeeds::default();
        let mut r = review(ReviewStatus::Pending, 0);
        assert_eq!(needs.get(r.id), None);
        needs.note(&r);
        assert_eq!(needs.get(r.id), Some(1));
        r.stage = 1;
        needs.note(&r);
        assert_eq!(needs.get(r.id), Some(3), "the stage moved on");
        r.status = ReviewStatus::Approved;
        needs.note(&r);
        assert_eq!(needs.get(r.id), None);
    }
}
