//! What each review's current stage needs, as this instance last saw it: the choice of a
//! vote's outer lock without a read of PostgreSQL before the lock (a round trip, and a
//! connection held while the lock is taken). Filled by every submit and vote this instance
//! runs; on a miss the vote takes the review's key, and reads the stage only when that key
//! is busy (`ReviewService::decide`). A value gone stale (another instance moved the stage
//! on) only picks the other key: the rules judge what the row lock finds, so the choice
//! decides nothing.

use std::collections::HashMap;
use std::sync::Mutex;

use uuid::Uuid;

use crate::domain::{Review, ReviewStatus};

/// At most this many reviews are remembered; then the memory starts again.
const CAPACITY: usize = 50_000;

#[derive(Debug, Default)]
pub struct StageNeeds {
    needs: Mutex<HashMap<Uuid, u8>>,
}

impl StageNeeds {
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
