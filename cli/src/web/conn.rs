//! One connection, HTTP/1.1 read and written here (heads parsed by `httparse`, as
//! hyper does) so every limit is ours and every refusal, even of a request that
//! cannot be parsed, is a JSON error with the security headers: a head must come
//! within [`Limits::header`] and fit [`MAX_HEAD`] / [`MAX_URI`] / [`MAX_HEADERS`]
//! (else 408, 431, 414), a body must have a `Content-Length` (else 411) of at most
//! [`MAX_BODY`] (else 413, unread) and come within [`Limits::body`] (else 408); a
//! kept-alive connection waits [`Limits::idle`] for its next request. A refusal
//! closes the connection.

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri, Version};
use axum::response::Response;
use axum::Router;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{timeout, timeout_at, Instant};
use tower::ServiceExt;

use super::guard::{error, secure};
use super::limits::{Limits, MAX_BODY, MAX_HEAD, MAX_HEADERS, MAX_URI};
use super::server::Slot;

/// Why a request is not served: a JSON answer then close, or just close.
enum Refusal {
    Answer(StatusCode, String),
    Close,
}

fn refusal(code: StatusCode, message: impl Into<String>) -> Refusal {
    Refusal::Answer(code, message.into())
}

/// The JSON error of the console, with its security headers.
fn json_error(code: StatusCode, message: String) -> Response {
    secure(error(code, "RM_HTTP", message))
}

/// Reads more bytes into `buf` before `deadline`: Err(Close) at end of stream,
/// Err(timed_out) past the deadline.
async fn fill(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    deadline: Instant,
    timed_out: impl FnOnce() -> Refusal,
) -> Result<(), Refusal> {
    let mut chunk = [0u8; 8192];
    match timeout_at(deadline, stream.read(&mut chunk)).await {
        Err(_) => Err(timed_out()),
        Ok(Ok(0) | Err(_)) => Err(Refusal::Close),
        Ok(Ok(n)) => {
            buf.extend_from_slice(&chunk[..n]);
            Ok(())
        }
    }
}

/// A parsed head: the request without its body, and the head's length in `buf`.
fn parse_head(buf: &[u8]) -> Result<Option<(axum::http::request::Parts, usize)>, Refusal> {
    let mut lines = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut lines);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(refusal(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                format!("more than {MAX_HEADERS} header lines"),
            ))
        }
        Err(e) => return Err(refusal(StatusCode::BAD_REQUEST, format!("malformed request: {e}"))),
    };
    let bad = |what: &str| refusal(StatusCode::BAD_REQUEST, format!("malformed request: {what}"));
    let target = req.path.unwrap_or_default();
    if target.len() > MAX_URI {
        return Err(refusal(StatusCode::URI_TOO_LONG, format!("request target longer than {MAX_URI} bytes")));
    }
    let mut builder = Request::builder()
        .method(Method::from_bytes(req.method.unwrap_or_default().as_bytes()).map_err(|_| bad("method"))?)
        .uri(target.parse::<Uri>().map_err(|_| bad("request target"))?)
        .version(if req.version == Some(0) { Version::HTTP_10 } else { Version::HTTP_11 });
    let headers = builder.headers_mut().ok_or_else(|| bad("head"))?;
    for h in req.headers.iter() {
        let name = HeaderName::from_bytes(h.name.as_bytes()).map_err(|_| bad("header name"))?;
        headers.append(name, HeaderValue::from_bytes(h.value).map_err(|_| bad("header value"))?);
    }
    let (parts, ()) = builder.body(()).map_err(|_| bad("head"))?.into_parts();
    Ok(Some((parts, len)))
}

/// The next head from `buf` and the stream, before `deadline`.
async fn read_head(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    deadline: Instant,
) -> Result<(axum::http::request::Parts, usize), Refusal> {
    loop {
        let head = parse_head(buf)?;
        if let Some(head) = head.filter(|(_, len)| *len <= MAX_HEAD) {
            return Ok(head);
        }
        if !buf.windows(2).any(|w| w == b"\r\n") && buf.len() > MAX_URI + 32 {
            return Err(refusal(StatusCode::URI_TOO_LONG, format!("request target longer than {MAX_URI} bytes")));
        }
        if buf.len() >= MAX_HEAD {
            return Err(refusal(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                format!("request head larger than {MAX_HEAD} bytes"),
            ));
        }
        fill(stream, buf, deadline, || refusal(StatusCode::REQUEST_TIMEOUT, "the request head came too slowly"))
            .await?;
    }
}

/// The body's length, from its single `Content-Length` (none: empty).
fn body_length(headers: &HeaderMap) -> Result<usize, Refusal> {
    if headers.contains_key(header::TRANSFER_ENCODING) {
        return Err(refusal(StatusCode::LENGTH_REQUIRED, "a body needs a Content-Length (no Transfer-Encoding)"));
    }
    let mut lengths = headers.get_all(header::CONTENT_LENGTH).iter();
    let v = match (lengths.next(), lengths.next()) {
        (None, _) => return Ok(0),
        (Some(v), None) => v,
        (Some(_), Some(_)) => return Err(refusal(StatusCode::BAD_REQUEST, "malformed request: two Content-Length")),
    };
    let v = v.to_str().unwrap_or_default();
    if v.is_empty() || v.len() > 19 || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(refusal(StatusCode::BAD_REQUEST, "malformed request: Content-Length"));
    }
    match v.parse::<usize>() {
        Ok(n) if n <= MAX_BODY => Ok(n),
        _ => Err(refusal(StatusCode::PAYLOAD_TOO_LARGE, format!("request body larger than {MAX_BODY} bytes"))),
    }
}

