//! `robotmem web` against a client that holds sockets or sends malformed heads
//! (issue 28): slow and idle connections are closed after their timeouts, a
//! flood of incomplete sockets or a process out of file descriptors does not
//! lock out a whole request, oversized or malformed requests get JSON errors
//! with the security headers, and only well-formed loopback hosts are served.
//! Timeouts are shortened with the hidden, test-only `--test-limits`.

#[path = "common/web.rs"]
mod web;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use web::{assert_json_refusal, connect, read_all, request, Reply, Server, TOKEN};

const SHORT: &str = "--test-limits=header_ms=400,body_ms=400,idle_ms=600";

/// A console over an empty file.
fn server(extra: &[&str], fds: Option<u32>) -> Server {
    let dir = tempfile::Builder::new().prefix("robotmem-web-attack").tempdir().unwrap();
    let db = dir.path().join("m.db");
    web::serve(dir, &db, extra, fds)
}

/// Sends `bytes`, then reads until the server closes: the reply and how long it took.
fn send(c: &mut TcpStream, bytes: &[u8]) -> (Reply, Duration) {
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let t = Instant::now();
    c.write_all(bytes).unwrap();
    (read_all(c), t.elapsed())
}

/// One response on a kept-alive connection (its head, then Content-Length bytes).
fn read_one(c: &mut TcpStream) -> Reply {
    let mut raw = Vec::new();
    let mut byte = [0u8; 1];
    while !raw.ends_with(b"\r\n\r\n") {
        assert_eq!(c.read(&mut byte).unwrap(), 1, "closed mid-head: {}", String::from_utf8_lossy(&raw));
        raw.push(byte[0]);
    }
    let head = Reply::parse(&raw);
    let len: usize =
        head.headers.split("content-length: ").nth(1).unwrap().split('\r').next().unwrap().parse().unwrap();
    let mut body = vec![0u8; len];
    c.read_exact(&mut body).unwrap();
    raw.extend_from_slice(&body);
    Reply::parse(&raw)
}

#[test]
fn slow_and_idle_connections_are_closed() {
    let s = server(&[SHORT], None);
    let host = format!("Host: 127.0.0.1:{}\r\n", s.port);
    // Slowloris: a partial request line, partial headers: 408 at the header timeout.
    for partial in ["GET /api/st".to_string(), format!("GET / HTTP/1.1\r\n{host}X-Slow: 1\r\n")] {
        let (r, took) = send(&mut connect(&s), partial.as_bytes());
        assert_json_refusal(&r, 408, "too slowly");
        assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(5), "{took:?}");
    }
    // A socket that sends nothing is closed at the header timeout.
    let (r, took) = send(&mut connect(&s), b"");
    assert_eq!(r.code, 0, "{}", r.headers);
    assert!(took < Duration::from_secs(5), "{took:?}");
    // A body that stalls: 408 at the body timeout.
    let head = format!("PUT /api/memory/1 HTTP/1.1\r\n{host}X-Robotmem-Csrf: 1\r\nContent-Length: 50\r\n\r\n{{\"con");
    let (r, took) = send(&mut connect(&s), head.as_bytes());
    assert_json_refusal(&r, 408, "body came too slowly");
    assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(5), "{took:?}");
    // Kept alive: two requests, then closed after the idle timeout.
    let mut c = connect(&s);
    for _ in 0..2 {
        c.write_all(format!("GET /api/stats HTTP/1.1\r\n{host}\r\n").as_bytes()).unwrap();
        let r = read_one(&mut c);
        assert_eq!((r.code, r.json()["memories"].as_i64()), (200, Some(0)), "{}", r.body);
        assert!(r.headers.contains("connection: keep-alive"), "{}", r.headers);
    }
    let (r, idle) = send(&mut c, b"");
    assert_eq!(r.code, 0);
    assert!(idle >= Duration::from_millis(500) && idle < Duration::from_secs(5), "{idle:?}");
}

