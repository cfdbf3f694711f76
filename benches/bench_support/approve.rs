//! Approvals over HTTP, the service's user-facing path.

use std::sync::Arc;

use serde_json::json;
use uuid::Uuid;

use super::{drive, BenchEnv, Figures, Service};

/// What a reviewer's client needs to approve on one service instance.
#[derive(Clone)]
pub struct Approver {
    client: reqwest::Client,
    base: String,
    token: String,
}

impl Approver {
    /// POSTs an approval of `review`; returns the reply's status.
    pub async fn approve(&self, review: Uuid) -> anyhow::Result<reqwest::StatusCode> {
        let r = self
            .client
            .post(format!("{}/api/v1/reviews/{review}/approve", self.base))
            .bearer_auth(&self.token)
            .json(&json!({}))
            .send()
            .await?;
        Ok(r.status())
    }
}

impl BenchEnv {
    pub fn approver(&self, svc: &Service) -> Approver {
        Approver {
            client: self.http.clone(),
            base: svc.base.clone(),
            token: self.reviewer_token.clone(),
        }
    }
}

/// Approves every review over HTTP, `conc` at a time; a non-200 counts as an error.
pub async fn approve_each(
    env: &BenchEnv,
    svc: &Service,
    conc: usize,
    reviews: Vec<Uuid>,
) -> anyhow::Result<Figures> {
    let n = reviews.len();
    let reviews = Arc::new(reviews);
    let approver = env.approver(svc);
    drive(conc, n, move |i| {
        let (approver, reviews) = (approver.clone(), reviews.clone());
        async move { anyhow::Ok(approver.approve(reviews[i]).await? == reqwest::StatusCode::OK) }
    })
    .await
}

pub async fn approve_load(
    env: &BenchEnv,
    svc: &Service,
    conc: usize,
    n: usize,
) -> anyhow::Result<Figures> {
    let reviews = env.make_pending(n).await?;
    env.purge_queue().await?;
    let figures = approve_each(env, svc, conc, reviews).await?;
    anyhow::ensure!(
        figures.errors == 0,
        "{} approvals failed at concurrency {conc} ({})",
        figures.errors,
        svc.name
    );
    env.expect_delivered(n).await?;
    Ok(figures)
}
