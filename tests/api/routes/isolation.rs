//! Spaces isolate: every route of the JSON API and of the console, run by callers who are
//! members of space B only (by memberships alone, no roles of their own), against space A's
//! documents and reviews. What names something of A is 404 `NOT_FOUND` to them (the
//! console: its 404 page), and changes nothing; the table (`table.rs`) says so route by
//! route, and a route that is in neither table fails the first test here.

mod table;
mod world;

use std::collections::BTreeSet;

use reqwest::StatusCode;
use serde_json::json;

use crate::support::app::{spawn_app, TestApp};
use crate::support::inspect::redis_cmd;
use table::{Body, Entry, Expect, Req, Target, API, CONSOLE};
use world::{fingerprint, send, Outsider, World};

fn pairs(entries: &[Entry]) -> BTreeSet<(String, String)> {
    entries
        .iter()
        .map(|e| (e.method.to_string(), e.path.to_string()))
        .collect()
}

fn served(routes: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    routes
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect()
}

#[test]
fn the_table_covers_every_route() {
    for (name, table, routes) in [
        ("the JSON API", API, kh_review::http::ROUTES),
        ("the console", CONSOLE, kh_review::console::PATHS),
    ] {
        let (listed, served) = (pairs(table), served(routes));
        assert_eq!(table.len(), listed.len(), "{name}: a route listed twice");
        let missing: Vec<_> = served.difference(&listed).collect();
        let stale: Vec<_> = listed.difference(&served).collect();
        assert!(
            missing.is_empty() && stale.is_empty(),
            "{name}: routes served but not in the isolation table (say what a caller with no \
             role in a space gets): {missing:?}; in the table but not served: {stale:?}"
        );
    }
}

/// What `outsider` must get from `expect`: the status and code, or None when nothing is
/// asserted of the route's status.
fn wanted(expect: &Expect, outsider: &Outsider) -> Option<(Req, StatusCode, &'static str)> {
    let hidden = (StatusCode::NOT_FOUND, "NOT_FOUND");
    let forbidden = (StatusCode::FORBIDDEN, "FORBIDDEN");
    let (req, (status, code)) = match *expect {
        Expect::Hidden(req) => (req, hidden),
        Expect::SpaceAdmin(req) if outsider.space_admin => (req, hidden),
        Expect::SpaceAdmin(req) | Expect::PlatformAdmin(req) => (req, forbidden),
        Expect::NamesNothing | Expect::List => return None,
    };
    Some((req, status, code))
}

/// Runs `entry` as `outsider`: its answer is the one wanted, carries nothing of A, and
/// nothing changed. Every failure is added to `failed`.
async fn check(app: &TestApp, w: &World, entry: &Entry, who: &Outsider, failed: &mut Vec<String>) {
    let route = format!(
        "{} {} ({}) as {}",
        entry.method, entry.path, entry.why, who.name
    );
    let Some((req, status, code)) = wanted(&entry.expect, who) else {
        if let (Expect::NamesNothing, "get") = (&entry.expect, entry.method) {
            let url = w.url(
                entry.path,
                &Req {
                    target: Target::Other,
                    query: "",
                    body: Body::None,
                },
            );
            let a = send(app, w, ("get", &url), Body::None, &who.token).await;
            leaks(w, &route, &a.text, failed);
        }
        return;
    };
    let url = w.url(entry.path, &req);
    let before = fingerprint(app).await;
    let a = send(app, w, (entry.method, &url), req.body, &who.token).await;
    if a.status != status || a.code().as_deref() != Some(code) {
        let said: String = a.text.chars().take(300).collect();
        failed.push(format!(
            "{route}: {} {:?}, not {status} {code}: {said}",
            a.status,
            a.code()
        ));
    }
    leaks(w, &route, &a.text, failed);
    if entry.method == "get" {
        let head = send(app, w, ("head", &url), Body::None, &who.token).await;
        if head.status != status {
            failed.push(format!("HEAD of {route}: {}, not {status}", head.status));
        }
    }
    if fingerprint(app).await != before {
        failed.push(format!("{route}: it changed something ({})", a.status));
    }
}

