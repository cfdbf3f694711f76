//! Clients that are slow or send nothing cannot hold a connection: a body that does not all
//! arrive within `server.body_timeout_ms` is answered 408 and its connection closed; a caller
//! without a valid token (or role) is refused before any of its body is read, on the API and
//! the console; a connection that sends no request, or stays idle after one, is dropped after
//! `server.client_request_timeout_ms` / `server.keep_alive_ms`. Raw TCP clients, since an
//! HTTP client library always sends its body whole.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::app::{spawn_app_with, AppOptions, TestApp};

const BODY_TIMEOUT: Duration = Duration::from_millis(600);
const REQUEST_TIMEOUT: Duration = Duration::from_millis(1000);
const KEEP_ALIVE: Duration = Duration::from_millis(1000);
const DISCONNECT: Duration = Duration::from_millis(1000);
/// How early actix's timers may end: they are set from a clock it reads every 500 ms.
const ACTIX_CLOCK: Duration = Duration::from_millis(550);

/// An app with short client timeouts (the defaults are 10 s, 5 s, 5 s and 1 s; actix's
/// timers take 1 s at least, `config::Settings::validate`).
async fn impatient() -> TestApp {
    spawn_app_with(AppOptions {
        configure: Some(Box::new(|s| {
            s.server.body_timeout = BODY_TIMEOUT;
            s.server.client_request_timeout = REQUEST_TIMEOUT;
            s.server.keep_alive = KEEP_ALIVE;
            s.server.client_disconnect_timeout = DISCONNECT;
        })),
        ..Default::default()
    })
    .await
}

async fn connect(app: &TestApp) -> TcpStream {
    let addr = app.address.trim_start_matches("http://");
    TcpStream::connect(addr).await.expect("the app accepts")
}

/// The head of a POST to `path` announcing a body of `length` bytes.
fn head(path: &str, token: Option<&str>, content_type: &str, length: usize) -> String {
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\n{auth}Content-Type: {content_type}\r\n\
         Content-Length: {length}\r\n\r\n"
    )
}

/// What the server sent until it closed the connection, and when each came: the first
/// bytes, and the end (EOF or a reset). Fails if the server keeps it open past `deadline`.
async fn until_closed(
    stream: &mut (impl AsyncReadExt + Unpin),
    deadline: Duration,
) -> (String, Duration, Duration) {
    let started = Instant::now();
    let mut got = Vec::new();
    let mut first = None;
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_sub(started.elapsed());
        let read = tokio::time::timeout(left, stream.read(&mut buf)).await;
        let read = read.unwrap_or_else(|_| {
            panic!(
                "the server still holds the connection after {deadline:?}; it sent: {:?}",
                String::from_utf8_lossy(&got)
            )
        });
        match read {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                first.get_or_insert(started.elapsed());
                got.extend_from_slice(&buf[..n]);
            }
        }
    }
    let text = String::from_utf8_lossy(&got).into_owned();
    (text, first.unwrap_or(started.elapsed()), started.elapsed())
}

