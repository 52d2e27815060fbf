//! The accept loop: every connection is counted, and beyond
//! [`Limits::max_connections`] the one idle or incomplete for the longest is
//! closed to make room (a request being answered is never closed). A client that
//! opens many sockets and sends nothing, or sends slowly, therefore cannot lock
//! out one that sends a whole request: the newcomer always gets in. When the
//! process runs out of file descriptors first (a low `ulimit -n`), the cap is
//! lowered to what it can hold with some to spare, by the same eviction.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::http::StatusCode;
use axum::Router;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::conn;
use super::limits::Limits;

struct Entry {
    /// When it last became evictable (opened, or finished a response): lower is older.
    since: u64,
    busy: bool,
    kill: CancellationToken,
}

struct Inner {
    clock: u64,
    open: HashMap<u64, Entry>,
    /// The cap: [`Limits::max_connections`], lowered if descriptors run out first.
    max: usize,
}

/// The open connections.
struct Registry {
    inner: Mutex<Inner>,
}

/// Descriptors kept free for the database (and its temporary files) when the
/// process's limit is lower than the connection cap.
const SPARE_DESCRIPTORS: usize = 32;

/// One connection's place in the registry; leaving drops it.
pub struct Slot {
    id: u64,
    registry: Arc<Registry>,
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Closes the connection idle or incomplete for the longest; false if all are busy.
    fn evict_oldest(inner: &mut Inner) -> bool {
        let oldest = inner.open.iter().filter(|(_, e)| !e.busy).min_by_key(|(_, e)| e.since).map(|(id, _)| *id);
        let Some(e) = oldest.and_then(|id| inner.open.remove(&id)) else { return false };
        e.kill.cancel();
        true
    }

    /// A place for a new connection (making room if needed), or None when every
    /// open connection is answering a request.
    fn admit(self: &Arc<Self>) -> Option<(Slot, CancellationToken)> {
        let mut inner = self.lock();
        if inner.open.len() >= inner.max && !Self::evict_oldest(&mut inner) {
            return None;
        }
        inner.clock += 1;
        let (id, kill) = (inner.clock, CancellationToken::new());
        inner.open.insert(id, Entry { since: id, busy: false, kill: kill.clone() });
        Some((Slot { id, registry: self.clone() }, kill))
    }

    /// Out of descriptors with this many open: lowers the cap to keep
    /// [`SPARE_DESCRIPTORS`] free and evicts down to it; false if none could be.
    fn shrink(&self) -> bool {
        let mut inner = self.lock();
        inner.max = inner.max.min(inner.open.len().saturating_sub(SPARE_DESCRIPTORS).max(1));
        let mut evicted = false;
        while inner.open.len() > inner.max.saturating_sub(1) && Self::evict_oldest(&mut inner) {
            evicted = true;
        }
        evicted
    }
}

impl Slot {
    /// Marks it answering a request (not evictable); false if it was evicted already.
    pub fn busy(&self) -> bool {
        self.registry.lock().open.get_mut(&self.id).map(|e| e.busy = true).is_some()
    }

    /// Marks it waiting again (evictable, as the newest).
    pub fn idle(&self) {
        let mut inner = self.registry.lock();
        inner.clock += 1;
        let now = inner.clock;
        if let Some(e) = inner.open.get_mut(&self.id) {
            (e.busy, e.since) = (false, now);
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.registry.lock().open.remove(&self.id);
    }
}

/// Out of file descriptors (EMFILE, ENFILE): room is made by eviction.
fn out_of_descriptors(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(23 | 24))
}

/// Accepts and serves connections until `stop` completes.
pub async fn run(listener: TcpListener, router: Router, limits: Limits, stop: impl std::future::Future<Output = ()>) {
    let inner = Inner { clock: 0, open: HashMap::new(), max: limits.max_connections.max(1) };
    let registry = Arc::new(Registry { inner: Mutex::new(inner) });
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            _ = &mut stop => return,
            r = listener.accept() => r,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                let evicted = out_of_descriptors(&e) && registry.shrink();
                // Let the evicted connection's task close its socket before accepting again.
                tokio::time::sleep(Duration::from_millis(if evicted { 1 } else { 20 })).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        match registry.admit() {
            Some((slot, kill)) => {
                let router = router.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = kill.cancelled() => {}
                        _ = conn::serve(stream, router, limits, &slot) => {}
                    }
                });
            }
            None => {
                tokio::spawn(conn::refuse(
                    stream,
                    limits,
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the console is answering as many requests as it can; try again",
                ));
            }
        }
    }
}
