//! The review queue of a reviewer's spaces, `space=` narrowing it, and who is refused.

use kh_review::web::auth::Role;
use reqwest::StatusCode;

use super::{member, page, space, submitted, walked};
use crate::support::app::{spawn_app, TestApp};
use crate::support::inspect::expect_error;

/// The spaces `hr` (rob a reviewer, ann and sam authors) and `eng` (rob and rita reviewers,
/// ann an author), and the members' tokens.
struct Members {
    ann: String,
    rob: String,
    rita: String,
    sam: String,
}

async fn two_spaces(app: &TestApp) -> Members {
    let authors: &[&str] = &["author"];
    let reviewers: &[&str] = &["reviewer"];
    let hr = [
        ("user:ann", authors),
        ("user:rob", reviewers),
        ("user:sam", authors),
    ];
    let eng = [
        ("user:ann", authors),
        ("user:rob", reviewers),
        ("user:rita", reviewers),
    ];
    space(app, "hr", &hr).await;
    space(app, "eng", &eng).await;
    Members {
        ann: member(app, "ann"),
        rob: member(app, "rob"),
        rita: member(app, "rita"),
        sam: member(app, "sam"),
    }
}

fn queue(query: &str) -> String {
    format!("/api/v1/reviews?{query}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_covers_the_reviewer_s_spaces_and_space_narrows_it() {
    let app = spawn_app().await;
    let Members { ann, rob, rita, .. } = two_spaces(&app).await;
    let admin = app.token("root", &[Role::Admin]);
    let (hr1, _) = submitted(&app, &ann, "hr", "hr 1").await;
    let (eng1, _) = submitted(&app, &ann, "eng", "eng 1").await;
    let (hr2, _) = submitted(&app, &ann, "hr", "hr 2").await;
    let (eng2, _) = submitted(&app, &ann, "eng", "eng 2").await;
    let (default, _) = app.pending_review().await;
    // Due dates in the reverse of commit order, one without.
    let due = [
        (&eng2, Some(1)),
        (&hr2, Some(2)),
        (&eng1, Some(3)),
        (&hr1, None),
    ];
    for (doc, hours) in due {
        sqlx::query(
            "UPDATE reviews SET due_at = now() + $2 * interval '1 hour' \
             WHERE document_id = $1::uuid",
        )
        .bind(doc)
        .bind(hours.map(f64::from))
        .execute(&app.pg)
        .await
        .unwrap();
    }
    let cases: Vec<(String, &String, Vec<&String>)> = vec![
        // A reviewer of eng alone never sees hr's reviews.
        (queue(""), &rita, vec![&eng1, &eng2]),
        (queue("space=eng"), &rita, vec![&eng1, &eng2]),
        (queue("order=due"), &rita, vec![&eng2, &eng1]),
        (queue("eligible=me"), &rita, vec![&eng1, &eng2]),
        // A reviewer of both sees both, merged in commit order; space= narrows it.
        (queue(""), &rob, vec![&hr1, &eng1, &hr2, &eng2]),
        (queue("space=hr"), &rob, vec![&hr1, &hr2]),
        (queue("order=due"), &rob, vec![&eng2, &hr2, &eng1, &hr1]),
        (queue("space=hr&order=due"), &rob, vec![&hr2, &hr1]),
        // The platform admin sees every space, `default` included.
        (queue(""), &admin, vec![&hr1, &eng1, &hr2, &eng2, &default]),
        (queue("space=eng"), &admin, vec![&eng1, &eng2]),
    ];
    for (path, token, expected) in &cases {
        let (found, _) = page(&app, path, token, "document_id").await;
        let expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
        assert_eq!(&found, &expected, "{path}");
        // Paged one at a time: the same reviews, each once, in the same order.
        let sep = if path.ends_with('?') { "" } else { "&" };
        let walk = walked(&app, &format!("{path}{sep}"), token, "document_id").await;
        assert_eq!(walk, expected, "{path} walked");
    }
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_of_a_space_without_the_reviewer_role_there_is_refused() {
    let app = spawn_app().await;
    let Members {
        ann,
        rob,
        rita,
        sam,
    } = two_spaces(&app).await;
    let admin = app.token("root", &[Role::Admin]);
    let (eng1, _) = submitted(&app, &ann, "eng", "eng 1").await;
    // No role in the space: it does not exist; a role but not reviewer: forbidden; a
    // member who reviews nowhere: forbidden, as a token without the reviewer role always was.
    let (nf, forbidden) = (StatusCode::NOT_FOUND, StatusCode::FORBIDDEN);
    let refusals = [
        (queue("space=hr"), &rita, nf, "NOT_FOUND"),
        (queue("space=nope"), &admin, nf, "NOT_FOUND"),
        (queue("space=hr"), &ann, forbidden, "FORBIDDEN"),
        (queue(""), &ann, forbidden, "FORBIDDEN"),
        (queue(""), &sam, forbidden, "FORBIDDEN"),
        (
            queue("space=Bad"),
            &rob,
            StatusCode::UNPROCESSABLE_ENTITY,
            "VALIDATION_FAILED",
        ),
    ];
    for (path, token, status, code) in refusals {
        expect_error(app.get(&path, token).await, status, code).await;
    }
    // Reviewer in eng, author in hr: hr's queue is refused, eng's is not.
    sqlx::query(
        "INSERT INTO space_members (space_id, subject, roles) \
         VALUES ('hr', 'user:rita', '{author}')",
    )
    .execute(&app.pg)
    .await
    .unwrap();
    let r = app.get(&queue("space=hr"), &rita).await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    let (found, _) = page(&app, &queue(""), &rita, "document_id").await;
    assert_eq!(found, vec![eng1]);
    app.finish().await;
}
