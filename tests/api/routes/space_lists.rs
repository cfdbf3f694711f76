//! The lists per space: a space's documents as each of its members may read them, the title
//! search, an author's own documents in the spaces where it still has a role, and the review
//! queue of a reviewer's spaces. Spaces and memberships are written by SQL here (the routes
//! that manage them are tested on their own).

use kh_review::web::auth::Role;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::app::{spawn_app, TestApp};
use crate::support::inspect::expect_error;

/// Creates the space `key` with `members`: (subject, roles).
async fn space(app: &TestApp, key: &str, members: &[(&str, &[&str])]) {
    sqlx::query("INSERT INTO spaces (key, name) VALUES ($1, $1)")
        .bind(key)
        .execute(&app.pg)
        .await
        .unwrap();
    for (subject, roles) in members {
        let roles: Vec<String> = roles.iter().map(|r| r.to_string()).collect();
        sqlx::query("INSERT INTO space_members (space_id, subject, roles) VALUES ($1, $2, $3)")
            .bind(key)
            .bind(subject)
            .bind(roles)
            .execute(&app.pg)
            .await
            .unwrap();
    }
}

/// A token of `sub` with no roles of its own: what it may do is its memberships.
fn member(app: &TestApp, sub: &str) -> String {
    app.token(sub, &[])
}

/// Creates a draft titled `title` in `space` as `token`; returns its id.
async fn create(app: &TestApp, token: &str, space: &str, title: &str) -> String {
    let body = json!({"title": title, "body": "text", "space": space});
    let r = app.post("/api/v1/documents", token, body).await;
    assert_eq!(
        r.status(),
        StatusCode::CREATED,
        "{}",
        r.text().await.unwrap()
    );
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["space"], space);
    v["id"].as_str().unwrap().to_string()
}

/// Creates and submits a document; returns (document id, review id).
async fn submitted(app: &TestApp, token: &str, space: &str, title: &str) -> (String, String) {
    let id = create(app, token, space, title).await;
    let r = app
        .post(&format!("/api/v1/documents/{id}/submit"), token, json!({}))
        .await;
    assert_eq!(
        r.status(),
        StatusCode::CREATED,
        "{}",
        r.text().await.unwrap()
    );
    let v: Value = r.json().await.unwrap();
    (id, v["review"]["id"].as_str().unwrap().to_string())
}

/// A page of a list: the `field` of each item, and the next cursor.
async fn page(
    app: &TestApp,
    path: &str,
    token: &str,
    field: &str,
) -> (Vec<String>, Option<String>) {
    let r = app.get(path, token).await;
    assert_eq!(
        r.status(),
        StatusCode::OK,
        "{path}: {}",
        r.text().await.unwrap()
    );
    let v: Value = r.json().await.unwrap();
    let items = v["items"].as_array().unwrap();
    let values = items.iter().map(|d| d[field].as_str().unwrap().to_string());
    (
        values.collect(),
        v["next_cursor"].as_str().map(str::to_string),
    )
}

/// The titles of a documents list (one page).
async fn titles(app: &TestApp, path: &str, token: &str) -> Vec<String> {
    page(app, path, token, "title").await.0
}

/// Every item's `field`, the list walked `limit=1` at a time from `path` (which has a `?`).
async fn walked(app: &TestApp, path: &str, token: &str, field: &str) -> Vec<String> {
    let (mut all, mut cursor) = (Vec::new(), None::<String>);
    loop {
        let after = cursor.map(|c| format!("&cursor={c}")).unwrap_or_default();
        let (items, next) = page(app, &format!("{path}&limit=1{after}"), token, field).await;
        assert!(items.len() <= 1);
        all.extend(items);
        match next {
            Some(c) => cursor = Some(c),
            None => return all,
        }
    }
}

