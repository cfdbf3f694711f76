//! A real headless Chromium, driven over chromedriver (fantoccini), for the tests of the
//! pages (`pages::` modules; `make test-ui`). `scripts/browser.sh` installs Debian's `chromium`
//! and `chromium-driver`; without them the first `Browser::open` fails loudly.
//!
//! One chromedriver per test binary, started on first use; it exits with the test process
//! (`chromium.rs`). Each [`Browser`] is its own Chromium with its own profile, whose network
//! reaches the loopback addresses only: every other host goes to a proxy of this test that
//! notes what was asked ([`Browser::outside_requests`]) and answers nothing, and no other
//! host name resolves. Waits poll with a deadline and fail with a screenshot.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::chromium::{chrome_options, driver, stop_processes_using, tripwire};
use super::inspect::poll_until;

/// How long a wait for the page waits.
pub const DEADLINE: Duration = Duration::from_secs(15);

/// A browser window's size in CSS pixels.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub width: u32,
    pub height: u32,
}

impl Window {
    pub const DESKTOP: Window = Window {
        width: 1280,
        height: 900,
    };
    pub const PHONE: Window = Window {
        width: 390,
        height: 844,
    };
}

/// One isolated Chromium session: its own profile, window and network limits.
pub struct Browser {
    client: Client,
    base: String,
    profile: PathBuf,
    outside: Arc<Mutex<Vec<String>>>,
    stop_proxy: CancellationToken,
}

impl Browser {
    /// A desktop-sized window (1280x900) on `base` (the app's address, e.g. `app.address`).
    pub async fn open(base: &str) -> Browser {
        Self::open_with(base, Window::DESKTOP).await
    }

    /// A window of `window`'s size on `base`.
    pub async fn open_with(base: &str, window: Window) -> Browser {
        static SESSIONS: AtomicU32 = AtomicU32::new(0);
        let n = SESSIONS.fetch_add(1, Ordering::Relaxed);
        let profile = std::env::temp_dir().join(format!("kh-review-ui-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&profile).unwrap();
        let outside = Arc::new(Mutex::new(Vec::new()));
        let stop_proxy = CancellationToken::new();
        let proxy = tripwire(outside.clone(), stop_proxy.clone()).await;
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            chrome_options(&profile, proxy, window),
        );
        caps.insert("goog:loggingPrefs".into(), json!({ "browser": "ALL" }));
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(driver())
            .await
            .unwrap_or_else(|e| panic!("chromedriver opens a Chromium session: {e}"));
        Browser {
            client,
            base: base.trim_end_matches('/').to_string(),
            profile,
            outside,
            stop_proxy,
        }
    }

    /// The hosts (`host:port`, or the URL asked of the proxy) this browser tried to reach
    /// outside the loopback addresses; none of them was reached.
    pub fn outside_requests(&self) -> Vec<String> {
        self.outside.lock().unwrap().clone()
    }

    /// Goes to `path` on the app (or to `path` itself when it is a full URL) and waits for
    /// the page to load.
    pub async fn goto(&self, path: &str) {
        let url = self.url(path);
        if let Err(e) = self.try_goto(&url).await {
            self.fail(&format!("loading {url}: {e}")).await;
        }
    }

    /// Goes to `url` (a full URL); the browser's error when the page does not load (the
    /// error page's text, e.g. `ERR_PROXY_CONNECTION_FAILED`).
    pub async fn try_goto(&self, url: &str) -> Result<(), String> {
        self.client.goto(url).await.map_err(|e| e.to_string())?;
        let shown = self.client.execute(ERROR_PAGE, Vec::new()).await;
        match shown.map_err(|e| e.to_string())? {
            Value::Null => Ok(()),
            error => Err(error.to_string()),
        }
    }

    /// What the page wrote to its console since the last call (errors, CSP refusals), as
    /// chromedriver gives it: `{level, message, source, timestamp}` each.
    pub async fn console(&self) -> Vec<Value> {
        let id = self.client.session_id().await.ok().flatten();
        let id = id.expect("a session id");
        let url = format!("{}/session/{id}/se/log", driver());
        let r = reqwest::Client::new()
            .post(url)
            .json(&json!({ "type": "browser" }))
            .send()
            .await
            .expect("chromedriver answers");
        let mut body: Value = r.json().await.expect("a JSON body");
        match body["value"].take() {
            Value::Array(entries) => entries,
            other => panic!("chromedriver's browser log is not a list: {other}"),
        }
    }

    fn url(&self, path: &str) -> String {
        if path.contains("://") {
            path.to_string()
        } else {
            format!("{}{path}", self.base)
        }
    }

    /// Runs `script` (a function body: `return` gives the value) with `arguments` = `args`.
    pub async fn eval_with(&self, script: &str, args: Vec<Value>) -> Value {
        match self.client.execute(script, args).await {
            Ok(v) => v,
            Err(e) => self.fail(&format!("script failed: {e}\n{script}")).await,
        }
    }

    /// Runs `script` (a function body: `return` gives the value).
    pub async fn eval(&self, script: &str) -> Value {
        self.eval_with(script, Vec::new()).await
    }

    /// Polls `script` (a function body) until it returns something other than null, false,
    /// 0 or "" and returns that; fails (with a screenshot) after [`DEADLINE`].
    pub async fn wait_until(&self, what: &str, script: &str) -> Value {
        let found = poll_until(DEADLINE, || async {
            let v = self.client.execute(script, Vec::new()).await.ok()?;
            let falsy = v.is_null() || v == json!(false) || v == json!(0) || v == json!("");
            (!falsy).then_some(v)
        })
        .await;
        match found {
            Some(v) => v,
            None => {
                self.fail(&format!("timed out after {DEADLINE:?} waiting for {what}"))
                    .await
            }
        }
    }

    /// Waits until an element matches `css` and is displayed, and returns it.
    pub async fn wait_for(&self, css: &str) -> Element {
        let found = poll_until(DEADLINE, || async {
            let e = self.client.find(Locator::Css(css)).await.ok()?;
            e.is_displayed().await.ok()?.then_some(e)
        })
        .await;
        match found {
            Some(e) => e,
            None => {
                self.fail(&format!("timed out after {DEADLINE:?} waiting for `{css}`"))
                    .await
            }
        }
    }

    /// Waits until the page's visible text contains `text`.
    pub async fn wait_for_text(&self, text: &str) {
        let script = "return document.body && document.body.innerText.includes(arguments[0]);";
        let found = poll_until(DEADLINE, || async {
            let v = self.client.execute(script, vec![json!(text)]).await.ok()?;
            (v == json!(true)).then_some(())
        })
        .await;
        if found.is_none() {
            self.fail(&format!(
                "timed out after {DEADLINE:?} waiting for text {text:?}"
            ))
            .await;
        }
    }

    /// Saves what the window shows as `<repo>/target/ui/<name>.png` and returns the path.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.client.screenshot().await.expect("a screenshot");
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ui");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap();
        path
    }

