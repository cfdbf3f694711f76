//! The test harness itself: a test that fails still cleans up after itself.

use futures_util::FutureExt;
use sqlx::{Connection as _, PgConnection};

use crate::support::app::spawn_app;
use crate::support::inspect::redis_cmd;
use kh_review_testkit::stores::{mongo_url, pg_url, redis_url};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_that_panics_still_drops_its_stores() {
    let names = std::sync::Mutex::new(None);
    let failed = std::panic::AssertUnwindSafe(async {
        let app = spawn_app().await;
        let (_, review_id) = app.pending_review().await;
        redis_cmd(&app.redis, &["SET", &app.lock_key_review(&review_id), "x"]).await;
        *names.lock().unwrap() = Some(app.shared.clone());
        panic!("the test fails with its app alive");
    })
    .catch_unwind()
    .await;
    assert!(failed.is_err(), "the test body panicked");
    let shared = names.into_inner().unwrap().expect("the app was spawned");
    let mut admin = PgConnection::connect(&pg_url()).await.unwrap();
    let databases: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_database WHERE datname = $1")
        .bind(&shared.db_name)
        .fetch_one(&mut admin)
        .await
        .unwrap();
    assert_eq!(databases, 0, "the test's database is dropped");
    let client = redis::Client::open(redis_url()).unwrap();
    let mut c = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}*", shared.prefix))
        .query_async(&mut c)
        .await
        .unwrap();
    assert!(
        keys.is_empty(),
        "the test's Redis keys are deleted: {keys:?}"
    );
    let mongo = mongodb::Client::with_uri_str(mongo_url()).await.unwrap();
    let dbs = mongo.list_database_names().await.unwrap();
    assert!(
        !dbs.contains(&shared.mongo_db),
        "the test's MongoDB database is dropped"
    );
}
