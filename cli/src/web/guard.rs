//! Who may ask what: Host, token and CSRF checks on every request, security
//! headers on every response, errors as JSON; and the page's three files.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use robotmem::{Error, Status};
use serde_json::json;

use super::App;

const PAGE: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/app.css");

/// The header a write must carry (a cross-site form or a simple request cannot).
pub const CSRF_HEADER: &str = "x-robotmem-csrf";

/// A JSON error response.
pub fn error(code: StatusCode, status: &str, message: impl Into<String>) -> Response {
    let body = json!({"error": {"status": status, "message": message.into()}});
    (code, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

/// The HTTP status of a library error.
pub fn from_error(e: &Error) -> Response {
    let code = match e.status {
        Status::InvalidArgument => StatusCode::BAD_REQUEST,
        Status::NotFound => StatusCode::NOT_FOUND,
        Status::Duplicate | Status::InvalidState => StatusCode::CONFLICT,
        Status::Busy => StatusCode::SERVICE_UNAVAILABLE,
        Status::ReadOnly => StatusCode::FORBIDDEN,
        Status::Full | Status::OverBudget => StatusCode::INSUFFICIENT_STORAGE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    error(code, e.status.name(), e.message.clone())
}

/// What a Host header (or an absolute URI's authority) names.
#[derive(Debug, PartialEq)]
enum Host {
    Loopback,
    Other,
    /// Not `name[:port]` with a DNS name, an IPv4 address or a bracketed IPv6
    /// address and a port 1–65535 (userinfo, junk after `]`, a named port…).
    Malformed,
}

fn port_ok(p: Option<&str>) -> bool {
    p.is_none_or(|p| {
        p.len() <= 5
            && p.bytes().all(|b| b.is_ascii_digit())
            && p.parse::<u32>().is_ok_and(|n| (1..=65535).contains(&n))
    })
}

fn classify(host: &str) -> Host {
    if let Some(rest) = host.strip_prefix('[') {
        let Some((v6, after)) = rest.split_once(']') else { return Host::Malformed };
        let Ok(ip) = v6.parse::<std::net::Ipv6Addr>() else { return Host::Malformed };
        let port = match after {
            "" => None,
            p => match p.strip_prefix(':') {
                Some(p) => Some(p),
                None => return Host::Malformed,
            },
        };
        return match (port_ok(port), ip.is_loopback()) {
            (false, _) => Host::Malformed,
            (true, true) => Host::Loopback,
            (true, false) => Host::Other,
        };
    }
    let (name, port) = host.split_once(':').map_or((host, None), |(n, p)| (n, Some(p)));
    let name_ok = name.len() <= 253 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    if !name_ok || !port_ok(port) || (name.is_empty() && port.is_some()) {
        return Host::Malformed;
    }
    // An address, not a prefix: "127.evil.example" is a name an attacker's DNS answers.
    let loopback =
        name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback());
    if loopback {
        Host::Loopback
    } else {
        Host::Other
    }
}

/// The Host check: exactly one well-formed Host header (and an absolute URI's
/// authority well-formed too), else 400; on a loopback-only console both must
/// name loopback, else 403. With a token any well-formed name is served.
fn host_refusal(app: &App, req: &Request<Body>) -> Option<Response> {
    let mut hosts = req.headers().get_all(header::HOST).iter();
    let (Some(host), None) = (hosts.next(), hosts.next()) else {
        return Some(error(StatusCode::BAD_REQUEST, "RM_BAD_HOST", "a request needs exactly one Host header"));
    };
    let named = [Some(host.to_str().unwrap_or("<not ASCII>")), req.uri().authority().map(|a| a.as_str())];
    let kinds: Vec<Host> = named.into_iter().flatten().map(classify).collect();
    if kinds.contains(&Host::Malformed) {
        return Some(error(
            StatusCode::BAD_REQUEST,
            "RM_BAD_HOST",
            "the Host header or the request target names no valid host",
        ));
    }
    if app.loopback_only && kinds.contains(&Host::Other) {
        return Some(error(
            StatusCode::FORBIDDEN,
            "RM_FORBIDDEN",
            "this console answers only requests addressed to localhost",
        ));
    }
    None
}

/// Compares without stopping at the first difference (no timing oracle).
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn authorised(app: &App, headers: &HeaderMap) -> bool {
    let Some(token) = &app.token else { return true };
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| same(t.as_bytes(), token.as_bytes()))
}

/// A write from this console's page: the CSRF header, and a same-origin Origin if any.
fn same_origin_write(headers: &HeaderMap) -> std::result::Result<(), &'static str> {
    if headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok()) != Some("1") {
        return Err("writes need the header X-Robotmem-Csrf: 1");
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
        let origin = origin.to_str().unwrap_or("");
        let ours = [format!("http://{host}"), format!("https://{host}")];
        if !ours.iter().any(|o| o == origin) {
            return Err("the request comes from another origin");
        }
    }
    Ok(())
}

/// The security headers every response carries.
pub fn secure(mut r: Response) -> Response {
    let h = r.headers_mut();
    let set = |h: &mut HeaderMap, k: &'static str, v: &'static str| {
        h.insert(k, HeaderValue::from_static(v));
    };
    set(h, "content-security-policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    set(h, "x-content-type-options", "nosniff");
    set(h, "referrer-policy", "no-referrer");
    set(h, "x-frame-options", "DENY");
    set(h, "cache-control", "no-store");
    r
}

/// Runs before every route.
pub async fn check(State(app): State<Arc<App>>, req: Request<Body>, next: Next) -> Response {
    if let Some(refused) = host_refusal(&app, &req) {
        return secure(refused);
    }
    let headers = req.headers();
    let is_api = req.uri().path().starts_with("/api/");
    if is_api && !authorised(&app, headers) {
        let mut r = error(StatusCode::UNAUTHORIZED, "RM_UNAUTHORIZED", "a valid bearer token is required");
        r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return secure(r);
    }
    if matches!(*req.method(), Method::PUT | Method::DELETE | Method::POST | Method::PATCH) {
        if app.read_only {
            return secure(error(StatusCode::FORBIDDEN, "RM_READ_ONLY", "this console is read-only"));
        }
        if let Err(why) = same_origin_write(headers) {
            return secure(error(StatusCode::FORBIDDEN, "RM_CSRF", why));
        }
    }
    let r = next.run(req).await;
    // axum's own rejections (body too large, bad method) are plain text: make them JSON.
    let plain =
        r.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_none_or(|t| t.starts_with("text/plain"));
    let r = if plain && (r.status().is_client_error() || r.status().is_server_error()) {
        let code = r.status();
        let msg = match code {
            StatusCode::PAYLOAD_TOO_LARGE => format!("request body larger than {} bytes", super::MAX_BODY),
            StatusCode::METHOD_NOT_ALLOWED => "method not allowed here".to_string(),
            c => c.canonical_reason().unwrap_or("error").to_string(),
        };
        error(code, "RM_HTTP", msg)
    } else {
        r
    };
    secure(r)
}

pub async fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "RM_NOT_FOUND", "no such page or endpoint")
}

fn file(kind: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

pub async fn page() -> Response {
    file("text/html; charset=utf-8", PAGE)
}

pub async fn script() -> Response {
    file("text/javascript; charset=utf-8", SCRIPT)
}

pub async fn style() -> Response {
    file("text/css; charset=utf-8", STYLE)
}
