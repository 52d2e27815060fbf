//! `robotmem web`: a REST API and one page to see, search and fix a memory file
//! from a browser. Everything is served from the binary (no CDN, nothing fetched
//! at run time).
//!
//! Security: loopback by default, and then only requests whose `Host` names
//! loopback are served (a web page elsewhere cannot reach the console through
//! DNS rebinding); any other address needs `--token`, checked on every API request
//! (`Authorization: Bearer …`); writes (PUT, DELETE) also need the header
//! `X-Robotmem-Csrf: 1` and, when the browser sends one, an `Origin` of this
//! console (a foreign page can neither set that header without a CORS preflight,
//! which is never granted, nor forge its Origin); `--read-only` serves no write;
//! bodies are limited to 64 KiB; every error is a JSON message; the page builds
//! its DOM with `textContent` only, under a Content-Security-Policy that allows no
//! inline script. The server ([`server`], [`conn`]) bounds what a client may hold:
//! time to send a head, a body, time idle, and open connections ([`limits`]).

mod api;
mod conn;
mod guard;
mod limits;
mod server;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

pub use limits::MAX_BODY;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post, put};
use axum::Router;
use clap::Args;
use robotmem::{Db, Error, Result, Status};

#[derive(Args, Debug)]
pub struct WebArgs {
    /// Address to listen on. Anything but loopback needs --token.
    #[arg(long, default_value = "127.0.0.1:6889")]
    bind: String,
    /// Bearer token every API request must carry (at least 16 characters).
    #[arg(long, env = "ROBOTMEM_WEB_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Serve no write endpoint (no edit, no forget).
    #[arg(long)]
    pub(crate) read_only: bool,
    /// Test-only: shorter timeouts and connection cap ("header_ms=300,idle_ms=300,…",
    /// see web/limits.rs), so the tests of the limits run fast. Hidden from --help.
    #[arg(long, hide = true)]
    test_limits: Option<String>,
}

/// What every handler shares.
pub struct App {
    pub db: Db,
    pub read_only: bool,
    pub token: Option<String>,
    /// Bound to loopback without a token: only loopback Host headers are served.
    pub loopback_only: bool,
}

fn config(a: &WebArgs) -> Result<(SocketAddr, Option<String>, bool)> {
    let addr: SocketAddr = a.bind.parse().map_err(|_| {
        Error::invalid(format!("bind must be an IP address and port such as 127.0.0.1:6889 (got {:?})", a.bind))
    })?;
    let token = a.token.clone().filter(|t| !t.is_empty());
    if let Some(t) = &token {
        if t.chars().count() < 16 || t.chars().any(|c| c.is_control() || c == ' ') {
            return Err(Error::invalid("token must have at least 16 characters and no spaces or control characters"));
        }
    }
    let loopback = match addr.ip() {
        IpAddr::V4(ip) => ip.is_loopback(),
        IpAddr::V6(ip) => ip.is_loopback(),
    };
    if !loopback && token.is_none() {
        return Err(Error::invalid(format!(
            "bind {addr} is not loopback: give --token (or ROBOTMEM_WEB_TOKEN) so only its holders are served"
        )));
    }
    Ok((addr, token.clone(), loopback && token.is_none()))
}

/// The router of a console over `app` (also used by tests).
pub fn router(app: Arc<App>) -> Router {
    let mut api = Router::new()
        .route("/api/doctor", get(api::doctor))
        .route("/api/stats", get(api::stats))
        .route("/api/memories", get(api::memories))
        .route("/api/search", get(api::search))
        .route("/api/sessions", get(api::sessions))
        .route("/api/sessions/{id}/memories", get(api::session_memories))
        .route("/api/collections", get(api::collections))
        .route("/api/categories", get(api::categories))
        .route("/api/recent-failures", get(api::recent_failures))
        .route("/api/memory/{id}/history", get(api::history));
    api = if app.read_only {
        api.route("/api/memory/{id}", get(api::memory))
    } else {
        api.route("/api/memory/{id}", get(api::memory).put(api::update).delete(api::forget))
            .route("/api/memory/{id}/expiry", put(api::set_expiry))
            .route("/api/purge", post(api::purge))
    };
    Router::new()
        .route("/", get(guard::page))
        .route("/app.js", get(guard::script))
        .route("/app.css", get(guard::style))
        .merge(api)
        .fallback(guard::not_found)
        .layer(axum::middleware::from_fn_with_state(app.clone(), guard::check))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(app)
}

/// Serves the console until Ctrl-C.
pub fn serve(db: Db, a: &WebArgs) -> Result<()> {
    let (addr, token, loopback_only) = config(a)?;
    let limits = limits::Limits::for_tests(a.test_limits.as_deref())?;
    // A file this user may not write is served read-only too (the library opened it so).
    let read_only = a.read_only || db.options().read_only;
    let app = Arc::new(App { db, read_only, token, loopback_only });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::new(Status::Io, format!("cannot start the web server: {e}")))?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| Error::new(Status::Io, format!("cannot listen on {addr}: {e}")))?;
        let local = listener.local_addr().map_err(|e| Error::new(Status::Io, e.to_string()))?;
        eprintln!(
            "robotmem web: http://{local}/ ({}{})  Ctrl-C stops it",
            if app.token.is_some() { "token required" } else { "loopback only" },
            if app.read_only { ", read-only" } else { "" }
        );
        server::run(listener, router(app), limits, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await;
        Ok(())
    })
}
