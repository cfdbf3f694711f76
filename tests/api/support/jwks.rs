//! An identity provider for the JWKS tests: RS256 and ES256 keys made here, and a JWKS
//! endpoint on 127.0.0.1 that publishes some of them (with a `Cache-Control` of the test's
//! choice), counts the fetches it sees, and can fail (503), redirect, hang, or stop.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A signing key of the provider.
pub struct TestKey {
    pub kid: String,
    pub alg: Algorithm,
    encoding: EncodingKey,
    jwk: Value,
    /// The public key as PEM (what an attacker has).
    pub public_pem: String,
}

impl TestKey {
    /// An RSA key (3072 bits); made once per test run and per `n` (keygen is slow).
    pub fn rsa(n: usize) -> &'static TestKey {
        static KEYS: [OnceLock<TestKey>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
        KEYS[n].get_or_init(|| {
            use rsa::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
            use rsa::Generate;
            let key = rsa::PrivateKey::generate();
            let pem = key.to_pkcs8_pem(LineEnding::LF).unwrap();
            let public = key
                .to_public_key()
                .to_public_key_pem(LineEnding::LF)
                .unwrap();
            let encoding = EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap();
            Self::new(format!("rsa-{n}"), Algorithm::RS256, encoding, public)
        })
    }

    /// A P-256 key.
    pub fn ec(n: usize) -> TestKey {
        use p256::elliptic_curve::Generate;
        use p256::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
        let key = p256::SecretKey::generate();
        let pem = key.to_pkcs8_pem(LineEnding::LF).unwrap();
        let public = key.public_key().to_public_key_pem(LineEnding::LF).unwrap();
        let encoding = EncodingKey::from_ec_pem(pem.as_bytes()).unwrap();
        Self::new(format!("ec-{n}"), Algorithm::ES256, encoding, public)
    }

    fn new(kid: String, alg: Algorithm, encoding: EncodingKey, public_pem: String) -> Self {
        let mut jwk = Jwk::from_encoding_key(&encoding, alg).unwrap();
        jwk.common.key_id = Some(kid.clone());
        let jwk = serde_json::to_value(&jwk).unwrap();
        Self {
            kid,
            alg,
            encoding,
            jwk,
            public_pem,
        }
    }

    pub fn jwk(&self) -> Value {
        self.jwk.clone()
    }

    /// A token of these claims, signed with this key and naming it (`kid`).
    pub fn sign(&self, claims: &Value) -> String {
        self.sign_as(&self.kid, claims)
    }

    /// The same, naming `kid` (another key's, or one nobody publishes).
    pub fn sign_as(&self, kid: &str, claims: &Value) -> String {
        self.sign_with(self.alg, kid, claims)
    }

    /// The same, with another algorithm of this key's kind (RS384 for an RSA key).
    pub fn sign_with(&self, alg: Algorithm, kid: &str, claims: &Value) -> String {
        let mut header = Header::new(alg);
        header.kid = Some(kid.to_string());
        jsonwebtoken::encode(&header, claims, &self.encoding).unwrap()
    }
}

/// What the endpoint does with a request.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    Serve,
    /// 503 Service Unavailable.
    Fail,
    /// Reads the request and never answers.
    Hang,
    /// 302 Found to the URL given to [`JwksServer::redirect_to`].
    Redirect,
}

struct State {
    keys: Mutex<Vec<Value>>,
    mode: Mutex<Mode>,
    fetches: AtomicUsize,
    cache_control: Mutex<Option<String>>,
    location: Mutex<String>,
}

/// The JWKS endpoint; stopped when dropped.
pub struct JwksServer {
    pub url: String,
    state: Arc<State>,
    task: JoinHandle<()>,
}

impl JwksServer {
    pub async fn start(keys: &[&TestKey]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/certs", listener.local_addr().unwrap());
        let state = Arc::new(State {
            keys: Mutex::new(keys.iter().map(|k| k.jwk()).collect()),
            mode: Mutex::new(Mode::Serve),
            fetches: AtomicUsize::new(0),
            cache_control: Mutex::new(None),
            location: Mutex::new(String::new()),
        });
        let shared = state.clone();
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                connections.spawn(answer(socket, shared.clone()));
            }
        });
        Self { url, state, task }
    }

    /// Publishes these keys instead (a rotation at the provider).
    pub fn publish(&self, keys: &[&TestKey]) {
        *self.state.keys.lock().unwrap() = keys.iter().map(|k| k.jwk()).collect();
    }

    pub fn set_mode(&self, mode: Mode) {
        *self.state.mode.lock().unwrap() = mode;
    }

    /// Answers every request with a redirect to `url` from now on.
    pub fn redirect_to(&self, url: &str) {
        *self.state.location.lock().unwrap() = url.to_string();
        self.set_mode(Mode::Redirect);
    }

    /// The `Cache-Control` header of the key sets served from now on.
    pub fn set_cache_control(&self, value: &str) {
        *self.state.cache_control.lock().unwrap() = Some(value.to_string());
    }

    /// Requests seen so far (answered or not).
    pub fn fetches(&self) -> usize {
        self.state.fetches.load(Ordering::SeqCst)
    }

    /// Closes the listener and every open connection: connecting is refused from now on.
    pub async fn stop(&self) {
        self.task.abort();
        while !self.task.is_finished() {
            tokio::task::yield_now().await;
        }
    }
}

impl Drop for JwksServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(mut socket: tokio::net::TcpStream, state: Arc<State>) {
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match socket.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    state.fetches.fetch_add(1, Ordering::SeqCst);
    let mode = *state.mode.lock().unwrap();
    let response = match mode {
        Mode::Hang => return std::future::pending().await,
        Mode::Fail => {
            "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                .to_string()
        }
        Mode::Redirect => format!(
            "HTTP/1.1 302 Found\r\nlocation: {}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            state.location.lock().unwrap()
        ),
        Mode::Serve => {
            let body = json!({"keys": *state.keys.lock().unwrap()}).to_string();
            let cache = match &*state.cache_control.lock().unwrap() {
                Some(v) => format!("cache-control: {v}\r\n"),
                None => String::new(),
            };
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n{cache}content-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )
        }
    };
    let _ = socket.write_all(response.as_bytes()).await;
    let _ = socket.shutdown().await;
}
