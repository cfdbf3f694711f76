//! The console's spaces over plain HTTP: the switcher offers the caller's spaces and no
//! other; the queue and the documents of the space a URL names (none: `default`, or the
//! caller's first space with the page's role), a title search; the create form's space; a
//! space's members page, its forms for its space admins alone, the last space admin kept,
//! and a change that holds from the next request on.

use reqwest::StatusCode;
use serde_json::Value;

use crate::support::app::{spawn_app, TestApp};

/// GET `path` as `token`: its status and body.
async fn page(app: &TestApp, path: &str, token: &str) -> (StatusCode, String) {
    let r = app.get(path, token).await;
    (r.status(), r.text().await.unwrap())
}

/// POST `form` to `path` as `token`: its status, `HX-Redirect` and body.
async fn post_form(
    app: &TestApp,
    path: &str,
    token: &str,
    form: &[(&str, &str)],
) -> (StatusCode, Option<String>, String) {
    let r = app.client.post(app.url(path)).bearer_auth(token).form(form);
    let r = r.send().await.unwrap();
    let redirect = r
        .headers()
        .get("hx-redirect")
        .map(|v| v.to_str().unwrap().to_string());
    (r.status(), redirect, r.text().await.unwrap())
}

fn code(body: &str) -> &str {
    let (_, rest) = body.split_once("data-code=\"").unwrap_or(("", ""));
    rest.split_once('"').map_or("", |(c, _)| c)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_switcher_offers_the_callers_spaces_and_the_queue_follows_it() {
    let app = spawn_app().await;
    for key in ["hr", "eng"] {
        app.space(key).await;
    }
    app.grant("hr", "user:ann", &["reviewer"]).await;
    app.grant("eng", "user:ann", &["author"]).await;
    app.grant("hr", "user:cat", &["author"]).await;
    let (ann, cat) = (app.member("ann"), app.member("cat"));
    let (hr_doc, _) = app.pending_in("hr", &cat, "Parental leave").await;
    let (default_doc, _) = app.pending_review().await;

    let (s, all) = page(&app, "/console/f/spaces?to=documents", &ann).await;
    assert_eq!(s, StatusCode::OK);
    for (key, offered) in [("hr", true), ("eng", true), ("default", false)] {
        let option = format!("<option value=\"{key}\"");
        assert_eq!(all.contains(&option), offered, "{key}: {all}");
    }
    assert!(all.contains("action=\"/console/documents\""), "{all}");
    let (_, queue) = page(&app, "/console/f/spaces?to=queue", &ann).await;
    assert!(queue.contains("<option value=\"hr\" selected"), "{queue}");
    assert!(
        !queue.contains("value=\"eng\""),
        "ann reviews in hr only: {queue}"
    );
    assert!(queue.contains("href=\"/console/spaces/hr/members\""));
    // A space ann holds no role in is never named, whether it exists or not.
    for other in ["default", "nope"] {
        let (s, sw) = page(&app, &format!("/console/f/spaces?space={other}"), &ann).await;
        assert_eq!(s, StatusCode::OK);
        assert!(!sw.contains(other), "{other}: {sw}");
        assert!(
            sw.contains("<option value=\"\" selected>Choose a space"),
            "{sw}"
        );
    }

    // The queue: no space named is ann's first reviewer space; named: that space's.
    let (s, q) = page(&app, "/console/f/queue", &ann).await;
    assert_eq!(s, StatusCode::OK, "{q}");
    assert!(
        q.contains("data-space=\"hr\"") && q.contains(&hr_doc),
        "{q}"
    );
    assert!(!q.contains(&default_doc));
    let bob = app.reviewer();
    let (_, q) = page(&app, "/console/f/queue", &bob).await;
    assert!(q.contains("data-space=\"default\"") && q.contains(&default_doc));
    assert!(!q.contains(&hr_doc), "bob has no role in hr: {q}");
    for (space, status, c) in [
        ("hr", StatusCode::NOT_FOUND, "NOT_FOUND"),
        ("nope", StatusCode::NOT_FOUND, "NOT_FOUND"),
        (
            "Not-A-Key",
            StatusCode::UNPROCESSABLE_ENTITY,
            "VALIDATION_FAILED",
        ),
    ] {
        let (s, body) = page(&app, &format!("/console/f/queue?space={space}"), &bob).await;
        assert_eq!((s, code(&body)), (status, c), "{space}");
    }
    let (s, body) = page(&app, "/console/f/queue?space=eng", &ann).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "ann is an author of eng: {body}");
    // The shell hands its space to the switcher and to the queue's fragment.
    let r = app
        .client
        .get(app.url("/console/queue?space=hr"))
        .send()
        .await;
    let shell = r.unwrap().text().await.unwrap();
    assert!(
        shell.contains("hx-get=\"/console/f/spaces?to=queue&#38;space=hr\""),
        "{shell}"
    );
    assert!(
        shell.contains("hx-get=\"/console/f/queue?space=hr\""),
        "{shell}"
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_space_s_documents_are_listed_searched_and_created_in_it() {
    let app = spawn_app().await;
    app.space("hr").await;
    app.grant("hr", "user:cat", &["author"]).await;
    app.grant("hr", "user:ann", &["reviewer"]).await;
    let (ann, cat) = (app.member("ann"), app.member("cat"));
    let (leave, _) = app.pending_in("hr", &cat, "Parental Leave policy").await;
    let (travel, _) = app.pending_in("hr", &cat, "Travel expenses").await;
    let draft = app.document_in("hr", &cat, "Reorganisation draft").await;

    let (s, list) = page(&app, "/console/f/documents?space=hr", &ann).await;
    assert_eq!(s, StatusCode::OK, "{list}");
    assert!(list.contains(&leave) && list.contains(&travel), "{list}");
    assert!(!list.contains(&draft), "cat's draft is cat's alone: {list}");
    assert!(!list.contains("create-form"), "ann is no author in hr");
    let (_, list) = page(&app, "/console/f/documents?space=hr", &cat).await;
    assert!(list.contains(&draft), "{list}");
    assert!(list.contains(r#"hx-vals='{"space": "hr"}'"#), "{list}");
    // A piece of a title, in any case.
    let (_, found) = page(&app, "/console/f/documents?space=hr&q=LEAVE", &ann).await;
    assert!(
        found.contains(&leave) && !found.contains(&travel),
        "{found}"
    );
    assert!(found.contains("value=\"LEAVE\""), "the box keeps the query");
    let (_, none) = page(&app, "/console/f/documents?space=hr&q=zzz", &ann).await;
    assert!(none.contains("id=\"no-documents\""), "{none}");
    let (s, body) = page(&app, "/console/f/documents?space=hr&cursor=x", &ann).await;
    assert_eq!(
        (s, code(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED")
    );
    let (s, body) = page(&app, "/console/f/documents?space=hr", &app.author()).await;
    assert_eq!((s, code(&body)), (StatusCode::NOT_FOUND, "NOT_FOUND"));

    // The create form's space: an author there 201, a reviewer 403, no role 404; none named:
    // default.
    let create = |space: &'static str| [("title", "New"), ("body", "Text."), ("space", space)];
    let (s, to, _) = post_form(&app, "/console/f/documents", &cat, &create("hr")).await;
    assert_eq!(s, StatusCode::CREATED);
    let id = to.unwrap().rsplit('/').next().unwrap().to_string();
    let doc: Value = app
        .get(&format!("/api/v1/documents/{id}"), &cat)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(doc["space"], "hr");
    let (s, _, body) = post_form(&app, "/console/f/documents", &ann, &create("hr")).await;
    assert_eq!((s, code(&body)), (StatusCode::FORBIDDEN, "FORBIDDEN"));
    let (s, _, body) = post_form(&app, "/console/f/documents", &cat, &create("default")).await;
    assert_eq!((s, code(&body)), (StatusCode::NOT_FOUND, "NOT_FOUND"));
    let plain = [("title", "Plain"), ("body", "Text.")];
    let (s, to, _) = post_form(&app, "/console/f/documents", &app.author(), &plain).await;
    assert_eq!(s, StatusCode::CREATED);
    let id = to.unwrap().rsplit('/').next().unwrap().to_string();
    let doc: Value = app
        .get(&format!("/api/v1/documents/{id}"), &app.author())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(doc["space"], "default");
    app.finish().await;
}

const MEMBERS: &str = "/console/f/spaces/hr/members";

/// The space hr, with sam its one space admin and ann a reviewer; the paths of its
/// members' forms (save, remove).
async fn hr(app: &TestApp) -> (String, String) {
    app.space("hr").await;
    app.grant("hr", "user:sam", &["space_admin"]).await;
    app.grant("hr", "user:ann", &["reviewer"]).await;
    (format!("{MEMBERS}/save"), format!("{MEMBERS}/remove"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_space_admin_adds_members_and_a_member_only_reads_them() {
    let app = spawn_app().await;
    let (save, remove) = hr(&app).await;
    let (sam, ann, dan) = (app.member("sam"), app.member("ann"), app.member("dan"));
    let members = MEMBERS;

    // A member reads the list, without the forms; its writes are 403 as in the API.
    let (s, list) = page(&app, members, &ann).await;
    assert_eq!(s, StatusCode::OK, "{list}");
    assert!(list.contains("data-subject=\"user:sam\"") && list.contains("data-admin=\"false\""));
    assert!(
        !list.contains("member-form") && !list.contains("remove-member"),
        "{list}"
    );
    let dan_author = [("kind", "user"), ("name", "dan"), ("roles", "author")];
    let (s, _, body) = post_form(&app, &save, &ann, &dan_author).await;
    assert_eq!((s, code(&body)), (StatusCode::FORBIDDEN, "FORBIDDEN"));
    let (s, _, _) = post_form(&app, &remove, &ann, &[("subject", "user:sam")]).await;
    assert_eq!(s, StatusCode::FORBIDDEN);

    // The space admin adds dan, who holds the role from his next request on.
    assert_eq!(
        app.get("/console/f/me", &dan).await.status(),
        StatusCode::FORBIDDEN
    );
    let (s, _, body) = post_form(&app, &save, &sam, &dan_author).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert!(
        body.contains("user:dan is a member of hr now: author."),
        "{body}"
    );
    assert!(body.contains("data-subject=\"user:dan\""));
    let (_, sw) = page(&app, "/console/f/spaces?to=documents", &dan).await;
    assert!(sw.contains("<option value=\"hr\" selected"), "{sw}");
    let both = [
        ("kind", "group"),
        ("name", "hr/leads"),
        ("roles", "author"),
        ("roles", "reviewer"),
    ];
    let (_, _, body) = post_form(&app, &save, &sam, &both).await;
    assert!(
        body.contains("group:hr/leads is a member of hr now: author, reviewer."),
        "{body}"
    );
    // Edit fills the form with the member's roles.
    let (_, edit) = page(&app, &format!("{members}?edit=group%3Ahr%2Fleads"), &sam).await;
    assert!(edit.contains("value=\"hr/leads\""), "{edit}");
    assert!(
        edit.contains("value=\"reviewer\" checked")
            && !edit.contains("value=\"space_admin\" checked")
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_members_forms_refuse_what_the_api_refuses_and_a_removal_holds_next_request() {
    let app = spawn_app().await;
    let (save, remove) = hr(&app).await;
    app.grant("hr", "user:dan", &["author"]).await;
    let (sam, ann, dan) = (app.member("sam"), app.member("ann"), app.member("dan"));
    assert_eq!(
        app.get("/console/f/me", &dan).await.status(),
        StatusCode::OK
    );
    // Input the API refuses, the console refuses alike, beside the form.
    for bad in [
        vec![("kind", "user"), ("name", "dan")],
        vec![("kind", "user"), ("name", "dan"), ("roles", "owner")],
        vec![("kind", "robot"), ("name", "dan"), ("roles", "author")],
        vec![("kind", "user"), ("name", ""), ("roles", "author")],
    ] {
        let r = app
            .client
            .post(app.url(&save))
            .bearer_auth(&sam)
            .form(&bad)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY, "{bad:?}");
        assert_eq!(r.headers()["hx-retarget"], "#member-error");
    }
    // The last space admin: neither demoted nor removed but by the platform admin, said so.
    let sam_author = [("kind", "user"), ("name", "sam"), ("roles", "author")];
    for (path, form) in [
        (&save, &sam_author[..]),
        (&remove, &[("subject", "user:sam")][..]),
    ] {
        let (s, _, body) = post_form(&app, path, &sam, form).await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{path}");
        assert!(
            body.contains("This is the space&#39;s last space admin"),
            "{body}"
        );
    }
    // Removed: from dan's next request on, he holds no role anywhere.
    let (s, _, body) = post_form(&app, &remove, &sam, &[("subject", "user:dan")]).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert!(
        body.contains("user:dan is no longer a member of hr.")
            && !body.contains("data-subject=\"user:dan\"")
    );
    assert_eq!(
        app.get("/console/f/me", &dan).await.status(),
        StatusCode::FORBIDDEN
    );
    let (s, _, _) = post_form(&app, &remove, &sam, &[("subject", "user:dan")]).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "no membership left");
    let (s, _, _) = post_form(&app, &remove, &app.admin(), &[("subject", "user:sam")]).await;
    assert_eq!(s, StatusCode::OK, "the platform admin may");
    // A key that is not one is 422, on the page and its fragment, as in the API.
    for path in [
        "/console/spaces/Not-A-Key/members",
        "/console/f/spaces/Not-A-Key/members",
    ] {
        let (s, body) = page(&app, path, &ann).await;
        assert_eq!(
            (s, code(&body)),
            (StatusCode::UNPROCESSABLE_ENTITY, "VALIDATION_FAILED")
        );
    }
    app.finish().await;
}
