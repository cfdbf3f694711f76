//! The supported versions, stated and tested: each server this suite runs against is of the
//! release series that `docs/operations.md` states (PostgreSQL's major version, Redis's and
//! RabbitMQ's major.minor; FerretDB exactly, built here from a pinned version), and
//! `docker-compose.yml` runs the same ones. An update that moves a server to another series
//! fails here until the page says so; a point release within it (Debian's security updates
//! land on a fresh machine without a change of ours: PostgreSQL 15.18 became 15.20) does not.

use std::path::Path;

use kh_review_testkit::stores::{amqp_url, mongo_database, pg_admin, redis_client};
use regex::Regex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Each store: its row in the page's table, and the image the compose file runs it from.
const STORES: [(&str, &str); 4] = [
    ("PostgreSQL", "postgres"),
    ("Redis", "redis"),
    ("RabbitMQ", "rabbitmq"),
    ("MongoDB API", "ferretdb/ferretdb"),
];

fn read(file: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap()
}

/// The first version number (`15.18`, `1.24.2`) of the "tested version" cell of `store`'s row.
fn stated(page: &str, store: &str) -> String {
    let row = page
        .lines()
        .find(|l| l.starts_with(&format!("| {store} |")))
        .unwrap_or_else(|| panic!("docs/operations.md has no row for {store}"));
    let cell = row.split('|').nth(2).unwrap();
    let number = Regex::new(r"\d+\.\d+(\.\d+)?").unwrap();
    number.find(cell).unwrap().as_str().to_string()
}

/// The version part of the tag of the compose file's `image`: `15` of `postgres:15`,
/// `3.10` of `rabbitmq:3.10-management`.
fn composed(compose: &str, image: &str) -> String {
    let tag = Regex::new(&format!(r"image:\s*{}:(\d+(\.\d+)*)", regex::escape(image))).unwrap();
    let found = tag.captures(compose);
    found.unwrap_or_else(|| panic!("docker-compose.yml runs no {image} image"))[1].to_string()
}

/// The release series of `version` of `store`, the part the page must match.
fn series(store: &str, version: &str) -> String {
    let parts: Vec<&str> = version.split('.').collect();
    match store {
        "PostgreSQL" => parts[0].to_string(),
        "MongoDB API" => version.to_string(),
        _ => parts[..2.min(parts.len())].join("."),
    }
}

async fn postgres() -> String {
    let mut pg = pg_admin().await.unwrap();
    let v: String = sqlx::query_scalar("SHOW server_version")
        .fetch_one(&mut pg)
        .await
        .unwrap();
    v.split_whitespace().next().unwrap().to_string()
}

async fn redis() -> String {
    let client = redis_client().await.unwrap();
    let mut c = client.get_multiplexed_async_connection().await.unwrap();
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut c)
        .await
        .unwrap();
    let line = info.lines().find_map(|l| l.strip_prefix("redis_version:"));
    line.unwrap().trim().to_string()
}

/// The `version` the broker announces in its `Connection.Start` (AMQP 0-9-1 sends its
/// server properties before anyone signs in): a long string, its length in four bytes.
async fn rabbitmq() -> String {
    let url = amqp_url();
    let host = url.rsplit_once('@').map_or(url.as_str(), |(_, h)| h);
    let addr = host.split('/').next().unwrap().to_string();
    let mut conn = tokio::net::TcpStream::connect(&addr).await.unwrap();
    conn.write_all(b"AMQP\x00\x00\x09\x01").await.unwrap();
    let mut frame = vec![0u8; 8192];
    let mut got = 0;
    let at = loop {
        let n = conn.read(&mut frame[got..]).await.unwrap();
        assert!(n > 0, "RabbitMQ closed before sending Connection.Start");
        got += n;
        let key = b"\x07versionS";
        let start = frame[..got].windows(key.len()).position(|w| w == key);
        if let Some(i) = start.filter(|i| got >= i + key.len() + 4) {
            break i + key.len();
        }
    };
    let len = u32::from_be_bytes(frame[at..at + 4].try_into().unwrap()) as usize;
    while got < at + 4 + len {
        got += conn.read(&mut frame[got..]).await.unwrap();
    }
    String::from_utf8(frame[at + 4..at + 4 + len].to_vec()).unwrap()
}

/// FerretDB's own version, from `buildInfo` (whose `version` is the MongoDB it speaks for).
async fn ferretdb() -> String {
    let db = mongo_database("admin").await.unwrap();
    let info = db
        .run_command(mongodb::bson::doc! {"buildInfo": 1})
        .await
        .unwrap();
    let v = info.get_str("ferretdbVersion").unwrap();
    v.trim_start_matches('v').to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_tested_are_the_versions_the_docs_state_and_compose_runs() {
    let page = read("docs/operations.md");
    let compose = read("docker-compose.yml");
    let running = [
        postgres().await,
        redis().await,
        rabbitmq().await,
        ferretdb().await,
    ];
    for ((store, image), running) in STORES.into_iter().zip(running) {
        let stated = stated(&page, store);
        assert_eq!(
            series(store, &running),
            series(store, &stated),
            "{store}: the suite runs {running}, docs/operations.md states {stated}: update the page"
        );
        let tag = composed(&compose, image);
        let same = running == tag || running.starts_with(&format!("{tag}."));
        assert!(
            same,
            "{store}: docker-compose.yml runs {image}:{tag}, the suite tests {running}"
        );
    }
}
