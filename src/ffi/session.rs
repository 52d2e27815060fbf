//! Sessions (episodes): rm_start_session and rm_end_session with their results.

use std::ffi::c_char;

use super::arena::{owned, put, slice_ptr, to_json, Arena};
use super::args::{opt_str, out_ptr, req_str};
use super::guard::{guard, guard_void, rm_status};
use super::handle::{self, rm_db};
use super::recall::{c_hits, rm_hit};
use crate::render;
use crate::types::*;

/// Begins an episode in `collection` (NULL: default) with an optional context
/// JSON (robot, environment, task; at most 64 KiB).
///
/// Errors: RM_INVALID_ARGUMENT (NULL out, oversize or malformed context),
/// RM_CLOSED, RM_BUSY, RM_FULL.
/// Ownership: free *out with rm_session_free(). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rm_start_session(
    db: *mut rm_db,
    collection: *const c_char,
    context: *const c_char,
    out: *mut *mut rm_session,
) -> rm_status {
    guard(|| {
        out_ptr(out, "out")?;
        let db = handle::db(db)?;
        let r = db.start_session(opt_str(collection, "collection")?, opt_str(context, "context")?)?;
        put(out, session_result(r), SessionBox::into_raw);
        Ok(())
    })
}

/// Ends an episode: stores `*outcome_score` (0–1; NULL for none), applies time
/// decay (once per elapsed day, never compounding), consolidates the session's
/// near-duplicate memories (never merging different numbers or outcomes), and
/// returns a summary with related memories from other sessions.
///
/// Errors: RM_INVALID_ARGUMENT (NULL/blank session_id, score outside 0–1 or NaN),
/// RM_NOT_FOUND (unknown session), RM_INVALID_STATE (already ended), RM_CLOSED,
/// RM_BUSY, RM_FULL.
/// Ownership: free *out with rm_session_summary_free(); `out` may be NULL.
/// Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rm_end_session(
    db: *mut rm_db,
    session_id: *const c_char,
    outcome_score: *const f64,
    out: *mut *mut rm_session_summary,
) -> rm_status {
    guard(|| {
        let db = handle::db(db)?;
        let sid = req_str(session_id, "session_id")?;
        let r = db.end_session(sid, outcome_score.as_ref().copied())?;
        put(out, summary_result(r), SummaryBox::into_raw);
        Ok(())
    })
}

// ---------------------------------------------------------------------------
// Results

/// Result of rm_start_session(). Free with rm_session_free().
#[repr(C)]
pub struct rm_session {
    /// The new session's UUID (36 characters); pass it to rm_learn() and rm_end_session().
    pub session_id: *const c_char,
    pub collection: *const c_char,
    /// Active memories in the collection when the session started.
    pub active_memories_count: i64,
}

owned!(SessionBox, rm_session, SessionStarted, {});

pub(crate) fn session_result(o: SessionStarted) -> SessionBox {
    let mut arena = Arena::default();
    let public = rm_session {
        session_id: arena.str(&o.session_id),
        collection: arena.str(&o.collection),
        active_memories_count: o.active_memories_count,
    };
    SessionBox { public, arena, rust: o }
}

/// Frees a session result. NULL is accepted.
#[no_mangle]
pub unsafe extern "C" fn rm_session_free(r: *mut rm_session) {
    guard_void(|| SessionBox::free(r))
}

/// JSON rendering of a started session. Free *out_json with rm_string_free().
#[no_mangle]
pub unsafe extern "C" fn rm_session_json(r: *const rm_session, out_json: *mut *mut c_char) -> rm_status {
    guard(|| to_json(SessionBox::from_raw(r).map(|b| &b.rust), render::session_started, out_json))
}

/// A named count (memories by type or by category).
#[repr(C)]
pub struct rm_count {
    pub name: *const c_char,
    pub count: i64,
}

/// Result of rm_end_session(). Free with rm_session_summary_free().
#[repr(C)]
pub struct rm_session_summary {
    pub session_id: *const c_char,
    pub collection: *const c_char,
    pub has_outcome_score: bool,
    pub outcome_score: f64,
    /// Memories stored in the session (any status).
    pub memory_count: i64,
    pub by_type: *const rm_count,
    pub by_type_count: usize,
    pub by_category: *const rm_count,
    pub by_category_count: usize,
    /// Memories whose confidence time decay lowered in this call.
    pub decayed_count: i64,
    /// Consolidation of the session's memories.
    pub merged_groups: i64,
    pub superseded_count: i64,
    pub compression_ratio: f64,
    pub avg_similarity: f64,
    /// Related memories from other sessions (proactive recall), best first.
    pub related: *const rm_hit,
    pub related_count: usize,
}

owned!(SummaryBox, rm_session_summary, SessionEnded, {
    counts: Vec<Vec<rm_count>>,
    related: Vec<rm_hit>
});

pub(crate) fn summary_result(o: SessionEnded) -> SummaryBox {
    let mut arena = Arena::default();
    let mut count_list = |c: &[(String, i64)]| -> Vec<rm_count> {
        c.iter().map(|(n, k)| rm_count { name: arena.str(n), count: *k }).collect()
    };
    let by_type = count_list(&o.summary.by_type);
    let by_category = count_list(&o.summary.by_category);
    let related = c_hits(&o.related, &mut arena);
    let public = rm_session_summary {
        session_id: arena.str(&o.session_id),
        collection: arena.str(&o.collection),
        has_outcome_score: o.outcome_score.is_some(),
        outcome_score: o.outcome_score.unwrap_or(0.0),
        memory_count: o.summary.memory_count,
        by_type: slice_ptr(&by_type),
        by_type_count: by_type.len(),
        by_category: slice_ptr(&by_category),
        by_category_count: by_category.len(),
        decayed_count: o.decayed_count,
        merged_groups: o.consolidated.merged_groups,
        superseded_count: o.consolidated.superseded_count,
        compression_ratio: o.consolidated.compression_ratio,
        avg_similarity: o.consolidated.avg_similarity,
        related: slice_ptr(&related),
        related_count: related.len(),
    };
    SummaryBox { public, arena, rust: o, counts: vec![by_type, by_category], related }
}

/// Frees a session summary. NULL is accepted.
#[no_mangle]
pub unsafe extern "C" fn rm_session_summary_free(r: *mut rm_session_summary) {
    guard_void(|| SummaryBox::free(r))
}

/// JSON rendering of a session summary. Free *out_json with rm_string_free().
#[no_mangle]
pub unsafe extern "C" fn rm_session_summary_json(
    r: *const rm_session_summary,
    out_json: *mut *mut c_char,
) -> rm_status {
    guard(|| to_json(SummaryBox::from_raw(r).map(|b| &b.rust), render::session_ended, out_json))
}
