//! Who may do what with a space, decided by the caller's roles there: a caller with no role
//! in a space gets 404 on every route of it, as if it did not exist; a member without
//! space_admin reads it and gets 403 on its writes; a membership holds from the next
//! request on, and so does its removal; a group's membership grants its roles to every
//! token in the group; a token with no roles of its own and no membership is 403 on every
//! route. The last space_admin of a space goes only by the platform admin.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::routes::spaces::{bare, create_space, json_of, listed, put_member, send};
use crate::support::app::{spawn_app, TestApp};
use crate::support::inspect::expect_error;

/// Every route of space `key` with the body it sends, as (method, path, body).
fn routes_of(key: &str) -> Vec<(Method, String, Option<serde_json::Value>)> {
    let space = format!("/api/v1/spaces/{key}");
    vec![
        (Method::GET, space.clone(), None),
        (Method::GET, format!("{space}/members"), None),
        (
            Method::PATCH,
            space.clone(),
            Some(json!({"name": "Mine now"})),
        ),
        (
            Method::PUT,
            format!("{space}/members/user:mallory"),
            Some(json!({"roles": ["space_admin"]})),
        ),
        (Method::DELETE, format!("{space}/members/user:owner"), None),
    ]
}

/// The statuses `token` gets on every route of space `key`, with their codes.
async fn statuses(app: &TestApp, token: &str, key: &str) -> Vec<(String, StatusCode, String)> {
    let mut out = Vec::new();
    for (method, path, body) in routes_of(key) {
        let r = send(app, method.clone(), &path, token, body).await;
        let status = r.status();
        let body: serde_json::Value = r.json().await.unwrap();
        let code = body["code"].as_str().unwrap_or("-").to_string();
        out.push((format!("{method} {path}"), status, code));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_space_is_404_to_whoever_holds_no_role_there_and_403_to_a_member_who_may_not() {
    let app = spawn_app().await;
    let admin = app.admin();
    for key in ["a", "b"] {
        create_space(&app, key).await;
        let (status, _) = put_member(&app, &admin, key, "user:owner", &["space_admin"]).await;
        assert_eq!(status, StatusCode::OK);
    }
    put_member(&app, &admin, "b", "user:bob", &["reviewer"]).await;
    put_member(&app, &admin, "a", "user:amy", &["author", "reviewer"]).await;
    let before = app.count("SELECT count(*) FROM space_audit_log").await;

    // Bob reviews in b: space a does not exist for him, on any route.
    let bob = bare(&app, "bob", &[]);
    for (route, status, code) in statuses(&app, &bob, "a").await {
        assert_eq!(
            (status, code.as_str()),
            (StatusCode::NOT_FOUND, "NOT_FOUND"),
            "{route}"
        );
    }
    assert_eq!(
        listed(&app, &bob).await,
        [("b".into(), json!(["reviewer"]))]
    );
    // The same answer as a space that does not exist at all.
    let r = app.get("/api/v1/spaces/zzz", &bob).await;
    let unknown = expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    let r = app.get("/api/v1/spaces/a", &bob).await;
    let hidden = expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    assert_eq!(unknown["message"], hidden["message"]);
    // The token's own roles count in `default` only.
    let reviewer = app.reviewer();
    for (route, status, _) in statuses(&app, &reviewer, "a").await {
        assert_eq!(status, StatusCode::NOT_FOUND, "{route}");
    }

    // Amy is a member of a without space_admin: reads it, may not write it.
    let amy = bare(&app, "amy", &[]);
    let got = statuses(&app, &amy, "a").await;
    let want = [
        StatusCode::OK,
        StatusCode::OK,
        StatusCode::FORBIDDEN,
        StatusCode::FORBIDDEN,
        StatusCode::FORBIDDEN,
    ];
    for ((route, status, _), want) in got.iter().zip(want) {
        assert_eq!(*status, want, "{route}");
    }
    assert_eq!(
        app.count("SELECT count(*) FROM space_audit_log").await,
        before,
        "no refused write reached the chain"
    );
    let r = app.get("/api/v1/spaces/a", &app.admin()).await;
    assert_eq!(json_of(r, StatusCode::OK).await["name"], "Space a");
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_membership_and_its_removal_hold_from_the_next_request() {
    let app = spawn_app().await;
    create_space(&app, "a").await;
    let admin = app.admin();
    // Carol's token carries no role: with no membership she is refused everywhere.
    let carol = bare(&app, "carol", &[]);
    let r = app.get("/api/v1/spaces", &carol).await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    let r = app.get("/api/v1/spaces/a", &carol).await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;

    put_member(&app, &admin, "a", "user:carol", &["reviewer"]).await;
    assert_eq!(
        app.get("/api/v1/spaces/a", &carol).await.status(),
        StatusCode::OK
    );
    assert_eq!(
        listed(&app, &carol).await,
        [("a".into(), json!(["reviewer"]))]
    );

    let r = app
        .delete("/api/v1/spaces/a/members/user:carol", &admin)
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    // The very next request: the space is gone for her, and so is every route.
    let r = app.get("/api/v1/spaces", &carol).await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    let r = app.get("/api/v1/spaces/a", &carol).await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    // With a role of her token she is someone again, and the space is 404 to her.
    let token = app.token("carol", &[kh_review::web::auth::Role::Reviewer]);
    let r = app.get("/api/v1/spaces/a", &token).await;
    expect_error(r, StatusCode::NOT_FOUND, "NOT_FOUND").await;
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_groups_membership_grants_its_roles_to_every_token_in_the_group() {
    let app = spawn_app().await;
    create_space(&app, "legal").await;
    let admin = app.admin();
    put_member(
        &app,
        &admin,
        "legal",
        "group:lawyers",
        &["author", "reviewer"],
    )
    .await;
    put_member(&app, &admin, "legal", "user:dave", &["space_admin"]).await;
    // Dave is in the group, and a member himself: the union of both.
    let dave = bare(&app, "dave", &["lawyers"]);
    let roles = json!(["author", "reviewer", "space_admin"]);
    assert_eq!(listed(&app, &dave).await, [("legal".into(), roles)]);
    // Erin is only in the group: an author and a reviewer there, not its admin.
    let erin = bare(&app, "erin", &["lawyers", "other"]);
    assert_eq!(
        listed(&app, &erin).await,
        [("legal".into(), json!(["author", "reviewer"]))]
    );
    let doc = json!({"title": "NDA", "body": "Terms.", "space": "legal"});
    let r = app.post("/api/v1/documents", &erin, doc).await;
    let doc = json_of(r, StatusCode::CREATED).await;
    assert_eq!(doc["space"], "legal");
    let r = send(
        &app,
        Method::PATCH,
        "/api/v1/spaces/legal",
        &erin,
        Some(json!({"name": "x"})),
    );
    expect_error(r.await, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    // The group's membership removed: the next request of a group member has no role.
    let r = app
        .delete("/api/v1/spaces/legal/members/group:lawyers", &dave)
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let r = app.get("/api/v1/spaces/legal", &erin).await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    assert_eq!(
        listed(&app, &dave).await,
        [("legal".into(), json!(["space_admin"]))]
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_space_admin_is_removed_or_demoted_only_by_the_platform_admin() {
    let app = spawn_app().await;
    create_space(&app, "a").await;
    let admin = app.admin();
    put_member(&app, &admin, "a", "user:ada", &["space_admin", "author"]).await;
    let ada = bare(&app, "ada", &[]);
    let before = app.count("SELECT count(*) FROM space_audit_log").await;
    // Ada is its only space admin: she may neither demote nor remove herself.
    let (status, v) = put_member(&app, &ada, "a", "user:ada", &["author"]).await;
    assert_eq!(
        (status, &v["code"]),
        (StatusCode::FORBIDDEN, &json!("FORBIDDEN")),
        "{v}"
    );
    assert!(v["message"].as_str().unwrap().contains("last"), "{v}");
    let r = app.delete("/api/v1/spaces/a/members/user:ada", &ada).await;
    expect_error(r, StatusCode::FORBIDDEN, "FORBIDDEN").await;
    assert_eq!(
        app.count("SELECT count(*) FROM space_audit_log").await,
        before
    );
    let row = "SELECT count(*) FROM space_members WHERE subject = 'user:ada' \
               AND roles = '{author,space_admin}'";
    assert_eq!(app.count(row).await, 1, "her membership as it was");

    // With a second space admin (a group's), she may step down.
    put_member(&app, &ada, "a", "group:admins", &["space_admin"]).await;
    let (status, v) = put_member(&app, &ada, "a", "user:ada", &["author"]).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    // Now the group is the last one: the platform admin may remove it all the same.
    let r = app
        .delete("/api/v1/spaces/a/members/group:admins", &admin)
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let admins = "SELECT count(*) FROM space_members WHERE space_id = 'a' \
                  AND 'space_admin' = ANY(roles)";
    assert_eq!(app.count(admins).await, 0);
    app.finish().await;
}
