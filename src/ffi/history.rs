//! A memory's past: rm_memory_history (its versions) and rm_open_as_of (a
//! read-only handle on the database as it was at a past time).

use std::ffi::c_char;

use super::arena::{owned, put, slice_ptr, to_json, Arena};
use super::args::{out_ptr, req_str};
use super::guard::{guard, guard_void, rm_status};
use super::handle::{self, rm_db};
use super::memory::rm_memory_status;
use crate::render;
use crate::types::MemoryVersion;

/// One version of a memory. Strings are UTF-8, NUL-terminated and owned by the
/// rm_history_result that contains this struct; times are ISO 8601 UTC with
/// milliseconds ("2026-03-09T10:30:00.123Z").
#[repr(C)]
pub struct rm_memory_version {
    /// The memory's version counter (it grows with every change, here or in the fleet).
    pub version: i64,
    /// The robot that wrote this version ("": this database's robot).
    pub writer: *const c_char,
    pub content: *const c_char,
    /// The context JSON object of this version.
    pub context_json: *const c_char,
    pub category: *const c_char,
    /// Its confidence when it was replaced (the current one for the last version).
    pub confidence: f64,
    pub status: rm_memory_status,
    /// Id of the memory that replaced it; 0 if none.
    pub superseded_by: i64,
    /// Why it was forgotten; NULL if it was not.
    pub invalidated_reason: *const c_char,
    /// When it expires; NULL: never.
    pub expires_at: *const c_char,
    /// When it became the memory's state.
    pub valid_from: *const c_char,
    /// When the next version replaced it; NULL for the current version.
    pub valid_to: *const c_char,
    /// What made it: "learn", "fleet" (received, or changed by another robot),
    /// "import", "update", "forget", "consolidation", "expiry", or "sql" (a change
    /// made outside robotmem).
    pub cause: *const c_char,
    /// The robot whose change made it ("": this database's robot).
    pub cause_writer: *const c_char,
}

/// Result of rm_memory_history(). Free with rm_history_result_free().
#[repr(C)]
pub struct rm_history_result {
    pub memory_id: i64,
    /// Oldest first; the last one is the memory as it is now. At least one.
    pub versions: *const rm_memory_version,
    pub count: usize,
}

owned!(HistoryBox, rm_history_result, (i64, Vec<MemoryVersion>), { items: Vec<rm_memory_version> });

/// Every version of a memory, whatever its status: what it said (content,
/// context, category) and was (status, expiry), from when to when, and which
/// change made it by which robot. Every change of content, context, category,
/// status or expiry keeps the version it replaces (also changes received from
/// the fleet, and changes made to the file outside robotmem). rm_purge() drops
/// versions replaced before its cutoff; a hard-deleted memory has no history.
///
/// Errors: RM_INVALID_ARGUMENT (NULL out, id <= 0), RM_NOT_FOUND, RM_CLOSED.
/// Ownership: free *out with rm_history_result_free(). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rm_memory_history(
    db: *mut rm_db,
    memory_id: i64,
    out: *mut *mut rm_history_result,
) -> rm_status {
    guard(|| {
        out_ptr(out, "out")?;
        let versions = handle::db(db)?.history(memory_id)?;
        let mut arena = Arena::default();
        let items: Vec<rm_memory_version> = versions
            .iter()
            .map(|v| rm_memory_version {
                version: v.version,
                writer: arena.str(&v.writer),
                content: arena.str(&v.content),
                context_json: arena.str(&v.context),
                category: arena.str(&v.category),
                confidence: v.confidence,
                status: v.status.into(),
                superseded_by: v.superseded_by.unwrap_or(0),
                invalidated_reason: arena.opt(v.invalidated_reason.as_deref()),
                expires_at: arena.opt(v.expires_at.as_deref()),
                valid_from: arena.str(&v.valid_from),
                valid_to: arena.opt(v.valid_to.as_deref()),
                cause: arena.str(&v.cause),
                cause_writer: arena.str(&v.cause_writer),
            })
            .collect();
        let public = rm_history_result { memory_id, versions: slice_ptr(&items), count: items.len() };
        put(out, HistoryBox { public, arena, rust: (memory_id, versions), items }, HistoryBox::into_raw);
        Ok(())
    })
}

/// Frees a history result. NULL is accepted.
#[no_mangle]
pub unsafe extern "C" fn rm_history_result_free(r: *mut rm_history_result) {
    guard_void(|| HistoryBox::free(r))
}

/// JSON rendering of a history ({"memory_id": …, "versions": [...]}). Free
/// *out_json with rm_string_free().
#[no_mangle]
pub unsafe extern "C" fn rm_history_result_json(r: *const rm_history_result, out_json: *mut *mut c_char) -> rm_status {
    guard(|| to_json(HistoryBox::from_raw(r).map(|b| &b.rust), |(id, v)| render::history(*id, v), out_json))
}

/// Opens a read-only view of `db` as it was at `as_of` (RFC 3339, e.g.
/// "2026-11-20T14:03:00Z", not in the future): the memories the file had then,
/// each with its content, context, category and state of that time (forgotten,
/// superseded or expired only if it was by then), and the sessions of then.
/// rm_recall() (hybrid or BM25, context filters, spatial sort) and
/// rm_get_memory() on the view answer as of that time; a write on it returns
/// RM_READ_ONLY, and its recalls do not count as accesses. The view is built
/// when opened, in a file of its own in a private temporary directory ($TMPDIR,
/// mode 0700; encrypted with a random key when the database is), removed by
/// rm_close(): it copies the rows and vectors of then and embeds the texts
/// changed since (164 ms at 10k memories without a model, 3.6 s at 100k with
/// one), so open one and run several reads on it. Confidence is
/// the memory's current one, or, for a version replaced since, the one it had
/// when it was replaced.
///
/// Errors: RM_INVALID_ARGUMENT (NULL argument, not an RFC 3339 time, a future
/// time, `db` is itself a view), RM_CLOSED, RM_IO (no temporary directory),
/// RM_FULL (no space for the view's file).
/// Ownership: the caller owns *out_view and must pass it to rm_close(); it
/// does not depend on `db` staying open. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rm_open_as_of(db: *mut rm_db, as_of: *const c_char, out_view: *mut *mut rm_db) -> rm_status {
    guard(|| {
        out_ptr(out_view, "out_view")?;
        let at = req_str(as_of, "as_of")?;
        let view = handle::db(db)?.as_of(at)?;
        *out_view = handle::register(view);
        Ok(())
    })
}
