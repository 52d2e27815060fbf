//! What one client may hold of the console: time to send a request's head and
//! body, time a kept-alive connection may sit idle, how many connections are
//! open, how large a head and a body may be. The values suit a robot's console
//! (a few people on a LAN, no proxy in front): generous for a browser, short for
//! a client that holds sockets open to lock others out.

use std::time::Duration;

use robotmem::{Error, Result};

/// Largest request body; a larger `Content-Length` is answered 413 at once, unread.
pub const MAX_BODY: usize = 64 * 1024;
/// Longest request target (path and query); longer is answered 414.
pub const MAX_URI: usize = 8 * 1024;
/// Largest request head (request line and headers); larger is answered 431.
pub const MAX_HEAD: usize = 16 * 1024;
/// Most header lines in one request; more is answered 431.
pub const MAX_HEADERS: usize = 64;
/// Time to send a whole request head, from the connection's opening (its first
/// request) or from the head's first byte (later ones); then 408 and close.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Time to send a whole body once its head is in; then 408 and close.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// Time a kept-alive connection may wait for its next request; then closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Time a client has to take a response; then closed.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Most open connections. A new one beyond it closes the connection idle or
/// incomplete for the longest (a request being answered is never closed), so
/// sockets that send nothing or send slowly cannot lock a token holder out;
/// when all are busy answering, the new one gets 503.
pub const MAX_CONNECTIONS: usize = 256;

/// The limits a server runs with: the constants above, or shorter ones in tests.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub header: Duration,
    pub body: Duration,
    pub idle: Duration,
    pub write: Duration,
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header: HEADER_TIMEOUT,
            body: BODY_TIMEOUT,
            idle: IDLE_TIMEOUT,
            write: WRITE_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
        }
    }
}

impl Limits {
    /// The hidden, test-only `--test-limits header_ms=…,body_ms=…,idle_ms=…,max_connections=…`
    /// (any subset): the tests of the timeouts run in a second instead of a minute.
    pub fn for_tests(spec: Option<&str>) -> Result<Limits> {
        let mut l = Limits::default();
        for item in spec.unwrap_or_default().split(',').filter(|s| !s.is_empty()) {
            let bad = || Error::invalid(format!("--test-limits: bad item {item:?}"));
            let (k, v) = item.split_once('=').ok_or_else(bad)?;
            let n: u64 = v.parse().ok().filter(|n| *n > 0).ok_or_else(bad)?;
            match k {
                "header_ms" => l.header = Duration::from_millis(n),
                "body_ms" => l.body = Duration::from_millis(n),
                "idle_ms" => l.idle = Duration::from_millis(n),
                "write_ms" => l.write = Duration::from_millis(n),
                "max_connections" => l.max_connections = usize::try_from(n).map_err(|_| bad())?,
                _ => return Err(bad()),
            }
        }
        Ok(l)
    }
}
