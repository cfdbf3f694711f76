//! Every route of the JSON API's `routes!` table and of the console's, with what a caller
//! who has no role in space A gets when it names something of space A, and why. A route
//! added to either table without a line here fails `the_table_covers_every_route`.

/// Which of space A's documents a request names (`{id}` of a document route, the document
/// of `{review}`; a review route names that document's review).
#[derive(Debug, Clone, Copy)]
pub enum Which {
    /// Submitted, its review pending, a seat on it claimed by an A reviewer.
    Pending,
    /// Approved: published.
    Approved,
    /// Rejected: its author may edit and submit it again.
    Rejected,
}

/// What the path's parameters name.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    /// `{id}`: the document (and `{review}` its current review).
    Doc(Which),
    /// `{id}`: the document's current review (and `{reviewer_id}` the holder of its claim).
    Review(Which),
    /// Space A: `{key}` names it (`{subject}` one of its members), or, with nothing in the
    /// path, the body or the query names it.
    Space,
    /// `{id}`: an outbox row of the pending document.
    Outbox,
    /// `{id}`: a replay id, `{name}` the policy `default`: nothing of space A.
    Other,
}

#[derive(Debug, Clone, Copy)]
pub enum Body {
    None,
    /// A JSON body; `{doc}` stands for the pending document's id.
    Json(&'static str),
    Form(&'static [(&'static str, &'static str)]),
}

#[derive(Debug, Clone, Copy)]
pub struct Req {
    pub target: Target,
    /// The query string, without `?`; `{doc}` stands for the pending document's id.
    pub query: &'static str,
    pub body: Body,
}

/// What a caller with no role in space A gets.
#[derive(Debug, Clone, Copy)]
pub enum Expect {
    /// 404 `NOT_FOUND` (the console: its 404 page), and nothing changes.
    Hidden(Req),
    /// The route needs `space_admin` somewhere: 403 `FORBIDDEN` to a caller that holds it
    /// in no space (decided before anything is read: it says nothing of what the path
    /// names); 404 `NOT_FOUND` to a space admin of another space. Nothing changes.
    SpaceAdmin(Req),
    /// The platform admin's alone: 403 `FORBIDDEN` to anyone else, whatever it names.
    PlatformAdmin(Req),
    /// Names no document, review or space; a GET's answer never carries space A's ids.
    NamesNothing,
    /// A list, scoped to the caller's spaces: asserted by another test.
    List,
}

pub struct Entry {
    pub method: &'static str,
    pub path: &'static str,
    pub expect: Expect,
    pub why: &'static str,
}

const fn req(target: Target, body: Body) -> Req {
    Req {
        target,
        query: "",
        body,
    }
}

const fn doc(w: Which) -> Expect {
    Expect::Hidden(req(Target::Doc(w), Body::None))
}

const fn doc_with(w: Which, body: Body) -> Expect {
    Expect::Hidden(req(Target::Doc(w), body))
}

const fn review(body: Body) -> Expect {
    Expect::Hidden(req(Target::Review(Which::Pending), body))
}

/// `{key}` names space A (and `{subject}` one of its members).
const fn space(body: Body) -> Expect {
    Expect::Hidden(req(Target::Space, body))
}

/// A page of space A's, named by its query (`space=a`).
const fn in_a(query: &'static str) -> Expect {
    Expect::Hidden(Req {
        target: Target::Space,
        query,
        body: Body::None,
    })
}

const fn admin(target: Target, body: Body) -> Expect {
    Expect::PlatformAdmin(req(target, body))
}

const P: Which = Which::Pending;
const NONE: Body = Body::None;
const EMPTY: Body = Body::Json("{}");
const ADMIN_PLAIN: Expect = admin(Target::Other, NONE);

const fn e(method: &'static str, path: &'static str, expect: Expect, why: &'static str) -> Entry {
    Entry {
        method,
        path,
        expect,
        why,
    }
}

const SERVICE: &str = "about the service, not its content: anyone";
const DESCRIBED: &str = "the API's or the events' description: anyone";
const SHELL: &str = "a page's shell: the same HTML for anyone (no token), its fragment decides";
const LIST: &str = "lists: another test (scoped to the caller's spaces by the lists' own tests)";
const ADMIN: &str = "the platform admin's (token role admin) alone";

/// The JSON API's routes, in the order of `kh_review::http::ROUTES`.
#[rustfmt::skip]
pub const API: &[Entry] = &[
    e("get", "/api/v1/openapi.json", Expect::NamesNothing, DESCRIBED),
    e("get", "/healthz", Expect::NamesNothing, SERVICE),
    e("get", "/readyz", Expect::NamesNothing, SERVICE),
    e("get", "/metrics", Expect::NamesNothing, "figures by route pattern, no ids"),
    e("get", "/openapi.json", Expect::NamesNothing, DESCRIBED),
    e("get", "/docs", Expect::NamesNothing, DESCRIBED),
    e("get", "/asyncapi.json", Expect::NamesNothing, DESCRIBED),
    e("get", "/schemas/events/{type}.json", Expect::NamesNothing, DESCRIBED),
    e("post", "/api/v1/documents",
        Expect::Hidden(req(Target::Space, Body::Json(r#"{"title": "Mine now", "body": "x", "space": "a"}"#))),
        "creates in the space its body names: no role there is 404 (roles but not author: 403)"),
    e("get", "/api/v1/documents", Expect::List, LIST),
    e("get", "/api/v1/documents/{id}", doc(P), "reads the document"),
    e("put", "/api/v1/documents/{id}",
        doc_with(Which::Rejected, Body::Json(r#"{"title": "Taken over"}"#)), "edits it"),
    e("post", "/api/v1/documents/{id}/submit", doc_with(Which::Rejected, EMPTY), "submits it"),
    e("get", "/api/v1/documents/{id}/reviews", doc(P), "its review history"),
    e("post", "/api/v1/documents/{id}/withdraw", doc_with(P, EMPTY), "withdraws its review"),
    e("post", "/api/v1/documents/{id}/archive",
        doc_with(P, Body::Json(r#"{"reason": "gone", "version": 1}"#)),
        "archives it (at a version it is not at: the 404 comes first)"),
    e("get", "/api/v1/documents/{id}/published", doc(Which::Approved), "its published copy"),
    e("post", "/api/v1/documents/{id}/comments",
        doc_with(P, Body::Json(r#"{"body": "I was here"}"#)), "comments on it"),
    e("get", "/api/v1/documents/{id}/comments", doc(P), "its comments"),
    e("get", "/api/v1/documents/{id}/diff", doc(Which::Approved), "what its revision changes"),
    e("post", "/api/v1/documents/{id}/lease", doc(Which::Rejected),
        "takes its edit lease (its author holds it: not 409, which would name her)"),
    e("get", "/api/v1/documents/{id}/lease", doc(Which::Rejected), "who is editing it"),
    e("delete", "/api/v1/documents/{id}/lease",
        Expect::Hidden(Req { target: Target::Doc(Which::Rejected), query: "force=true", body: NONE }),
        "breaks its author's edit lease"),
    e("get", "/api/v1/reviews", Expect::List, LIST),
    e("post", "/api/v1/reviews/{id}/approve", review(Body::Json(r#"{"comment": "ok"}"#)), "votes"),
    e("post", "/api/v1/reviews/{id}/reject", review(Body::Json(r#"{"reason": "no"}"#)), "votes"),
    e("post", "/api/v1/reviews/{id}/claim", review(EMPTY), "takes a seat"),
    e("delete", "/api/v1/reviews/{id}/claim", review(NONE), "gives a seat back"),
    e("delete", "/api/v1/reviews/{id}/claims/{reviewer_id}",
        Expect::SpaceAdmin(req(Target::Review(P), NONE)), "ends another reviewer's claim"),
    e("get", "/api/v1/policies", Expect::NamesNothing, "the platform's one catalogue: any role"),
    e("get", "/api/v1/policies/{name}", Expect::NamesNothing, "the platform's one catalogue: any role"),
    e("put", "/api/v1/admin/policies/{name}",
        admin(Target::Other, Body::Json(r#"{"stages": [{"name": "s", "required_approvals": 1}]}"#)), ADMIN),
    e("get", "/api/v1/admin/outbox", ADMIN_PLAIN, ADMIN),
    e("get", "/api/v1/admin/outbox/stats", ADMIN_PLAIN, ADMIN),
    e("post", "/api/v1/admin/outbox/{id}/retry", admin(Target::Outbox, EMPTY),
        "an event of a space-A document: the platform admin's alone"),
    e("post", "/api/v1/admin/outbox/{id}/skip", admin(Target::Outbox, EMPTY),
        "an event of a space-A document: the platform admin's alone"),
    e("post", "/api/v1/admin/replays",
        admin(Target::Other, Body::Json(r#"{"mode": "history", "target_queue": "kh.stolen", "document_ids": ["{doc}"]}"#)),
        "its document_ids filter: the platform admin's alone"),
    e("get", "/api/v1/admin/replays", ADMIN_PLAIN, ADMIN),
    e("get", "/api/v1/admin/replays/{id}", ADMIN_PLAIN, ADMIN),
    e("delete", "/api/v1/admin/replays/{id}", ADMIN_PLAIN, ADMIN),
    e("get", "/api/v1/admin/audit/verify",
        Expect::PlatformAdmin(Req { target: Target::Other, query: "document_id={doc}", body: NONE }),
        "its ?document_id= filter: the platform admin's alone"),
    e("post", "/api/v1/admin/spaces",
        admin(Target::Space, Body::Json(r#"{"key": "a2", "name": "Mine"}"#)), ADMIN),
    e("get", "/api/v1/spaces", Expect::List, "the caller's spaces: routes::spaces lists them per caller"),
    e("get", "/api/v1/spaces/{key}", space(NONE), "reads space A"),
    e("patch", "/api/v1/spaces/{key}", space(Body::Json(r#"{"name": "Taken over"}"#)),
        "renames space A"),
    e("get", "/api/v1/spaces/{key}/members", space(NONE), "lists space A's members"),
    e("put", "/api/v1/spaces/{key}/members/{subject}",
        space(Body::Json(r#"{"roles": ["space_admin"]}"#)), "makes itself an admin of A"),
    e("delete", "/api/v1/spaces/{key}/members/{subject}", space(NONE),
        "removes a member of A"),
    e("post", "/api/v1/spaces/{key}/webhooks",
        space(Body::Json(r#"{"url": "https://hooks.example.com/stolen", "event_types": ["document.approved"]}"#)),
        "sends A's events to itself"),
    e("get", "/api/v1/spaces/{key}/webhooks", space(NONE), "lists A's endpoints"),
    e("get", "/api/v1/spaces/{key}/webhooks/{webhook_id}", space(NONE), "reads A's endpoint"),
    e("patch", "/api/v1/spaces/{key}/webhooks/{webhook_id}", space(Body::Json(r#"{"enabled": true}"#)),
        "enables A's endpoint"),
    e("delete", "/api/v1/spaces/{key}/webhooks/{webhook_id}", space(NONE), "removes A's endpoint"),
    e("post", "/api/v1/spaces/{key}/webhooks/{webhook_id}/rotate", space(NONE),
        "takes A's endpoint's new secret"),
    e("get", "/api/v1/spaces/{key}/webhooks/{webhook_id}/deliveries", space(NONE),
        "reads A's delivery log"),
    e("post", "/api/v1/spaces/{key}/webhooks/{webhook_id}/deliveries/{delivery_id}/resend", space(NONE),
        "sends A's event again"),
];

const COMMENT: Body = Body::Form(&[("comment", "ok")]);

/// The console's routes, in the order of `kh_review::console::PATHS`.
#[rustfmt::skip]
pub const CONSOLE: &[Entry] = &[
    e("get", "/console", Expect::NamesNothing, SHELL),
    e("get", "/console/queue", Expect::NamesNothing, SHELL),
    e("get", "/console/documents", Expect::NamesNothing, SHELL),
    e("get", "/console/mine", Expect::NamesNothing, SHELL),
    e("get", "/console/spaces/{key}/members", Expect::NamesNothing,
        "a shell: the same HTML for any well-formed key, no token, nothing read; its fragment decides"),
    e("get", "/console/operator", Expect::NamesNothing, SHELL),
    e("get", "/console/policies", Expect::NamesNothing, SHELL),
    e("get", "/console/documents/{id}", Expect::NamesNothing,
        "a shell: the same HTML for any id, no token, nothing read; its fragment decides"),
    e("get", "/console/static/{file}", Expect::NamesNothing, "the console's script and style"),
    e("get", "/console/f/me", Expect::NamesNothing, "the caller's own name and roles"),
    e("get", "/console/f/spaces", Expect::List,
        "the caller's spaces (the switcher): routes::console_spaces lists them per caller"),
    e("get", "/console/f/queue", in_a("space=a"), "space A's review queue"),
    e("get", "/console/f/documents", in_a("space=a&q=secret"), "space A's documents, searched"),
    e("get", "/console/f/mine", Expect::List, LIST),
    e("get", "/console/f/spaces/{key}/members", space(NONE), "lists space A's members"),
    e("post", "/console/f/spaces/{key}/members/save",
        space(Body::Form(&[("kind", "user"), ("name", "olga"), ("roles", "space_admin")])),
        "makes itself an admin of A"),
    e("post", "/console/f/spaces/{key}/members/remove", space(Body::Form(&[("subject", "user:rita")])),
        "removes a member of A"),
    e("get", "/console/f/operator", ADMIN_PLAIN, ADMIN),
    e("get", "/console/f/policies", ADMIN_PLAIN, ADMIN),
    e("post", "/console/f/policies/save", admin(Target::Other, Body::Form(&[("name", "x")])), ADMIN),
    e("get", "/console/f/documents/{id}", doc(P), "the document page"),
    e("post", "/console/f/documents",
        Expect::Hidden(req(Target::Space, Body::Form(&[("title", "Mine"), ("body", "x"), ("space", "a")]))),
        "creates in the space its form names (none: default): no role there is 404"),
    e("post", "/console/f/documents/{id}/edit",
        doc_with(Which::Rejected, Body::Form(&[("title", "Taken over"), ("body", "x")])), "edits it"),
    e("get", "/console/f/documents/{id}/lease", doc(Which::Rejected), "who is editing it"),
    e("post", "/console/f/documents/{id}/lease", doc(Which::Rejected), "takes its edit lease"),
    e("post", "/console/f/documents/{id}/lease/take-over", doc(Which::Rejected),
        "breaks its author's edit lease and takes it"),
    e("post", "/console/f/documents/{id}/submit", doc(Which::Rejected), "submits it"),
    e("post", "/console/f/documents/{id}/reviews/{review}/approve", doc_with(P, COMMENT), "votes"),
    e("post", "/console/f/documents/{id}/reviews/{review}/reject",
        doc_with(P, Body::Form(&[("reason", "no")])), "votes"),
    e("post", "/console/f/documents/{id}/reviews/{review}/claim", doc(P), "takes a seat"),
    e("post", "/console/f/documents/{id}/reviews/{review}/give-back", doc(P), "gives a seat back"),
    e("post", "/console/f/documents/{id}/withdraw", doc(P), "withdraws its review"),
    e("post", "/console/f/documents/{id}/archive",
        doc_with(P, Body::Form(&[("reason", "gone"), ("version", "1")])),
        "archives it (at a version it is not at: the 404 comes first)"),
    e("get", "/console/f/documents/{id}/history", doc(P), "its review history"),
    e("get", "/console/f/documents/{id}/comments", doc(P), "its comments"),
    e("post", "/console/f/documents/{id}/comments/add",
        doc_with(P, Body::Form(&[("body", "I was here")])), "comments on it"),
    e("post", "/console/f/outbox/{id}/retry", admin(Target::Outbox, NONE),
        "an event of a space-A document: the platform admin's alone"),
    e("post", "/console/f/outbox/{id}/skip", admin(Target::Outbox, NONE),
        "an event of a space-A document: the platform admin's alone"),
    e("post", "/console/f/replays/{id}/cancel", ADMIN_PLAIN, ADMIN),
    e("post", "/console/f/spaces/{key}/webhooks/{webhook_id}/deliveries/{delivery_id}/resend",
        admin(Target::Space, NONE), "the operator's page: the platform admin's alone"),
];
