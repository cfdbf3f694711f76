//! Approvals over HTTP, the service's user-facing path.

use std::sync::Arc;

use serde_json::json;
use uuid::Uuid;

use super::{drive, BenchEnv, Figures, Service};

/// Approves every review over HTTP, `conc` at a time; a non-200 counts as an error.
pub async fn approve_each(
    env: &BenchEnv,
    svc: &Service,
    conc: usize,
    reviews: Vec<Uuid>,
) -> anyhow::Result<Figures> {
    let n = reviews.len();
    let reviews = Arc::new(reviews);
    let (client, base, token) = (
        env.http.clone(),
        svc.base.clone(),
        env.reviewer_token.clone(),
    );
    drive(conc, n, move |i| {
        let (client, base, token, reviews) =
            (client.clone(), base.clone(), token.clone(), reviews.clone());
        async move {
            let r = client
                .post(format!("{base}/api/v1/reviews/{}/approve", reviews[i]))
                .bearer_auth(&token)
                .json(&json!({}))
                .send()
                .await?;
            anyhow::Ok(r.status() == reqwest::StatusCode::OK)
        }
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
