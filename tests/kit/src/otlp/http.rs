//! One request to the receiver and its answer, as the OTLP/HTTP specification has them:
//! `200` with an `ExportTraceServiceResponse` (its `partial_success` naming the spans it
//! refused), `400` for a body that does not decode, `415` for any other content type or a
//! compressed body, `413` past the size limit, `404`/`405` elsewhere; every error with a
//! `google.rpc.Status` in protobuf as its body.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, CONTENT_ENCODING, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message;

use super::{decode, Store, TRACES_PATH};

pub(super) const PROTOBUF: &str = "application/x-protobuf";

/// The largest body it reads (the exporter's batches are far smaller).
const MAX_BODY: usize = 32 * 1024 * 1024;

/// `google.rpc.Status`, the body of an OTLP/HTTP error (its `details` left out).
#[derive(Clone, PartialEq, Message)]
pub struct RpcStatus {
    #[prost(int32, tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub message: String,
}

/// gRPC's codes, which `RpcStatus::code` holds.
const INVALID_ARGUMENT: i32 = 3;
const NOT_FOUND: i32 = 5;
const RESOURCE_EXHAUSTED: i32 = 8;
const UNIMPLEMENTED: i32 = 12;

pub(super) async fn answer(req: Request<Incoming>, store: &Store) -> Response<Full<Bytes>> {
    if req.uri().path() != TRACES_PATH {
        let message = format!("only {TRACES_PATH} is served here");
        return refuse(StatusCode::NOT_FOUND, NOT_FOUND, message);
    }
    if req.method() != Method::POST {
        let mut r = refuse(
            StatusCode::METHOD_NOT_ALLOWED,
            UNIMPLEMENTED,
            "POST only".into(),
        );
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("POST"));
        return r;
    }
    if let Some(why) = unsupported(&req) {
        return refuse(StatusCode::UNSUPPORTED_MEDIA_TYPE, UNIMPLEMENTED, why);
    }
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            let message = format!("the body is over {MAX_BODY} bytes");
            return refuse(StatusCode::PAYLOAD_TOO_LARGE, RESOURCE_EXHAUSTED, message);
        }
        Err(e) => {
            let message = format!("the body could not be read: {e}");
            return refuse(StatusCode::BAD_REQUEST, INVALID_ARGUMENT, message);
        }
    };
    let request = match ExportTraceServiceRequest::decode(body) {
        Ok(request) => request,
        Err(e) => {
            let message = format!("not an ExportTraceServiceRequest: {e}");
            return refuse(StatusCode::BAD_REQUEST, INVALID_ARGUMENT, message);
        }
    };
    let decoded = decode::spans(request);
    store.add(decoded.spans);
    let partial_success = (decoded.rejected > 0).then_some(ExportTracePartialSuccess {
        rejected_spans: decoded.rejected,
        error_message: decoded.why_rejected,
    });
    let response = ExportTraceServiceResponse { partial_success };
    protobuf(StatusCode::OK, response.encode_to_vec())
}

/// Why the body is not one it reads: not protobuf (OTLP/JSON included), or compressed.
fn unsupported(req: &Request<Incoming>) -> Option<String> {
    let header = |name| req.headers().get(name).and_then(|v| v.to_str().ok());
    let media = header(CONTENT_TYPE).map(|t| t.split(';').next().unwrap_or("").trim());
    if !media.is_some_and(|m| m.eq_ignore_ascii_case(PROTOBUF)) {
        return Some(format!(
            "content type {media:?}: only {PROTOBUF} is accepted (no OTLP/JSON)"
        ));
    }
    let encoding = header(CONTENT_ENCODING).unwrap_or("identity").trim();
    (!encoding.eq_ignore_ascii_case("identity"))
        .then(|| format!("content encoding {encoding}: only uncompressed bodies are accepted"))
}

fn refuse(status: StatusCode, code: i32, message: String) -> Response<Full<Bytes>> {
    protobuf(status, RpcStatus { code, message }.encode_to_vec())
}

fn protobuf(status: StatusCode, body: Vec<u8>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(PROTOBUF));
    r
}
