//! rm_purge and its result (the memory budget itself is in rm_open_options and
//! the write results' evicted_ids).

use super::guard::{guard, rm_status};
use super::handle::{self, rm_db};

/// Output of rm_purge() (a plain struct the caller owns).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct rm_purge_result {
    /// Memories hard-deleted.
    pub purged: u64,
    /// Write transactions it took (each removes at most 100 memories).
    pub batches: u64,
    /// Bytes of free pages given back to the file system (0 for a file created
    /// before robotmem 0.6: it keeps them for its own reuse).
    pub reclaimed_bytes: u64,
    /// The file's live pages after, in bytes ((page count - free pages) x page size).
    pub live_bytes: u64,
}

/// Hard-deletes the memories forgotten or superseded at least
/// `older_than_seconds` ago and those whose expiry passed at least that long ago
/// (0: all of them now; any category: they already left recall), with their
/// tags and vectors, then gives the freed pages back to the file system. Works
/// in write transactions of at most 100 memories (and 1 MiB of pages) each, so
/// other threads' writes wait a few ms at most and recall never waits; the
/// in-process indexes of every handle, and the index copies stored in the file,
/// drop the removed memories. When every memory of the file is to go, the
/// newest stays for a later purge. Removals are local: the fleet is not told
/// (docs/FLEET.md). `out` may be NULL.
///
/// Errors: RM_INVALID_ARGUMENT (older_than_seconds negative, not finite or over
/// 100 years), RM_READ_ONLY, RM_CLOSED, RM_BUSY, RM_FULL, RM_IO. A failure after
/// some batches leaves those removed. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rm_purge(db: *mut rm_db, older_than_seconds: f64, out: *mut rm_purge_result) -> rm_status {
    guard(|| {
        let r = handle::db(db)?.purge(older_than_seconds)?;
        if !out.is_null() {
            // SAFETY: checked non-NULL; the caller owns a writable rm_purge_result.
            unsafe {
                out.write(rm_purge_result {
                    purged: r.purged,
                    batches: r.batches,
                    reclaimed_bytes: r.reclaimed_bytes,
                    live_bytes: r.live_bytes,
                })
            };
        }
        Ok(())
    })
}