/// Writes one byte of `stream`'s body every 100 ms until the server stops taking them.
fn trickle(mut writer: tokio::net::tcp::OwnedWriteHalf) -> tokio::task::JoinHandle<usize> {
    tokio::spawn(async move {
        let mut sent = 0;
        while writer.write_all(b" ").await.is_ok() && sent < 200 {
            sent += 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        sent
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_trickles_or_stops_is_answered_408_and_its_connection_closed() {
    let app = impatient().await;
    let token = app.author();
    for trickling in [true, false] {
        let stream = connect(&app).await;
        let (mut reader, mut writer) = stream.into_split();
        let start = head("/api/v1/documents", Some(&token), "application/json", 100);
        writer.write_all(start.as_bytes()).await.unwrap();
        writer.write_all(br#"{"title": "slow", "#).await.unwrap();
        let sent = Instant::now();
        // A client that stops keeps its side open: closing it would end the body early.
        let _client = match trickling {
            true => (Some(trickle(writer)), None),
            false => (None, Some(writer)),
        };
        let deadline = BODY_TIMEOUT + DISCONNECT + Duration::from_secs(2);
        let (reply, answered, closed) = until_closed(&mut reader, deadline).await;
        let waited = sent.elapsed();
        assert!(
            reply.starts_with("HTTP/1.1 408"),
            "trickling {trickling}: {reply}"
        );
        assert!(reply.contains(r#""code":"REQUEST_TIMEOUT""#), "{reply}");
        assert!(
            reply.to_ascii_lowercase().contains("connection: close"),
            "{reply}"
        );
        assert!(
            answered >= BODY_TIMEOUT - Duration::from_millis(50),
            "answered after {answered:?}, before the deadline"
        );
        assert!(
            closed <= BODY_TIMEOUT + DISCONNECT + Duration::from_secs(1),
            "trickling {trickling}: closed after {closed:?} ({waited:?})"
        );
    }
    assert_eq!(
        app.count("SELECT count(*) FROM documents").await,
        0,
        "nothing was created"
    );
    app.finish().await;
}

/// The token and the role are checked before any body is read: a POST that announces a
/// body and sends a little of it is refused at once (not after `server.body_timeout_ms`, 10 s
/// here), on the API and on the console, whose forms were read before the token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_who_may_not_post_is_refused_before_the_body_arrives() {
    let app = spawn_app_with(AppOptions::default()).await;
    assert_eq!(app.settings.server.body_timeout, Duration::from_secs(10));
    let (reviewer, author) = (app.reviewer(), app.author());
    let id = uuid::Uuid::new_v4();
    let (json, form) = ("application/json", "application/x-www-form-urlencoded");
    let edit = format!("/console/f/documents/{id}/edit");
    let approve = format!("/console/f/documents/{id}/reviews/{id}/approve");
    let cases = [
        ("/api/v1/documents", None, json, 401),
        ("/api/v1/documents", Some(&reviewer), json, 403),
        ("/console/f/documents", None, form, 401),
        ("/console/f/documents", Some(&reviewer), form, 403),
        (edit.as_str(), None, form, 401),
        (approve.as_str(), Some(&author), form, 403),
    ];
    for (path, token, content_type, status) in cases {
        let stream = connect(&app).await;
        let (mut reader, mut writer) = stream.into_split();
        let start = head(path, token.map(String::as_str), content_type, 1000);
        writer.write_all(start.as_bytes()).await.unwrap();
        writer.write_all(b"title=slow&bo").await.unwrap();
        let deadline = Duration::from_secs(4);
        let (reply, answered, _) = until_closed(&mut reader, deadline).await;
        assert!(
            reply.starts_with(&format!("HTTP/1.1 {status}")),
            "{path}: {reply}"
        );
        assert!(
            answered < Duration::from_secs(2),
            "{path}: answered after {answered:?}"
        );
        drop(writer);
    }
    assert_eq!(app.count("SELECT count(*) FROM documents").await, 0);
    app.finish().await;
}

/// A connection that sends nothing, or its head a line at a time, is dropped after
/// `server.client_request_timeout_ms`; one left idle after a request, after
/// `server.keep_alive_ms` (the defaults, 5 s each, would fail the deadlines here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_and_slow_connections_are_dropped_after_their_timeouts() {
    let app = impatient().await;
    let deadline = Duration::from_secs(3);
    let early = |t: Duration| t.saturating_sub(ACTIX_CLOCK);

    let mut silent = connect(&app).await;
    let (_, _, closed) = until_closed(&mut silent, deadline).await;
    assert!(closed >= early(REQUEST_TIMEOUT), "closed after {closed:?}");

    let stream = connect(&app).await;
    let (mut reader, mut writer) = stream.into_split();
    let slowloris = tokio::spawn(async move {
        let mut lines = 0;
        let mut line = b"GET /healthz HTTP/1.1\r\n".to_vec();
        while writer.write_all(&line).await.is_ok() && lines < 100 {
            lines += 1;
            line = format!("X-Header-{lines}: x\r\n").into_bytes();
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let (reply, _, closed) = until_closed(&mut reader, deadline).await;
    assert!(reply.starts_with("HTTP/1.1 408"), "{reply}");
    assert!(closed >= early(REQUEST_TIMEOUT), "closed after {closed:?}");
    slowloris.abort();

    let mut idle = connect(&app).await;
    let get = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n";
    idle.write_all(get).await.unwrap();
    let (reply, answered, closed) = until_closed(&mut idle, deadline).await;
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(
        closed >= answered + early(KEEP_ALIVE),
        "closed after {closed:?}, answered after {answered:?}"
    );
    app.finish().await;
}