/// `s` as a query string's value: every byte but letters and digits percent-encoded.
fn encoded(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn strings(s: &[&str]) -> Vec<String> {
    s.iter().map(|s| s.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_space_lists_what_each_member_may_read_newest_first() {
    let app = spawn_app().await;
    space(
        &app,
        "hr",
        &[
            ("user:ann", &["author"]),
            ("user:ben", &["author"]),
            ("user:cat", &["reviewer"]),
            ("user:dan", &["space_admin"]),
        ],
    )
    .await;
    space(&app, "eng", &[("user:eve", &["author", "reviewer"])]).await;
    let (ann, ben, cat, dan, eve) = (
        member(&app, "ann"),
        member(&app, "ben"),
        member(&app, "cat"),
        member(&app, "dan"),
        member(&app, "eve"),
    );
    let admin = app.token("root", &[Role::Admin]);
    create(&app, &ann, "hr", "Ann's draft").await;
    submitted(&app, &ann, "hr", "Ann's submitted").await;
    create(&app, &ben, "hr", "Ben's draft").await;
    submitted(&app, &eve, "eng", "Eve's submitted").await;

    let hr = "/api/v1/documents?space=hr";
    let all = strings(&["Ben's draft", "Ann's submitted", "Ann's draft"]);
    assert_eq!(
        titles(&app, hr, &ann).await,
        strings(&["Ann's submitted", "Ann's draft"]),
        "another's draft is hidden, one's own shown"
    );
    assert_eq!(
        titles(&app, hr, &ben).await,
        strings(&["Ben's draft", "Ann's submitted"])
    );
    assert_eq!(titles(&app, hr, &cat).await, strings(&["Ann's submitted"]));
    assert_eq!(titles(&app, hr, &dan).await, all, "a space admin sees all");
    assert_eq!(
        titles(&app, hr, &admin).await,
        all,
        "the platform admin too"
    );
    assert_eq!(
        walked(&app, hr, &dan, "title").await,
        all,
        "pages without gaps"
    );
    let drafts = format!("{hr}&status=DRAFT");
    assert_eq!(titles(&app, &drafts, &ann).await, strings(&["Ann's draft"]));
    assert_eq!(
        titles(&app, &drafts, &dan).await,
        strings(&["Ben's draft", "Ann's draft"])
    );
    assert_eq!(
        walked(&app, &drafts, &dan, "title").await,
        strings(&["Ben's draft", "Ann's draft"])
    );
    let pending = format!("{hr}&status=PENDING_REVIEW");
    assert_eq!(
        titles(&app, &pending, &cat).await,
        strings(&["Ann's submitted"])
    );
    assert_eq!(
        titles(&app, "/api/v1/documents?space=eng", &admin).await,
        strings(&["Eve's submitted"])
    );

    // No role in the space, or no such space: it does not exist for the caller.
    for (path, token) in [(hr, &eve), ("/api/v1/documents?space=nope", &admin)] {
        let r = app.get(path, token).await;
        expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    }
    for bad in [
        "space=HR",
        "space=-x",
        "space=hr&status=NOPE",
        "space=hr&cursor=xyz",
    ] {
        let r = app.get(&format!("/api/v1/documents?{bad}"), &dan).await;
        expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    }
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_title_search_ignores_case_matches_substrings_and_takes_wildcards_literally() {
    let app = spawn_app().await;
    space(
        &app,
        "hr",
        &[("user:ann", &["author"]), ("user:ben", &["author"])],
    )
    .await;
    space(&app, "eng", &[("user:ann", &["author"])]).await;
    let (ann, ben) = (member(&app, "ann"), member(&app, "ben"));
    for title in [
        "Quarterly Report 2026",
        "quarterly budget",
        "100% done",
        "100 percent",
        "snake_case naming",
        "snakeXcase naming",
        r"C:\dir\file",
        "HR handbook",
        "Travel policy",
    ] {
        submitted(&app, &ann, "hr", title).await;
    }
    create(&app, &ben, "hr", "Quarterly draft of another").await;
    submitted(&app, &ann, "eng", "Quarterly in another space").await;

    let search = |q: &str| format!("/api/v1/documents?space=hr&q={}", encoded(q));
    let cases: [(&str, &[&str]); 11] = [
        // Case-insensitive, by substring; another's draft and another space stay out.
        ("QUARTERLY", &["quarterly budget", "Quarterly Report 2026"]),
        ("rterly re", &["Quarterly Report 2026"]),
        // `%`, `_` and `\` are the characters themselves.
        ("100%", &["100% done"]),
        ("%", &["100% done"]),
        ("snake_case", &["snake_case naming"]),
        ("e_c", &["snake_case naming"]),
        ("_", &["snake_case naming"]),
        (r"\dir", &[r"C:\dir\file"]),
        // Shorter than a trigram, or no letters at all: still matched, case-insensitively.
        ("hr", &["HR handbook"]),
        (
            "Y",
            &["Travel policy", "quarterly budget", "Quarterly Report 2026"],
        ),
        ("nothing like it", &[]),
    ];
    for (q, expected) in cases {
        assert_eq!(
            titles(&app, &search(q), &ann).await,
            strings(expected),
            "q={q}"
        );
    }
    // A search pages like the list it narrows.
    assert_eq!(
        walked(&app, &search("naming"), &ann, "title").await,
        strings(&["snakeXcase naming", "snake_case naming"])
    );
    assert_eq!(
        titles(&app, &format!("{}&status=DRAFT", search("quarterly")), &ben).await,
        strings(&["Quarterly draft of another"])
    );

    let long = "x".repeat(201);
    for bad in [
        search(""),
        search(&long),
        "/api/v1/documents?q=quarterly".into(),
    ] {
        let r = app.get(&bad, &ann).await;
        expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    }
    assert_eq!(titles(&app, &search(&"x".repeat(200)), &ann).await.len(), 0);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_author_s_own_documents_leave_its_list_with_its_role_in_their_space() {
    let app = spawn_app().await;
    space(&app, "hr", &[("user:ann", &["author"])]).await;
    space(&app, "eng", &[("user:ann", &["author"])]).await;
    // Her token's author role counts in `default`.
    let ann = app.token("ann", &[Role::Author]);
    create(&app, &ann, "default", "In default").await;
    create(&app, &ann, "hr", "In hr").await;
    create(&app, &ann, "eng", "In eng").await;
    let mine = "/api/v1/documents";
    let everywhere = strings(&["In eng", "In hr", "In default"]);
    assert_eq!(titles(&app, mine, &ann).await, everywhere);
    assert_eq!(
        walked(&app, &format!("{mine}?"), &ann, "title").await,
        everywhere
    );

    // Removed from eng: from the next request on, what she wrote there is not hers to list.
    sqlx::query("DELETE FROM space_members WHERE space_id = 'eng' AND subject = 'user:ann'")
        .execute(&app.pg)
        .await
        .unwrap();
    assert_eq!(
        titles(&app, mine, &ann).await,
        strings(&["In hr", "In default"])
    );
    assert_eq!(
        titles(&app, &format!("{mine}?status=DRAFT"), &ann).await,
        strings(&["In hr", "In default"])
    );
    let r = app.get("/api/v1/documents?space=eng", &ann).await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    // The platform admin lists its own in every space.
    let root = app.token("root", &[Role::Admin]);
    create(&app, &root, "eng", "Root's in eng").await;
    assert_eq!(titles(&app, mine, &root).await, strings(&["Root's in eng"]));
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_covers_the_reviewer_s_spaces_and_space_narrows_it() {
    let app = spawn_app().await;
    let authors: &[&str] = &["author"];
    space(
        &app,
        "hr",
        &[
            ("user:ann", authors),
            ("user:rob", &["reviewer"]),
            ("user:sam", authors),
        ],
    )
    .await;
    space(
        &app,
        "eng",
        &[
            ("user:ann", authors),
            ("user:rob", &["reviewer"]),
            ("user:rita", &["reviewer"]),
        ],
    )
    .await;
    let (ann, rob, rita, sam) = (
        member(&app, "ann"),
        member(&app, "rob"),
        member(&app, "rita"),
        member(&app, "sam"),
    );
    let admin = app.token("root", &[Role::Admin]);
    let (hr1, _) = submitted(&app, &ann, "hr", "hr 1").await;
    let (eng1, _) = submitted(&app, &ann, "eng", "eng 1").await;
    let (hr2, _) = submitted(&app, &ann, "hr", "hr 2").await;
    let (eng2, _) = submitted(&app, &ann, "eng", "eng 2").await;
    let (default, _) = app.pending_review().await;
    // Due dates in the reverse of commit order, one without.
    for (doc, hours) in [
        (&eng2, Some(1)),
        (&hr2, Some(2)),
        (&eng1, Some(3)),
        (&hr1, None),
    ] {
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
    let queue = |query: &str| format!("/api/v1/reviews?{query}");
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

    // No role in the space: it does not exist; a role but not reviewer: forbidden; a
    // member who reviews nowhere: forbidden, as a token without the reviewer role always was.
    let refusals = [
        (queue("space=hr"), &rita, StatusCode::NOT_FOUND, "NOT_FOUND"),
        (
            queue("space=nope"),
            &admin,
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
        ),
        (queue("space=hr"), &ann, StatusCode::FORBIDDEN, "FORBIDDEN"),
        (queue(""), &ann, StatusCode::FORBIDDEN, "FORBIDDEN"),
        (queue(""), &sam, StatusCode::FORBIDDEN, "FORBIDDEN"),
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
        "INSERT INTO space_members (space_id, subject, roles) VALUES ('hr', 'user:rita', '{author}')",
    )
    .execute(&app.pg)
    .await
    .unwrap();
    let r = app.get(&queue("space=hr"), &rita).await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    let (found, _) = page(&app, &queue(""), &rita, "document_id").await;
    assert_eq!(found, vec![eng1.clone(), eng2.clone()]);
    app.finish().await;
}
