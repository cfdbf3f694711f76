//! The console's pages against the JSON calls they wrap, on one instance, at concurrency 1:
//! each console fragment renders what those calls return, so its p50 over theirs is what the
//! HTML costs.

use std::sync::Arc;

use kh_review::web::auth::{sign, Role};

use super::{drive, interleaved, sized, BenchEnv, Figures, Measure, Report, Service};

/// GETs every path in turn; true when each answered 200.
async fn get_all(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    paths: &[String],
) -> anyhow::Result<bool> {
    let mut ok = true;
    for p in paths {
        let r = client
            .get(format!("{base}{p}"))
            .bearer_auth(token)
            .send()
            .await?;
        ok &= r.status() == reqwest::StatusCode::OK;
        r.bytes().await?;
    }
    Ok(ok)
}

fn measure<'a>(
    env: &'a BenchEnv,
    svc: &'a Service,
    token: &'a str,
    paths: Vec<String>,
) -> Measure<'a> {
    let paths = Arc::new(paths);
    Box::new(move || {
        let (client, base, token, paths) = (
            env.http.clone(),
            svc.base.clone(),
            token.to_string(),
            paths.clone(),
        );
        Box::pin(drive(1, sized(300, 10), move |_| {
            let (client, base, token, paths) =
                (client.clone(), base.clone(), token.clone(), paths.clone());
            async move { get_all(&client, &base, &token, &paths).await }
        }))
    })
}

/// Each console fragment against the JSON calls it wraps; returns the worst p50 ratio.
pub async fn console_rows(report: &mut Report, env: &BenchEnv) -> anyhow::Result<f64> {
    let reviews = env.make_pending(60).await?;
    let svc = env.spawn_service("console", &[]).await?;
    let secret = &env.settings.auth.jwt_secret;
    // The benchmark's documents are bench-author's; an admin holds every role.
    let author = sign(secret, "bench-author", &[Role::Author], 3600);
    let admin = sign(secret, "bench-admin", &[Role::Admin], 3600);
    let doc: uuid::Uuid = sqlx::query_scalar("SELECT document_id FROM reviews WHERE id = $1")
        .bind(reviews[0])
        .fetch_one(&env.pg)
        .await?;
    let statuses = ["DRAFT", "REJECTED", "PENDING_REVIEW", "APPROVED"];
    let pairs: [(&str, &str, Vec<String>, String); 4] = [
        (
            "queue (50 pending)",
            &admin,
            vec!["/api/v1/reviews?limit=50".into()],
            "/console/f/queue".into(),
        ),
        (
            "document",
            &admin,
            vec![
                format!("/api/v1/documents/{doc}"),
                format!("/api/v1/documents/{doc}/reviews"),
            ],
            format!("/console/f/documents/{doc}"),
        ),
        (
            "my documents (4 statuses)",
            &author,
            statuses
                .iter()
                .map(|s| format!("/api/v1/documents?status={s}&limit=25"))
                .collect(),
            "/console/f/mine".into(),
        ),
        (
            "operator",
            &admin,
            vec![
                "/readyz".into(),
                "/api/v1/admin/outbox/stats".into(),
                "/api/v1/admin/outbox?limit=50".into(),
            ],
            "/console/f/operator".into(),
        ),
    ];
    let mut worst: f64 = 0.0;
    for (what, token, json, page) in pairs {
        let calls = json.join(" + ").replace(&doc.to_string(), "{id}");
        let shown = page.replace(&doc.to_string(), "{id}");
        let both = vec![
            measure(env, &svc, token, json),
            measure(env, &svc, token, vec![page.clone()]),
        ];
        let [j, c]: [Figures; 2] = interleaved(both).await?.try_into().expect("two rows");
        anyhow::ensure!(
            j.errors == 0 && c.errors == 0,
            "console rows: a request failed ({what})"
        );
        report.row(
            &format!("console {what}: the JSON calls it wraps ({calls})"),
            1,
            &j,
            None,
        );
        let ratio = c.p50_ms / j.p50_ms;
        report.row(
            &format!("console {what}: GET {shown}"),
            1,
            &c,
            Some(("p50 vs its JSON calls", ratio)),
        );
        worst = worst.max(ratio);
    }
    Ok(worst)
}