/// Adds a failure when `text` carries a title or id of space A.
fn leaks(w: &World, route: &str, text: &str, failed: &mut Vec<String>) {
    for secret in w.secrets() {
        if text.contains(&secret) {
            failed.push(format!("{route}: its answer carries {secret:?} of space A"));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_of_another_space_gets_404_on_every_route_and_changes_nothing() {
    let app = spawn_app().await;
    let w = world::build(&app).await;
    let mut failed = Vec::new();
    for who in world::outsiders(&app) {
        for entry in API.iter().chain(CONSOLE) {
            check(&app, &w, entry, &who, &mut failed).await;
        }
    }
    assert!(
        failed.is_empty(),
        "{} leaks:\n{}",
        failed.len(),
        failed.join("\n")
    );
    // What the table names exists: the platform admin reads each, and A's members still act.
    for entry in API.iter().chain(CONSOLE).filter(|e| e.method == "get") {
        if let Expect::Hidden(req) = entry.expect {
            let url = w.url(entry.path, &req);
            let a = send(&app, &w, ("get", &url), Body::None, &app.admin()).await;
            assert_eq!(a.status, StatusCode::OK, "{}: {}", entry.path, a.text);
        }
    }
    let r = app.approve(&w.pending.1, &app.member(world::HOLDER)).await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    app.finish().await;
}

/// The console's decisions and claims name a document and a review: B's document with A's
/// review is refused as A's review alone is, and a comment on B's document pointing at A's
/// review is refused as one pointing at no review is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_of_space_a_under_a_document_of_space_b_is_not_found() {
    let app = spawn_app().await;
    let w = world::build(&app).await;
    let olga = app.member("olga");
    let before = fingerprint(&app).await;
    let (b_doc, a_review) = (&w.b_pending.0, &w.pending.1);
    for (verb, form) in [
        ("approve", vec![("comment", "ok")]),
        ("reject", vec![("reason", "no")]),
        ("claim", vec![]),
        ("give-back", vec![]),
    ] {
        let path = format!("/console/f/documents/{b_doc}/reviews/{a_review}/{verb}");
        let r = app
            .client
            .post(app.url(&path))
            .bearer_auth(&olga)
            .form(&form);
        let r = r.send().await.unwrap();
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{verb}");
        let text = r.text().await.unwrap();
        assert!(text.contains("data-code=\"NOT_FOUND\""), "{verb}: {text}");
        assert!(!text.contains(world::SECRET), "{verb}: {text}");
    }
    let path = format!("/api/v1/documents/{b_doc}/comments");
    let mut answers = Vec::new();
    for review in [a_review.clone(), uuid::Uuid::new_v4().to_string()] {
        let r = app
            .post(&path, &olga, json!({"body": "x", "review_id": review}))
            .await;
        let status = r.status();
        let v: serde_json::Value = r.json().await.unwrap();
        // The message names the review sent, whichever it is.
        let message = v["message"].as_str().unwrap().replace(&review, "<id>");
        answers.push((status, v["code"].clone(), message));
    }
    assert_eq!(
        answers[0].0,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{answers:?}"
    );
    assert_eq!(
        answers[0], answers[1],
        "A's review is no review at all to olga"
    );
    assert_eq!(fingerprint(&app).await, before, "nothing changed");
    app.finish().await;
}

/// A token with no roles of its own and no membership anywhere is refused on every route
/// that needs a token, whatever it names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_with_no_role_and_no_membership_is_403_on_every_route() {
    let app = spawn_app().await;
    let w = world::build(&app).await;
    let nobody = app.member("nobody");
    let before = fingerprint(&app).await;
    let public = |p: &str| {
        p == "/api/v1/openapi.json" || !(p.starts_with("/api/v1/") || p.starts_with("/console/f/"))
    };
    for entry in API.iter().chain(CONSOLE).filter(|e| !public(e.path)) {
        let req = match entry.expect {
            Expect::Hidden(r) | Expect::SpaceAdmin(r) | Expect::PlatformAdmin(r) => r,
            Expect::NamesNothing | Expect::List => Req {
                target: Target::Other,
                query: "",
                body: Body::None,
            },
        };
        let url = w.url(entry.path, &req);
        let a = send(&app, &w, (entry.method, &url), req.body, &nobody).await;
        let route = format!("{} {}", entry.method, entry.path);
        assert_eq!(a.status, StatusCode::FORBIDDEN, "{route}: {}", a.text);
        assert_eq!(a.code().as_deref(), Some("FORBIDDEN"), "{route}");
    }
    assert_eq!(fingerprint(&app).await, before, "nothing changed");
    app.finish().await;
}

/// Another request holding a space-A document's or review's lock (in Redis, or its row in
/// PostgreSQL) is no sign to an outsider that it exists: still 404, where a member of A is
/// told to retry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_item_of_space_a_is_still_not_found_to_an_outsider() {
    let app = spawn_app().await;
    let w = world::build(&app).await;
    let (olga, ann) = (app.member("olga"), app.member("ann"));
    let (doc, review) = &w.pending;
    let prefix = &app.shared.prefix;
    let keys = [
        format!("{prefix}lock:doc:submit:{{{doc}}}"),
        app.lock_key_review(review),
    ];
    for key in &keys {
        redis_cmd(&app.redis, &["SET", key, "someone", "PX", "30000"]).await;
    }
    let before = fingerprint(&app).await;
    let doc_post = |verb: &str| format!("/api/v1/documents/{doc}/{verb}");
    let busy = [
        (doc_post("withdraw"), json!({})),
        (doc_post("archive"), json!({})),
        (format!("/api/v1/reviews/{review}/approve"), json!({})),
        (
            format!("/api/v1/reviews/{review}/reject"),
            json!({"reason": "no"}),
        ),
    ];
    for (path, body) in &busy {
        let r = app.post(path, &olga, body.clone()).await;
        let status = r.status();
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "{path}: {}",
            r.text().await.unwrap()
        );
    }
    let r = app.post(&doc_post("withdraw"), &ann, json!({})).await;
    assert_eq!(r.status(), StatusCode::CONFLICT, "the lock is held");
    for key in &keys {
        redis_cmd(&app.redis, &["DEL", key]).await;
    }
    // The document's row held by another transaction.
    let mut tx = app.pg.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM documents WHERE id = $1::uuid FOR UPDATE")
        .bind(doc)
        .execute(&mut *tx)
        .await
        .unwrap();
    let (comment, comments) = (json!({"body": "x"}), doc_post("comments"));
    let edit = format!("/api/v1/documents/{doc}");
    let (as_olga, claim, edited, as_ann) = tokio::join!(
        app.post(&comments, &olga, comment.clone()),
        app.claim(review, &olga),
        app.put(&edit, &olga, json!({"title": "x"})),
        app.post(&comments, &ann, comment.clone()),
    );
    tx.rollback().await.unwrap();
    assert_eq!(as_olga.status(), StatusCode::NOT_FOUND, "comment");
    assert_eq!(claim.status(), StatusCode::NOT_FOUND, "claim");
    assert_eq!(edited.status(), StatusCode::NOT_FOUND, "edit");
    assert_eq!(as_ann.status(), StatusCode::CONFLICT, "the row is held");
    assert_eq!(fingerprint(&app).await, before, "nothing changed");
    app.finish().await;
}