/// Does the client keep the connection after this request?
fn keeps_alive(parts: &axum::http::request::Parts) -> bool {
    let close = parts
        .headers
        .get_all(header::CONNECTION)
        .iter()
        .any(|v| v.to_str().is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("close"))));
    parts.version == Version::HTTP_11 && !close
}

/// Reads one request (head and body) from the connection, its head before `head_by`.
async fn read_request(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    limits: &Limits,
    head_by: Instant,
) -> Result<(Request, bool), Refusal> {
    let (parts, head_len) = read_head(stream, buf, head_by).await?;
    let length = body_length(&parts.headers)?;
    buf.drain(..head_len);
    let expects = parts.headers.get(header::EXPECT).map(|v| v.as_bytes().to_ascii_lowercase());
    if length > buf.len() && expects.as_deref() == Some(b"100-continue") {
        let _ = timeout(limits.write, stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")).await;
    }
    let deadline = Instant::now() + limits.body;
    while buf.len() < length {
        fill(stream, buf, deadline, || refusal(StatusCode::REQUEST_TIMEOUT, "the request body came too slowly"))
            .await?;
    }
    let body = Bytes::from(buf.drain(..length).collect::<Vec<u8>>());
    let keep = keeps_alive(&parts);
    Ok((Request::from_parts(parts, Body::from(body)), keep))
}

/// Writes `r` (a whole body) within the write limit; false if it could not be.
async fn write_response(stream: &mut TcpStream, r: Response, head_only: bool, keep: bool, limits: &Limits) -> bool {
    let (parts, body) = r.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let reason = parts.status.canonical_reason().unwrap_or("");
    let mut out = format!("HTTP/1.1 {} {reason}\r\n", parts.status.as_u16()).into_bytes();
    for (name, value) in &parts.headers {
        if ![header::CONTENT_LENGTH, header::TRANSFER_ENCODING, header::CONNECTION].contains(name) {
            out.extend_from_slice(format!("{name}: ").as_bytes());
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }
    let date = httpdate::fmt_http_date(std::time::SystemTime::now());
    let connection = if keep { "keep-alive" } else { "close" };
    out.extend_from_slice(format!("date: {date}\r\nconnection: {connection}\r\n").as_bytes());
    out.extend_from_slice(format!("content-length: {}\r\n\r\n", body.len()).as_bytes());
    if !head_only {
        out.extend_from_slice(&body);
    }
    matches!(timeout(limits.write, stream.write_all(&out)).await, Ok(Ok(())))
}

/// Answers a JSON error and closes, reading (for at most a second) what the
/// client still sends: closing with unread bytes would reset the connection and
/// could destroy the answer before the client reads it.
async fn answer_and_close(stream: &mut TcpStream, code: StatusCode, message: String, limits: &Limits) {
    if write_response(stream, json_error(code, message), false, false, limits).await
        && matches!(timeout(limits.write, stream.shutdown()).await, Ok(Ok(())))
    {
        let deadline = Instant::now() + LINGER;
        let mut sink = [0u8; 8192];
        let mut left: usize = 1 << 20;
        while left > 0 {
            match timeout_at(deadline, stream.read(&mut sink)).await {
                Ok(Ok(n)) if n > 0 => left = left.saturating_sub(n),
                _ => break,
            }
        }
    }
}

/// How long a refused connection is drained before it closes.
const LINGER: std::time::Duration = std::time::Duration::from_secs(1);

/// Answers a JSON error without reading the request, and closes.
pub async fn refuse(mut stream: TcpStream, limits: Limits, code: StatusCode, message: &str) {
    answer_and_close(&mut stream, code, message.to_string(), &limits).await;
}

/// Serves requests on one connection until it closes, is refused, or times out.
pub async fn serve(mut stream: TcpStream, router: Router, limits: Limits, slot: &Slot) {
    let mut buf = Vec::new();
    let opened = Instant::now();
    let mut first = true;
    loop {
        if buf.is_empty() {
            // Waiting for the next request: the header limit for the first, then the idle one.
            let deadline = if first { opened + limits.header } else { Instant::now() + limits.idle };
            if fill(&mut stream, &mut buf, deadline, || Refusal::Close).await.is_err() {
                return;
            }
        }
        let head_by = if first { opened } else { Instant::now() } + limits.header;
        first = false;
        let (req, keep) = match read_request(&mut stream, &mut buf, &limits, head_by).await {
            Ok(r) => r,
            Err(Refusal::Close) => return,
            Err(Refusal::Answer(code, message)) => return answer_and_close(&mut stream, code, message, &limits).await,
        };
        if !slot.busy() {
            return;
        }
        let head_only = req.method() == Method::HEAD;
        let response = router.clone().oneshot(req).await.unwrap_or_else(|e| match e {});
        let written = write_response(&mut stream, response, head_only, keep, &limits).await;
        slot.idle();
        if !written || !keep {
            let _ = timeout(limits.write, stream.shutdown()).await;
            return;
        }
    }
}
