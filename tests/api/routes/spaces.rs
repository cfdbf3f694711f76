//! Spaces and memberships through the API: the platform admin creates spaces (a taken key
//! is 409, a retry under its Idempotency-Key replays the answer); a caller lists the spaces
//! where it holds a role, with its roles there; its members read a space and its members
//! (by pages); its space admins write its settings and memberships; a space where the
//! caller holds no role answers 404 as one that does not exist, a member without
//! space_admin 403. Bad input is 422 and changes nothing. Who-may-do-what and the audit of
//! the changes: `space_members`.

use kh_review::web::auth::Role;
use reqwest::{Method, Response, StatusCode};
use serde_json::{json, Value};

use crate::support::app::{keyed, spawn_app, TestApp};
use crate::support::inspect::expect_error;

/// A request with a JSON body (or none), as `token`.
pub(crate) async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> Response {
    let mut r = app.client.request(method, app.url(path)).bearer_auth(token);
    if let Some(body) = body {
        r = r.json(&body);
    }
    r.send().await.expect("request sent")
}

/// The JSON of a reply of `status`.
pub(crate) async fn json_of(r: Response, status: StatusCode) -> Value {
    let got = r.status();
    let body: Value = r.json().await.expect("a JSON body");
    assert_eq!(got, status, "{body}");
    body
}

/// Creates space `key` as the platform admin.
pub(crate) async fn create_space(app: &TestApp, key: &str) -> Value {
    let body = json!({"key": key, "name": format!("Space {key}")});
    let r = app.post("/api/v1/admin/spaces", &app.admin(), body).await;
    json_of(r, StatusCode::CREATED).await
}

/// Gives `subject` `roles` in `space`, as `token`; the reply's status and body.
pub(crate) async fn put_member(
    app: &TestApp,
    token: &str,
    space: &str,
    subject: &str,
    roles: &[&str],
) -> (StatusCode, Value) {
    let path = format!("/api/v1/spaces/{space}/members/{subject}");
    let r = app.put(&path, token, json!({"roles": roles})).await;
    let status = r.status();
    (status, r.json().await.expect("a JSON body"))
}

/// A token of `sub` with no roles of its own (and `groups`).
pub(crate) fn bare(app: &TestApp, sub: &str, groups: &[&str]) -> String {
    app.token_in(sub, &[], groups)
}