#[test]
fn pipelining_head_and_expect_continue() {
    let s = server(&[], None);
    let host = format!("Host: localhost:{}", s.port);
    let mut c = connect(&s);
    let two =
        format!("GET /api/stats HTTP/1.1\r\n{host}\r\n\r\nHEAD / HTTP/1.1\r\n{host}\r\nConnection: close\r\n\r\n");
    c.write_all(two.as_bytes()).unwrap();
    assert_eq!(read_one(&mut c).code, 200);
    let head = read_all(&mut c);
    assert_eq!((head.code, head.body.as_str()), (200, ""), "HEAD has no body");
    assert!(head.headers.contains("connection: close"));

    let mut c = connect(&s);
    let put = format!(
        "PUT /api/memory/7 HTTP/1.1\r\n{host}\r\nX-Robotmem-Csrf: 1\r\nExpect: 100-continue\r\nContent-Length: 2\r\nConnection: close\r\n\r\n"
    );
    c.write_all(put.as_bytes()).unwrap();
    let mut interim = [0u8; 25];
    c.read_exact(&mut interim).unwrap();
    assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    let (r, _) = send(&mut c, b"{}");
    assert_json_refusal(&r, 400, "content");
}

#[test]
fn oversized_and_unframed_requests_get_json() {
    let s = server(&[], None);
    let host = format!("Host: 127.0.0.1:{}", s.port);
    // A Content-Length above 64 KiB: 413 at once, the body unread.
    let big =
        format!("PUT /api/memory/1 HTTP/1.1\r\n{host}\r\nX-Robotmem-Csrf: 1\r\nContent-Length: 100000000\r\n\r\n");
    let (r, took) = send(&mut connect(&s), format!("{big}{}", "x".repeat(100)).as_bytes());
    assert_json_refusal(&r, 413, "larger than 65536");
    assert!(took < Duration::from_secs(2), "{took:?}");
    let uri = format!("GET /api/memories?q={} HTTP/1.1\r\n{host}\r\n\r\n", "a".repeat(9000));
    assert_json_refusal(&send(&mut connect(&s), uri.as_bytes()).0, 414, "target longer");
    let line = format!("GET /{} HTTP/1.1\r\n", "a".repeat(20_000));
    assert_json_refusal(&send(&mut connect(&s), line.as_bytes()).0, 414, "target longer");
    let fat = format!("GET / HTTP/1.1\r\n{host}\r\nX-Fat: {}\r\n\r\n", "b".repeat(20_000));
    assert_json_refusal(&send(&mut connect(&s), fat.as_bytes()).0, 431, "head larger");
    let many: String = (0..70).map(|i| format!("X-H{i}: 1\r\n")).collect();
    let many = format!("GET / HTTP/1.1\r\n{host}\r\n{many}\r\n");
    assert_json_refusal(&send(&mut connect(&s), many.as_bytes()).0, 431, "header lines");
    let chunked =
        format!("PUT /api/memory/1 HTTP/1.1\r\n{host}\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{{}}\r\n0\r\n\r\n");
    assert_json_refusal(&send(&mut connect(&s), chunked.as_bytes()).0, 411, "Content-Length");
    let two = format!("PUT /api/memory/1 HTTP/1.1\r\n{host}\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{{}}");
    assert_json_refusal(&send(&mut connect(&s), two.as_bytes()).0, 400, "Content-Length");
    assert_json_refusal(&send(&mut connect(&s), b"GET / HTTP/1.1\r\nBad Header\r\n\r\n").0, 400, "malformed");
    assert_json_refusal(
        &send(&mut connect(&s), b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n").0,
        400,
        "malformed",
    );
}

#[test]
fn malformed_hosts_are_refused() {
    let s = server(&[], None);
    let p = s.port;
    // 400: not a host[:port] at all.
    for host in [
        format!("127.0.0.1:{p}@evil.example"),
        "[::1]evil.example".into(),
        "localhost:evil".into(),
        "localhost:0".into(),
        "localhost:65536".into(),
        format!("[::1:{p}"),
        format!(":{p}"),
        "local host".into(),
    ] {
        let r = request(&s, "GET", "/api/stats", &[&format!("Host: {host}")], None);
        assert_json_refusal(&r, 400, "valid host");
    }
    let two = [format!("Host: 127.0.0.1:{p}"), "Host: evil.example".into()];
    let r = request(&s, "GET", "/api/stats", &[&two[0], &two[1]], None);
    assert_json_refusal(&r, 400, "exactly one Host");
    let r = Reply::parse(&{
        let mut c = connect(&s);
        c.write_all(b"GET /api/stats HTTP/1.0\r\n\r\n").unwrap();
        let mut raw = Vec::new();
        let _ = c.read_to_end(&mut raw);
        raw
    });
    assert_json_refusal(&r, 400, "exactly one Host");
    // 403: well formed, not loopback; an absolute URI is held to the same rule.
    let local = format!("Host: 127.0.0.1:{p}");
    for (target, code) in [
        ("http://evil.example/api/stats".to_string(), 403),
        (format!("http://127.0.0.1:{p}@evil.example/api/stats"), 400),
        (format!("http://localhost:{p}/api/stats"), 200),
        ("http://[::1]/api/stats".into(), 200),
    ] {
        let r = request(&s, "GET", &target, &[&local], None);
        if code == 200 {
            assert_eq!(r.code, 200, "{target}: {}", r.body);
        } else {
            assert_json_refusal(&r, code, if code == 400 { "valid host" } else { "localhost" });
        }
    }
    for host in ["localhost.", "127.0.0.1.nip.io", "[::2]:80", "0x7f.0.0.1"] {
        assert_json_refusal(&request(&s, "GET", "/", &[&format!("Host: {host}")], None), 403, "localhost");
    }
    drop(s);
    // With a token any well-formed name is served, a malformed one is not.
    let t = server(&["--token", TOKEN], None);
    let auth = format!("Authorization: Bearer {TOKEN}");
    assert_eq!(request(&t, "GET", "/api/stats", &[&auth, "Host: robot-7.lan"], None).code, 200);
    let r = request(&t, "GET", "/api/stats", &[&auth, "Host: robot-7.lan:x@evil.example"], None);
    assert_json_refusal(&r, 400, "valid host");
}

/// Opens `n` sockets; every other one sends the start of a request, then nothing.
fn hold(s: &Server, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|i| {
            let mut c = connect(s);
            if i % 2 == 1 {
                c.write_all(b"GET / HTTP/1.1\r\n").unwrap();
            }
            c
        })
        .collect()
}