    /// Fails the test with `message`, after saving a screenshot of the page.
    async fn fail(&self, message: &str) -> ! {
        let name = format!(
            "failed-{}",
            self.profile.file_name().unwrap().to_string_lossy()
        );
        let shot = match self.client.screenshot().await {
            Ok(_) => self.screenshot(&name).await.display().to_string(),
            Err(e) => format!("none ({e})"),
        };
        let url = self.client.current_url().await.map(|u| u.to_string());
        panic!("{message}\n  page: {url:?}\n  screenshot: {shot}");
    }

    /// Ends the session (Chromium exits) and removes its profile.
    pub async fn close(self) {
        // Drop removes the profile and stops any Chromium process the session left.
        let _ = self.client.clone().close().await;
    }
}

/// Acting on the page.
impl Browser {
    /// The fantoccini client, for anything the helpers here do not do.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Waits for `css` and clicks it.
    pub async fn click(&self, css: &str) {
        let e = self.wait_for(css).await;
        if let Err(e) = e.click().await {
            self.fail(&format!("clicking `{css}`: {e}")).await;
        }
    }

    /// Waits for the field `css`, empties it and types `text`.
    pub async fn fill(&self, css: &str, text: &str) {
        let e = self.wait_for(css).await;
        let typed = async {
            e.clear().await?;
            e.send_keys(text).await
        };
        if let Err(e) = typed.await {
            self.fail(&format!("filling `{css}`: {e}")).await;
        }
    }
}

impl Drop for Browser {
    /// Runs after a panic too: no Chromium of this session outlives the test.
    fn drop(&mut self) {
        self.stop_proxy.cancel();
        stop_processes_using(&self.profile);
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// Null on a page that loaded; Chromium's error text on its error page.
const ERROR_PAGE: &str = "return location.href.startsWith('chrome-error:') \
     ? document.body.innerText.replace(/\\s+/g, ' ') : null;";