/// The spaces `token` lists: (key, roles) each.
pub(crate) async fn listed(app: &TestApp, token: &str) -> Vec<(String, Value)> {
    let body = json_of(app.get("/api/v1/spaces", token).await, StatusCode::OK).await;
    let items = body["items"].as_array().expect("items").iter();
    items
        .map(|s| (s["key"].as_str().unwrap().to_string(), s["roles"].clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_platform_admin_creates_spaces_and_their_space_admins_write_their_settings() {
    let app = spawn_app().await;
    app.n_of_m("two", 2).await;
    let admin = app.admin();
    let body = json!({"key": "hr", "name": " Human resources ", "default_policy": "two"});
    let r = app.post("/api/v1/admin/spaces", &admin, body.clone()).await;
    let hr = json_of(r, StatusCode::CREATED).await;
    assert_eq!(
        (&hr["key"], &hr["name"], &hr["default_policy"]),
        (&json!("hr"), &json!("Human resources"), &json!("two")),
        "{hr}"
    );
    assert_eq!(hr["roles"], json!(["author", "reviewer", "space_admin"]));
    // A taken key: 409, the space as it was.
    let again = json!({"key": "hr", "name": "Other"});
    let r = app.post("/api/v1/admin/spaces", &admin, again).await;
    expect_error(r, StatusCode::CONFLICT, "ALREADY_EXISTS").await;
    let r = app.get("/api/v1/spaces/hr", &admin).await;
    assert_eq!(json_of(r, StatusCode::OK).await["name"], "Human resources");
    // Only the platform admin creates.
    let author = app.author();
    let r = app
        .post(
            "/api/v1/admin/spaces",
            &author,
            json!({"key": "x", "name": "X"}),
        )
        .await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;

    // The platform admin lists every space, with every role.
    let all = listed(&app, &admin).await;
    let every = json!(["author", "reviewer", "space_admin"]);
    assert_eq!(
        all,
        [("default".into(), every.clone()), ("hr".into(), every)]
    );

    // A space admin of hr renames it and clears its default policy; the reply is the space.
    let (status, _) = put_member(&app, &admin, "hr", "user:hana", &["space_admin"]).await;
    assert_eq!(status, StatusCode::OK);
    let hana = bare(&app, "hana", &[]);
    let change = json!({"name": "People", "default_policy": null});
    let r = send(
        &app,
        Method::PATCH,
        "/api/v1/spaces/hr",
        &hana,
        Some(change),
    )
    .await;
    let hr = json_of(r, StatusCode::OK).await;
    assert_eq!(
        (&hr["name"], &hr["default_policy"]),
        (&json!("People"), &Value::Null)
    );
    assert_eq!(hr["roles"], json!(["space_admin"]));
    // Only the field given changes.
    let change = json!({"default_policy": "two"});
    let r = send(
        &app,
        Method::PATCH,
        "/api/v1/spaces/hr",
        &hana,
        Some(change),
    )
    .await;
    let hr = json_of(r, StatusCode::OK).await;
    assert_eq!(
        (&hr["name"], &hr["default_policy"]),
        (&json!("People"), &json!("two"))
    );
    // A document created in hr without a policy follows hr's default policy.
    let author = app.token_in("ann", &[], &[]);
    put_member(&app, &admin, "hr", "user:ann", &["author"]).await;
    let doc = json!({"title": "Leave", "body": "Rules.", "space": "hr"});
    let r = app.post("/api/v1/documents", &author, doc).await;
    assert_eq!(json_of(r, StatusCode::CREATED).await["policy"], "two");
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_retried_under_its_idempotency_key_is_answered_as_the_first_was() {
    let app = spawn_app().await;
    let admin = app.admin();
    let eng = json!({"key": "eng", "name": "Engineering"});
    let first = keyed(&app, "/api/v1/admin/spaces", &admin, "k-eng", eng.clone());
    let first = json_of(first.send().await.unwrap(), StatusCode::CREATED).await;
    let again = keyed(&app, "/api/v1/admin/spaces", &admin, "k-eng", eng);
    let again = again.send().await.unwrap();
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(json_of(again, StatusCode::CREATED).await, first);
    let other = json!({"key": "ops", "name": "Ops"});
    let reused = keyed(&app, "/api/v1/admin/spaces", &admin, "k-eng", other);
    let r = reused.send().await.unwrap();
    expect_error(
        r,
        StatusCode::UNPROCESSABLE_ENTITY,
        "IDEMPOTENCY_KEY_REUSED",
    )
    .await;
    let created = "SELECT count(*) FROM space_admin_actions WHERE space_id = 'eng'";
    assert_eq!(app.count(created).await, 1, "created once");
    assert_eq!(app.count("SELECT count(*) FROM spaces").await, 2);
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_422_an_unknown_space_404_and_neither_changes_anything() {
    let app = spawn_app().await;
    create_space(&app, "hr").await;
    let admin = app.admin();
    let before = counts(&app).await;
    for body in [
        json!({"key": "HR!", "name": "x"}),
        json!({"key": "-hr", "name": "x"}),
        json!({"key": "a".repeat(64), "name": "x"}),
        json!({"key": "ok", "name": "   "}),
        json!({"key": "ok", "name": "a\nb"}),
        json!({"key": "ok", "name": "x", "default_policy": "no-such-policy"}),
        json!({"key": "ok", "name": "x", "default_policy": "Bad Name"}),
        json!({"key": "ok", "name": "x", "colour": "red"}),
        json!({"key": "ok"}),
    ] {
        let r = app.post("/api/v1/admin/spaces", &admin, body.clone()).await;
        let v = expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
        assert!(v["message"].is_string(), "{body}: {v}");
    }
    let patch = |body: Value| send(&app, Method::PATCH, "/api/v1/spaces/hr", &admin, Some(body));
    for body in [
        json!({}),
        json!({"name": null}),
        json!({"name": ""}),
        json!({"default_policy": "no-such-policy"}),
        json!({"key": "other"}),
    ] {
        let r = patch(body).await;
        expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    }
    // 17 names (the schema's maxItems is 16, duplicates counting once): the fuzzer found
    // such a list accepted.
    let seventeen = ["author"; 17];
    let bad_roles: [&[&str]; 4] = [&[], &["owner"], &["author", "admin"], &seventeen];
    for roles in bad_roles {
        let (status, v) = put_member(&app, &admin, "hr", "user:ada", roles).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{roles:?}: {v}");
        assert_eq!(v["code"], "VALIDATION_FAILED");
    }
    for subject in ["robot:x", "user:", "ada"] {
        let (status, v) = put_member(&app, &admin, "hr", subject, &["author"]).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{subject}: {v}");
    }
    // A key in a path that is not one: 422, whoever asks.
    for path in ["/api/v1/spaces/HR", "/api/v1/spaces/h_r/members"] {
        let r = app.get(path, &admin).await;
        expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    }
    let r = app.get("/api/v1/spaces/hr/members?cursor=zz", &admin).await;
    expect_error(r, StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED").await;
    assert_eq!(counts(&app).await, before, "nothing changed");

    // A space that does not exist: 404 on every route, for the platform admin too.
    let r = app.get("/api/v1/spaces/nope", &admin).await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    let r = app.get("/api/v1/spaces/nope/members", &admin).await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    let r = send(
        &app,
        Method::PATCH,
        "/api/v1/spaces/nope",
        &admin,
        Some(json!({"name": "x"})),
    );
    expect_error(r.await, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    let (status, _) = put_member(&app, &admin, "nope", "user:ada", &["author"]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let r = app
        .delete("/api/v1/spaces/hr/members/user:nobody", &admin)
        .await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    assert_eq!(counts(&app).await, before, "nothing changed");
    app.finish().await;
}

/// Spaces, memberships, and the audit rows of both chains.
async fn counts(app: &TestApp) -> Vec<i64> {
    let mut out = Vec::new();
    for table in [
        "spaces",
        "space_members",
        "space_audit_log",
        "space_admin_actions",
    ] {
        out.push(app.count(&format!("SELECT count(*) FROM {table}")).await);
    }
    out.push(
        app.count("SELECT count(*) FROM spaces WHERE name <> 'Space hr' AND key = 'hr'")
            .await,
    );
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_are_put_listed_by_pages_and_removed() {
    let app = spawn_app().await;
    create_space(&app, "hr").await;
    let admin = app.admin();
    let (status, ada) = put_member(&app, &admin, "hr", "user:ada", &["space_admin"]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (
            &ada["space"],
            &ada["subject"],
            &ada["roles"],
            &ada["created"]
        ),
        (
            &json!("hr"),
            &json!("user:ada"),
            &json!(["space_admin"]),
            &json!(true)
        )
    );
    // Ada, whose token carries no role, administers hr through her membership.
    let ada = bare(&app, "ada", &[]);
    assert_eq!(
        listed(&app, &ada).await,
        [("hr".into(), json!(["space_admin"]))]
    );
    // A group with a slash in its name, percent-encoded in the path.
    let (status, v) = put_member(&app, &ada, "hr", "group:hr%2Freviewers", &["reviewer"]).await;
    assert_eq!(
        (status, &v["subject"]),
        (StatusCode::OK, &json!("group:hr/reviewers"))
    );
    for (roles, created) in [
        (&["reviewer", "author"][..], true),
        (&["author", "author"], false),
    ] {
        let (status, v) = put_member(&app, &ada, "hr", "user:bo", roles).await;
        assert_eq!(status, StatusCode::OK, "{v}");
        assert_eq!(v["created"], created, "{v}");
    }
    let (_, bo) = put_member(&app, &ada, "hr", "user:bo", &["author"]).await;
    assert_eq!(bo["roles"], json!(["author"]), "exactly the roles given");

    // Pages of two, by subject, each starting after the previous one's last.
    let subjects = by_pages(&app, &ada, "hr", 2).await;
    assert_eq!(subjects, ["group:hr/reviewers", "user:ada", "user:bo"]);

    // Removed: the reply is the membership removed; a second time, 404.
    let r = app.delete("/api/v1/spaces/hr/members/user:bo", &ada).await;
    let gone = json_of(r, StatusCode::OK).await;
    assert_eq!(
        (&gone["subject"], &gone["roles"]),
        (&json!("user:bo"), &json!(["author"]))
    );
    let r = app.delete("/api/v1/spaces/hr/members/user:bo", &ada).await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    let path = "/api/v1/spaces/hr/members/group:hr%2Freviewers";
    assert_eq!(app.delete(path, &ada).await.status(), StatusCode::OK);
    assert_eq!(by_pages(&app, &ada, "hr", 20).await, ["user:ada"]);
    // An author of the token alone sees `default` only.
    let author = app.token("someone", &[Role::Author]);
    assert_eq!(
        listed(&app, &author).await,
        [("default".into(), json!(["author"]))]
    );
    app.finish().await;
}

/// The subjects of `key`'s members, read by pages of `limit`, each page starting after the
/// one before.
async fn by_pages(app: &TestApp, token: &str, key: &str, limit: u32) -> Vec<String> {
    let mut subjects = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let after = cursor.map_or_else(String::new, |c| format!("&cursor={c}"));
        let path = format!("/api/v1/spaces/{key}/members?limit={limit}{after}");
        let page = json_of(app.get(&path, token).await, StatusCode::OK).await;
        for m in page["items"].as_array().unwrap() {
            subjects.push(m["subject"].as_str().unwrap().to_string());
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return subjects,
        }
    }
}
