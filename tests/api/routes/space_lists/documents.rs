//! A space's documents as each member may read them, the title search, and an author's own
//! documents in the spaces where it still has a role.

use kh_review::web::auth::Role;
use reqwest::StatusCode;
use serde_json::json;

use super::{create, encoded, member, space, strings, submitted, titles, walked};
use crate::support::app::{spawn_app, TestApp};
use crate::support::inspect::expect_error;

/// The members of the space `hr` (ann and ben authors, cat a reviewer, dan its space
/// admin) and eve, an author and reviewer of `eng` alone; each one's token.
struct Members {
    ann: String,
    ben: String,
    cat: String,
    dan: String,
    eve: String,
}

/// `hr` holds ann's draft, ann's submitted document and ben's draft (in that order); `eng`
/// eve's submitted document.
async fn two_spaces(app: &TestApp) -> Members {
    let hr: [(&str, &[&str]); 4] = [
        ("user:ann", &["author"]),
        ("user:ben", &["author"]),
        ("user:cat", &["reviewer"]),
        ("user:dan", &["space_admin"]),
    ];
    space(app, "hr", &hr).await;
    space(app, "eng", &[("user:eve", &["author", "reviewer"])]).await;
    let m = Members {
        ann: member(app, "ann"),
        ben: member(app, "ben"),
        cat: member(app, "cat"),
        dan: member(app, "dan"),
        eve: member(app, "eve"),
    };
    create(app, &m.ann, "hr", "Ann's draft").await;
    submitted(app, &m.ann, "hr", "Ann's submitted").await;
    create(app, &m.ben, "hr", "Ben's draft").await;
    submitted(app, &m.eve, "eng", "Eve's submitted").await;
    m
}

const HR: &str = "/api/v1/documents?space=hr";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_space_lists_what_each_member_may_read_newest_first() {
    let app = spawn_app().await;
    let m = two_spaces(&app).await;
    let admin = app.token("root", &[Role::Admin]);
    let all = strings(&["Ben's draft", "Ann's submitted", "Ann's draft"]);
    let cases: [(&str, &String, Vec<String>); 5] = [
        // Another's draft is hidden, one's own shown.
        ("ann", &m.ann, strings(&["Ann's submitted", "Ann's draft"])),
        ("ben", &m.ben, strings(&["Ben's draft", "Ann's submitted"])),
        ("cat", &m.cat, strings(&["Ann's submitted"])),
        // A space admin sees every draft, and so does the platform admin.
        ("dan", &m.dan, all.clone()),
        ("root", &admin, all.clone()),
    ];
    for (who, token, expected) in &cases {
        assert_eq!(&titles(&app, HR, token).await, expected, "{who}");
    }
    assert_eq!(
        walked(&app, HR, &m.dan, "title").await,
        all,
        "pages without gaps"
    );
    let drafts = format!("{HR}&status=DRAFT");
    let both = strings(&["Ben's draft", "Ann's draft"]);
    assert_eq!(
        titles(&app, &drafts, &m.ann).await,
        strings(&["Ann's draft"])
    );
    assert_eq!(titles(&app, &drafts, &m.dan).await, both);
    assert_eq!(walked(&app, &drafts, &m.dan, "title").await, both);
    let pending = format!("{HR}&status=PENDING_REVIEW");
    assert_eq!(
        titles(&app, &pending, &m.cat).await,
        strings(&["Ann's submitted"])
    );
    assert_eq!(
        titles(&app, "/api/v1/documents?space=eng", &admin).await,
        strings(&["Eve's submitted"])
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_space_without_a_role_there_is_not_found_and_a_bad_key_is_refused() {
    let app = spawn_app().await;
    let m = two_spaces(&app).await;
    let admin = app.token("root", &[Role::Admin]);
    // No role in the space, or no such space: it does not exist for the caller.
    for (path, token) in [(HR, &m.eve), ("/api/v1/documents?space=nope", &admin)] {
        let r = app.get(path, token).await;
        expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    }
    for bad in [
        "space=HR",
        "space=-x",
        "space=hr&status=NOPE",
        "space=hr&cursor=xyz",
        "space=hr&limit=0",
    ] {
        let r = app.get(&format!("/api/v1/documents?{bad}"), &m.dan).await;
        expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    }
    app.finish().await;
}

/// `hr` with ann's submitted documents of many titles and ben's draft; `eng` with one of
/// ann's; ann's and ben's tokens.
async fn titles_to_search(app: &TestApp) -> (String, String) {
    space(
        app,
        "hr",
        &[("user:ann", &["author"]), ("user:ben", &["author"])],
    )
    .await;
    space(app, "eng", &[("user:ann", &["author"])]).await;
    let (ann, ben) = (member(app, "ann"), member(app, "ben"));
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
        "Überblick Straße 2027",
        "Formula a²b",
    ] {
        submitted(app, &ann, "hr", title).await;
    }
    create(app, &ben, "hr", "Quarterly draft of another").await;
    submitted(app, &ann, "eng", "Quarterly in another space").await;
    (ann, ben)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_title_search_ignores_case_matches_substrings_and_takes_wildcards_literally() {
    let app = spawn_app().await;
    let (ann, ben) = titles_to_search(&app).await;
    let search = |q: &str| format!("/api/v1/documents?space=hr&q={}", encoded(q));
    let cases: [(&str, &[&str]); 16] = [
        // Case-insensitive, by substring; another's draft and another space stay out.
        ("QUARTERLY", &["quarterly budget", "Quarterly Report 2026"]),
        ("rterly re", &["Quarterly Report 2026"]),
        ("uarterly budg", &["quarterly budget"]),
        ("ÜBERBLICK", &["Überblick Straße 2027"]),
        ("erblick straße 20", &["Überblick Straße 2027"]),
        // Inside a word, beyond ASCII (PostgreSQL hashes such a trigram).
        ("aße", &["Überblick Straße 2027"]),
        // Three letters or digits for Rust, not for PostgreSQL: the space's rows are read.
        ("a²b", &["Formula a²b"]),
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

/// The search reads a copy of the titles, which a rename updates and a submission or an
/// approval leaves alone: a renamed document is found by its new words only, in its status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renamed_title_is_found_by_its_new_words_only() {
    let app = spawn_app().await;
    space(&app, "hr", &[("user:ann", &["author"])]).await;
    let ann = member(&app, "ann");
    let id = create(&app, &ann, "hr", "Quarterly plan").await;
    let r = app
        .put(
            &format!("/api/v1/documents/{id}"),
            &ann,
            json!({"title": "Annual forecast"}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let search = |q: &str| format!("/api/v1/documents?space=hr&q={}", encoded(q));
    assert_eq!(titles(&app, &search("quarterly"), &ann).await, strings(&[]));
    let r = app
        .post(&format!("/api/v1/documents/{id}/submit"), &ann, json!({}))
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    for (q, status) in [("annual fore", ""), ("forecast", "&status=PENDING_REVIEW")] {
        assert_eq!(
            titles(&app, &format!("{}{status}", search(q)), &ann).await,
            strings(&["Annual forecast"]),
            "q={q}{status}"
        );
    }
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
