//! `robotmem mcp`: the memory as a Model Context Protocol server over stdio
//! (the official Rust SDK, `rmcp`), for agents: the seven tools of the original
//! server (learn, recall, save_perception, forget, update, start_session,
//! end_session) plus `doctor`, and resources `robotmem://stats`,
//! `robotmem://recent-failures` and `robotmem://session/{id}`.
//!
//! Requests are served concurrently: every library call runs on tokio's
//! blocking pool over one shared [`Db`]. stdout carries only protocol
//! messages (a line that is not JSON gets a JSON-RPC parse error, see
//! [`stdio`]); logs go to stderr. stdin EOF or SIGTERM/SIGINT closes the
//! database cleanly.

mod params;
mod resources;
mod stdio;
mod tools;

use std::sync::Arc;

use clap::Args;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use robotmem::{Db, Error, Result};

#[derive(Args, Debug)]
pub struct McpArgs {}

/// The handler: one database shared by every request.
#[derive(Clone)]
struct Server {
    db: Arc<Db>,
}

impl Server {
    /// Runs `f` on the blocking pool; a panic inside is an internal error, not a crash.
    async fn blocking<T: Send + 'static>(&self, f: impl FnOnce(&Db) -> T + Send + 'static) -> std::result::Result<T, ErrorData> {
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
            return Err(ErrorData::invalid_params(format!("unknown tool {:?}", request.name), None));
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
    let served = rt.block_on(async move {
        let (transport, relay) = stdio::relay(tokio::io::stdin(), tokio::io::stdout());
        let running = server
            .serve(transport)
            .await
            .map_err(|e| Error::new(robotmem::Status::Io, format!("MCP session did not start: {e}")))?;
        let token = running.cancellation_token();
        let wait = running.waiting();
        tokio::pin!(wait);
        let quit = tokio::select! {
            r = &mut wait => r,
            _ = stop_signal() => {
                eprintln!("robotmem mcp: signal received, closing");
                token.cancel();
                wait.await
            }
        };
        // Let the last responses reach stdout (on a signal stdin may never end: bounded).
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), relay).await;
        quit.map(|_| ()).map_err(|e| Error::internal(format!("MCP service: {e}")))
    });
    // Requests still running on the blocking pool hold the Db; let them end.
    rt.shutdown_timeout(std::time::Duration::from_secs(10));
    let closed = match Arc::try_unwrap(db) {
        Ok(db) => db.close(),
        Err(_) => Err(Error::internal("a request was still running at shutdown; the database was not closed")),
    };
    served.and(closed)
}

async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
            (Ok(mut t), Ok(mut i)) => {
                tokio::select! { _ = t.recv() => {}, _ = i.recv() => {} }
            }
            _ => std::future::pending().await,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
