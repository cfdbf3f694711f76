//! The world the table is run against: space A with its members and documents in every state
//! a route acts on, space B with the outsiders (members of B only, by memberships alone) and
//! a document of theirs; the requests of the table made concrete; and a fingerprint of
//! everything a request could change.

use reqwest::{Method, StatusCode};

use super::table::{Body, Req, Target, Which};
use crate::support::app::TestApp;

/// What every title in space A contains: no answer to an outsider may carry it.
pub const SECRET: &str = "Secret A";

/// The A reviewer who holds a seat on the pending review.
pub const HOLDER: &str = "rita";

pub struct World {
    /// (document, review) of each of A's documents.
    pub pending: (String, String),
    pub approved: (String, String),
    pub rejected: (String, String),
    /// An outbox row of the pending document.
    pub outbox: i64,
    /// A pending document of space B, by an outsider, and its review.
    pub b_pending: (String, String),
    /// A disabled webhook endpoint of A, and a failed delivery of it (neither of which the
    /// deliverer touches, so the fingerprint holds still).
    pub webhook: (String, i64),
}

/// A caller with no role in space A.
pub struct Outsider {
    pub name: &'static str,
    pub token: String,
    /// It holds `space_admin` (in space B).
    pub space_admin: bool,
}

/// Spaces A and B with their members; A's documents pending (a seat claimed), approved and
/// rejected, all titled with [`SECRET`]; B's pending document.
pub async fn build(app: &TestApp) -> World {
    for key in ["a", "b"] {
        app.space(key).await;
    }
    app.grant("a", "user:ann", &["author"]).await;
    app.grant("a", "user:rita", &["reviewer"]).await;
    app.grant("a", "user:rex", &["reviewer"]).await;
    app.grant("b", "user:olga", &["author", "reviewer"]).await;
    let all = ["author", "reviewer", "space_admin"];
    app.grant("b", "user:sven", &all).await;
    let (ann, rex) = (app.member("ann"), app.member("rex"));
    let pending = app.pending_in("a", &ann, "Secret A: pending").await;
    let r = app.claim(&pending.1, &app.member(HOLDER)).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let approved = app.pending_in("a", &ann, "Secret A: approved").await;
    let r = app.approve(&approved.1, &rex).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let rejected = app.pending_in("a", &ann, "Secret A: rejected").await;
    let r = app.reject(&rejected.1, &rex).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    // Its author edits it again: she holds its edit lease.
    let lease = format!("/api/v1/documents/{}/lease", rejected.0);
    let r = app.post(&lease, &ann, serde_json::json!({})).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let outbox = sqlx::query_scalar("SELECT min(id) FROM outbox WHERE document_id = $1::uuid")
        .bind(&pending.0)
        .fetch_one(&app.pg)
        .await
        .unwrap();
    let b_pending = app.pending_in("b", &app.member("olga"), "B's own").await;
    let webhook = webhook_of_a(app, &pending.0).await;
    World {
        pending,
        approved,
        rejected,
        outbox,
        b_pending,
        webhook,
    }
}

/// A disabled endpoint of space A and a failed delivery of the document `doc`'s first
/// event, written straight into the database.
async fn webhook_of_a(app: &TestApp, doc: &str) -> (String, i64) {
    let id = uuid::Uuid::now_v7();
    sqlx::query(
        "INSERT INTO webhooks (id, space_id, url, event_types, secret, enabled, created_by) \
         VALUES ($1, 'a', 'https://hooks.example.com/a', '{document.submitted}', \
                 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', false, 'ann')",
    )
    .bind(id)
    .execute(&app.pg)
    .await
    .unwrap();
    let delivery = sqlx::query_scalar(
        "INSERT INTO webhook_deliveries (webhook_id, space_id, event_id, event_type, payload, state) \
         SELECT $1, 'a', event_id, event_type, payload, 'failed' FROM outbox \
         WHERE document_id = $2::uuid ORDER BY id LIMIT 1 RETURNING id",
    )
    .bind(id)
    .bind(doc)
    .fetch_one(&app.pg)
    .await
    .unwrap();
    (id.to_string(), delivery)
}

/// The outsiders: an author and reviewer of B, and a space admin of B too.
pub fn outsiders(app: &TestApp) -> [Outsider; 2] {
    [
        Outsider {
            name: "olga (author, reviewer of B)",
            token: app.member("olga"),
            space_admin: false,
        },
        Outsider {
            name: "sven (author, reviewer, space_admin of B)",
            token: app.member("sven"),
            space_admin: true,
        },
    ]
}

