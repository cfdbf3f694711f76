//! The processes behind a [`super::browser::Browser`]: the one chromedriver of the test
//! binary, the Chromium options of a session (headless, its own profile, loopback only),
//! the proxy that stands for the rest of the network, and the clean-up of a session's
//! processes.

use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::browser::Window;
use kh_review_testkit::proxy::dead_port;

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// Debian's real binary; `/usr/bin/chromium` is a wrapper script around it.
const CHROMIUM: &str = "/usr/lib/chromium/chromium";

/// The running chromedriver: its URL, and the pipe whose end (when this process exits,
/// however it exits) stops it.
struct Driver {
    url: String,
    _lifeline: ChildStdin,
    _shell: Child,
}

/// The chromedriver of this test binary, started on first use. A shell holds it and kills it
/// when its stdin, held here until this process ends, reaches end of file: a static is never
/// dropped, so this is how the driver goes away with the tests.
pub fn driver() -> &'static str {
    static DRIVER: OnceLock<Driver> = OnceLock::new();
    &DRIVER.get_or_init(start_driver).url
}

fn start_driver() -> Driver {
    for binary in [CHROMEDRIVER, CHROMIUM] {
        assert!(
            Path::new(binary).exists(),
            "{binary} is missing: run scripts/browser.sh (installs chromium and chromium-driver)"
        );
    }
    let port = dead_port();
    let mut child = Command::new("sh")
        .args(["-c", r#""$0" "$@" & read -r _; kill "$!""#, CHROMEDRIVER])
        .arg(format!("--port={port}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("sh starts chromedriver");
    let url = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("chromedriver exited at start ({status}): run scripts/browser.sh");
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "chromedriver did not listen on {url} within 10 s"
        );
        std::thread::sleep(Duration::from_millis(20)); // a blocking wait on a condition
    }
    Driver {
        url,
        _lifeline: child.stdin.take().unwrap(),
        _shell: child,
    }
}

/// The `goog:chromeOptions` of a session: headless, its own profile, loopback only.
pub fn chrome_options(profile: &Path, proxy: u16, window: Window) -> Value {
    json!({
        "binary": CHROMIUM,
        "args": [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            format!("--user-data-dir={}", profile.display()),
            format!("--window-size={},{}", window.width.max(500), window.height),
            // Loopback addresses bypass a proxy; everything else goes to the tripwire.
            format!("--proxy-server=http://127.0.0.1:{proxy}"),
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        ],
        // The exact viewport (a headless window is at least 500 px wide, and its size
        // includes the window's frame); a phone-sized one is a touch device too.
        "mobileEmulation": { "deviceMetrics": {
            "width": window.width,
            "height": window.height,
            "pixelRatio": 1,
            "mobile": window.width < 600,
            "touch": window.width < 600,
        } },
    })
}

/// A proxy that notes the target of each request it gets (the first line: `CONNECT host:443`
/// or `GET http://host/...`), then closes the connection without an answer.
pub async fn tripwire(seen: Arc<Mutex<Vec<String>>>, stop: CancellationToken) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let mut conn = tokio::select! {
                _ = stop.cancelled() => return,
                a = listener.accept() => match a { Ok((c, _)) => c, Err(_) => continue },
            };
            let mut head = vec![0u8; 1024];
            let n = tokio::time::timeout(Duration::from_secs(5), conn.read(&mut head)).await;
            let line = match n {
                Ok(Ok(n)) => String::from_utf8_lossy(&head[..n])
                    .lines()
                    .next()
                    .map(str::to_string),
                _ => None,
            };
            seen.lock()
                .unwrap()
                .push(line.unwrap_or_else(|| "(nothing read)".into()));
        }
    });
    port
}

/// Kills (SIGKILL) every process whose command line names `profile` (the Chromium of a
/// session that was not closed, or what is left of one that was) and waits, 5 s at most,
/// until none is left, so that the profile can be removed.
pub fn stop_processes_using(profile: &Path) {
    let needle = format!("--user-data-dir={}", profile.display());
    let started = Instant::now();
    loop {
        let pids = processes_with_arg(&needle);
        if pids.is_empty() || started.elapsed() > Duration::from_secs(5) {
            return;
        }
        for pid in pids {
            let _ = Command::new("kill").args(["-KILL", &pid]).status();
        }
        std::thread::sleep(Duration::from_millis(20)); // a blocking wait on a condition
    }
}

/// The pids of the processes with `arg` on their command line.
fn processes_with_arg(arg: &str) -> Vec<String> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids = Vec::new();
    for entry in procs.flatten() {
        let pid = entry.file_name().to_string_lossy().to_string();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if cmdline.split(|b| *b == 0).any(|a| a == arg.as_bytes()) {
            pids.push(pid);
        }
    }
    pids
}
