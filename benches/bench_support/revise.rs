//! Documents taken through their life over the service's HTTP API, as an author and a
//! reviewer would, for the lifecycle rows: pending a first review, approved, revised (an
//! approved document edited), and a revision pending its review. Made through the API (not
//! written into the stores) so that every row finds what the service itself wrote: the
//! published revision beside the working copy in PostgreSQL and in the MongoDB projection,
//! and the instance's own view of each review it submitted.

use std::sync::{Arc, Mutex};

use kh_review::web::auth::Role;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use uuid::Uuid;

use super::caller::Caller;
use super::{drive, BenchEnv, Service};

const TITLE: &str = "Benchmark document";
const BODY: &str = "Body of a benchmark document. It is long enough to have a preview, and \
                    short enough that the benchmark measures the review path, not the body.";
const REVISED: &str = "Revised body of a benchmark document. It is as long as the first one, \
                       so that the revision's approval copies a text of the same size.";

/// How far a document has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Created and submitted: version 2, a pending review.
    Pending,
    /// Approved once: version 3, published.
    Approved,
    /// Approved, then edited: version 4 in `DRAFT`, version 3 still published.
    Revising,
    /// Approved, edited and submitted again: version 5 pending, version 3 published.
    RevisionPending,
}

impl Stage {
    /// The events its requests publish (an edit publishes none).
    pub fn events(self) -> usize {
        match self {
            Stage::Pending => 1,
            Stage::Approved | Stage::Revising => 2,
            Stage::RevisionPending => 3,
        }
    }
}

/// An author and a reviewer of one instance.
#[derive(Clone)]
pub struct Writer {
    pub author: Caller,
    pub reviewer: Caller,
}

impl BenchEnv {
    pub fn writer(&self, svc: &Service) -> Writer {
        Writer {
            author: self.caller(svc, "bench-author", Role::Author),
            reviewer: self.caller(svc, "bench-reviewer", Role::Reviewer),
        }
    }

    /// `n` documents at `stage`, made 16 at a time; (document, its latest review). Their
    /// events are checked (exactly `stage.events()` each) and taken off the queue, and the
    /// dead row versions their requests left are vacuumed: a timed request that follows
    /// should not walk past them (a revision's five requests leave more than a first
    /// version's two, which a revision's approval paid for, seconds later, in a trial run:
    /// 1.20x a first approval's p50 without the vacuum, 1.06x with it).
    pub async fn documents_at(
        &self,
        w: &Writer,
        stage: Stage,
        n: usize,
    ) -> anyhow::Result<Vec<(Uuid, Uuid)>> {
        let made = Arc::new(Mutex::new(Vec::with_capacity(n)));
        let (w, out) = (w.clone(), made.clone());
        let f = drive(16, n, move |_| {
            let (w, out) = (w.clone(), out.clone());
            async move {
                let pair = w.take_to(stage).await?;
                out.lock().unwrap().push(pair);
                anyhow::Ok(true)
            }
        })
        .await?;
        anyhow::ensure!(f.errors == 0, "{} documents not made", f.errors);
        self.expect_delivered(n * stage.events()).await?;
        sqlx::query("VACUUM ANALYZE documents, reviews, outbox, audit_log")
            .execute(&self.pg)
            .await?;
        let made = made.lock().unwrap().clone();
        Ok(made)
    }
}

/// Fails unless `status` is `want`, naming the request and the reply.
fn expect(
    what: &str,
    (status, body): (StatusCode, Value),
    want: StatusCode,
) -> anyhow::Result<Value> {
    anyhow::ensure!(status == want, "{what}: {status} {body}");
    Ok(body)
}

fn id_at(body: &Value, pointer: &str) -> anyhow::Result<Uuid> {
    let id = body.pointer(pointer).and_then(Value::as_str);
    let id = id.ok_or_else(|| anyhow::anyhow!("no {pointer} in {body}"))?;
    Ok(id.parse()?)
}

impl Writer {
    /// One new document taken to `stage`: (document, its latest review).
    pub async fn take_to(&self, stage: Stage) -> anyhow::Result<(Uuid, Uuid)> {
        let (a, r) = (&self.author, &self.reviewer);
        let created = a
            .send(
                Method::POST,
                "/api/v1/documents",
                &json!({"title": TITLE, "body": BODY}),
            )
            .await?;
        let doc = id_at(&expect("create", created, StatusCode::CREATED)?, "/id")?;
        let mut review = self.submit(doc).await?;
        if stage == Stage::Pending {
            return Ok((doc, review));
        }
        let approved = r
            .send(
                Method::POST,
                &format!("/api/v1/reviews/{review}/approve"),
                &json!({}),
            )
            .await?;
        expect("approve", approved, StatusCode::OK)?;
        if stage == Stage::Approved {
            return Ok((doc, review));
        }
        let edited = a
            .send(
                Method::PUT,
                &format!("/api/v1/documents/{doc}"),
                &json!({"body": REVISED}),
            )
            .await?;
        let edited = expect("edit of the approved document", edited, StatusCode::OK)?;
        anyhow::ensure!(edited["version"] == 4, "the edit made {edited}");
        if stage == Stage::RevisionPending {
            review = self.submit(doc).await?;
        }
        Ok((doc, review))
    }

    async fn submit(&self, doc: Uuid) -> anyhow::Result<Uuid> {
        let path = format!("/api/v1/documents/{doc}/submit");
        let submitted = self.author.send(Method::POST, &path, &json!({})).await?;
        id_at(
            &expect("submit", submitted, StatusCode::CREATED)?,
            "/review/id",
        )
    }
}
