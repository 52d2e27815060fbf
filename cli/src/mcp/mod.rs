//! `robotmem mcp`: the memory as a Model Context Protocol server over stdio
//! (the official Rust SDK, `rmcp`), for agents: the seven tools of the original
//! server (learn, recall, save_perception, forget, update, start_session,
//! end_session) plus `doctor`, and resources `robotmem://stats`,
//! `robotmem://recent-failures` and `robotmem://session/{id}`.
//!
//! Requests are served concurrently: every library call runs on tokio's
//! blocking pool over one shared [`Db`]. stdout carries only protocol
//! messages: every line is judged before the SDK sees it and whatever is not a
//! well-formed message gets its JSON-RPC error (see [`gate`] and [`stdio`]);
//! logs go to stderr. stdin EOF or SIGTERM/SIGINT closes the
//! database cleanly.

mod gate;
mod resources;
mod stdio;
mod tools;

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use robotmem::{Db, Error, Result};
use tokio_util::sync::CancellationToken;

#[derive(Args, Debug)]
pub struct McpArgs {}

/// The handler: one database shared by every request.
#[derive(Clone)]
struct Server {
    db: Arc<Db>,
}

impl Server {
    /// Runs `f` on the blocking pool; a panic inside is an internal error, not a crash.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Db) -> T + Send + 'static,
    ) -> std::result::Result<T, ErrorData> {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || f(&db))
            .await
            .map_err(|e| ErrorData::internal_error(format!("the call failed: {e}"), None))
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(Implementation::new("robotmem", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Long-term memory for a robot. learn stores an experience, recall finds relevant ones \
(filter by context with context_filter); wrap an episode in start_session/end_session; \
forget or update wrong memories. Resources: robotmem://stats, robotmem://recent-failures, robotmem://session/{id}.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, ErrorData> {
        if !tools::exists(&request.name) {
            let known = tools::names().join(", ");
            return Err(ErrorData::invalid_params(
                format!("unknown tool {:?} (the tools: {known})", request.name),
                None,
            ));
        }
        let name = request.name.to_string();
        let args = request.arguments;
        Ok(self.blocking(move |db| tools::call(db, &name, args)).await?.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(resources::list()))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(resources::templates()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        Ok(self.blocking(move |db| resources::read(db, &uri)).await??.into())
    }
}

/// Serves MCP on stdin/stdout until EOF or a signal, then closes `db`.
pub fn serve(db: Db, _a: &McpArgs) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::new(robotmem::Status::Io, format!("cannot start the runtime: {e}")))?;
    let db = Arc::new(db);
    let server = Server { db: db.clone() };
    eprintln!("robotmem mcp: serving over stdio (MCP on stdout, logs on stderr)");
    let served = rt.block_on(async move {
        // Handlers first, so a signal even before the handshake closes cleanly.
        let stop = stop_signal().map_err(|e| Error::new(robotmem::Status::Io, format!("cannot watch signals: {e}")))?;
        let ct = CancellationToken::new();
        let on_signal = ct.clone();
        tokio::spawn(async move {
            stop.await;
            eprintln!("robotmem mcp: signal received, closing");
            on_signal.cancel();
        });
        let (transport, relay) = stdio::relay(tokio::io::stdin(), tokio::io::stdout());
        let quit = match server.serve_with_ct(transport, ct.clone()).await {
            Ok(running) => {
                running.waiting().await.map(|_| ()).map_err(|e| Error::internal(format!("MCP service: {e}")))
            }
            Err(_) if ct.is_cancelled() => Ok(()),
            // stdin closed (or garbage) before a handshake: nothing was served.
            Err(e) => {
                eprintln!("robotmem mcp: no MCP session: {e}");
                Ok(())
            }
        };
        // The last responses reach stdout before the process ends.
        let _ = tokio::time::timeout(Duration::from_secs(5), relay).await;
        quit
    });
    // Calls still running on the blocking pool hold the Db: give them time to end.
    let deadline = Instant::now() + Duration::from_secs(30);
    while Arc::strong_count(&db) > 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let closed = match Arc::try_unwrap(db) {
        Ok(db) => db.close(),
        Err(_) => Err(Error::internal("a request was still running at shutdown; the database was not closed")),
    };
    // A blocking read of stdin cannot be interrupted: do not wait for it.
    rt.shutdown_background();
    served.and(closed)
}

/// Resolves on SIGTERM or SIGINT (Ctrl-C elsewhere); registered when called.
fn stop_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut t = signal(SignalKind::terminate())?;
        let mut i = signal(SignalKind::interrupt())?;
        Ok(async move {
            tokio::select! { _ = t.recv() => {}, _ = i.recv() => {} }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
        })
    }
}