impl World {
    fn of(&self, which: Which) -> &(String, String) {
        match which {
            Which::Pending => &self.pending,
            Which::Approved => &self.approved,
            Which::Rejected => &self.rejected,
        }
    }

    /// `path` (a pattern of a table) with its parameters naming what `req` says, and its
    /// query.
    pub fn url(&self, path: &str, req: &Req) -> String {
        let other = uuid::Uuid::new_v4().to_string();
        let (doc, review) = match req.target {
            Target::Doc(w) | Target::Review(w) => self.of(w).clone(),
            _ => (other.clone(), other.clone()),
        };
        let id = match req.target {
            Target::Review(_) => review.clone(),
            Target::Outbox => self.outbox.to_string(),
            _ => doc,
        };
        let mut url = path
            .replace("{id}", &id)
            .replace("{review}", &review)
            .replace("{reviewer_id}", HOLDER)
            .replace("{key}", "a")
            .replace("{subject}", "user:rita")
            .replace("{name}", "default")
            .replace("{type}", "document.submitted")
            .replace("{file}", "console.js")
            .replace("{webhook_id}", &self.webhook.0)
            .replace("{delivery_id}", &self.webhook.1.to_string());
        if !req.query.is_empty() {
            url = format!("{url}?{}", req.query.replace("{doc}", &self.pending.0));
        }
        url
    }

    /// Everything of A a body may carry, to check that none does.
    pub fn secrets(&self) -> Vec<String> {
        let mut all = vec![SECRET.to_string()];
        for (d, r) in [&self.pending, &self.approved, &self.rejected] {
            all.extend([d.clone(), r.clone()]);
        }
        all
    }
}

/// The answer to one request: its status and body.
pub struct Answer {
    pub status: StatusCode,
    pub text: String,
}

impl Answer {
    /// The error's code: the JSON envelope's, or the console page's `data-code`.
    pub fn code(&self) -> Option<String> {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&self.text) {
            return v["code"].as_str().map(str::to_string);
        }
        let (_, rest) = self.text.split_once("data-code=\"")?;
        rest.split_once('"').map(|(code, _)| code.to_string())
    }
}

/// Sends `method url` with `body` (`{doc}` in a JSON body: the pending document) as `token`.
pub async fn send(
    app: &TestApp,
    w: &World,
    (method, url): (&str, &str),
    body: Body,
    token: &str,
) -> Answer {
    let method: Method = method.to_uppercase().parse().unwrap();
    let mut r = app.client.request(method, app.url(url)).bearer_auth(token);
    r = match body {
        Body::None => r,
        Body::Json(s) => r
            .header("content-type", "application/json")
            .body(s.replace("{doc}", &w.pending.0)),
        Body::Form(fields) => r.form(fields),
    };
    let r = r.send().await.expect("request sent");
    Answer {
        status: r.status(),
        text: r.text().await.unwrap(),
    }
}

/// Everything a request could change, as one string: the rows of documents, reviews, votes,
/// claims, webhooks and their deliveries, and how many comments, audit rows, events, replays, admin actions, policy
/// versions, spaces and memberships there are.
pub async fn fingerprint(app: &TestApp) -> String {
    let rows = |table: &str| {
        format!(
            "(SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) FROM {table} t)"
        )
    };
    let counts = [
        "comments",
        "audit_log",
        "outbox",
        "replays",
        "outbox_admin_actions",
        "policy_versions",
        "spaces",
        "space_members",
        "space_audit_log",
        "space_admin_actions",
    ]
    .map(|t| format!("'{t} ' || (SELECT count(*) FROM {t})"));
    let parked =
        "(SELECT count(*) FROM outbox WHERE parked_at IS NOT NULL OR skipped_at IS NOT NULL)";
    let parts = [
        "documents",
        "reviews",
        "review_votes",
        "review_claims",
        "locks",
        "webhooks",
        "webhook_deliveries",
    ]
    .map(rows)
    .into_iter()
    .chain(counts)
    .chain([parked.to_string()])
    .collect::<Vec<_>>();
    let sql = format!("SELECT concat_ws(' | ', {})", parts.join(", "));
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .fetch_one(&app.pg)
        .await
        .unwrap()
}