/// A correct request with the token is answered within a few seconds.
fn token_holder_gets_in(s: &Server) {
    let t = Instant::now();
    let mut c = connect(s);
    let req = format!(
        "GET /api/stats HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n",
        s.port
    );
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(req.as_bytes()).unwrap();
    let r = read_all(&mut c);
    assert_eq!(r.code, 200, "{}", r.body);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

#[test]
fn held_sockets_do_not_lock_out_the_token_holder() {
    // More incomplete sockets than the cap (256): the oldest are closed, not the newcomer.
    let s = server(&["--token", TOKEN], None);
    let held = hold(&s, 400);
    token_holder_gets_in(&s);
    token_holder_gets_in(&s);
    drop(held);
    // Out of file descriptors long before the cap (the attack's `ulimit -n`): the same.
    let s = server(&["--token", TOKEN], Some(64));
    let held = hold(&s, 300);
    token_holder_gets_in(&s);
    let mut first = held.into_iter().next().unwrap();
    first.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert_eq!(first.read(&mut [0u8; 16]).unwrap_or(0), 0, "the oldest idle socket was closed");
    // A smaller cap: with it full of slow sockets a request is still answered.
    let s = server(&["--token", TOKEN, "--test-limits=max_connections=4"], None);
    let _held = hold(&s, 10);
    token_holder_gets_in(&s);
}
