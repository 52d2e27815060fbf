//! The operations of the C ABI: learn, recall, perception, get, forget, update,
//! sessions. Option structs are caller-owned and read only during the call.

use std::ffi::c_char;

use super::recall::*;
use super::results::*;
use super::{guard, opt_str, out_ptr, req_str, rm_db, rm_status};
use crate::error::Error;
use crate::types::*;

/// Writes a boxed result to an optional out pointer (NULL: the result is dropped).
fn put<B, T>(out: *mut *mut T, boxed: B, into_raw: impl FnOnce(B) -> *mut T) {
    if !out.is_null() {
        // SAFETY: checked non-NULL; the caller provides a writable pointer slot.
        unsafe { *out = into_raw(boxed) };
    }
}

/// Optional parameters of rm_learn(). Initialise with rm_learn_options_init().
#[repr(C)]
pub struct rm_learn_options {
    /// Context: a JSON object (params / spatial / robot / task / env ...) or free
    /// text (kept as "user_context"), at most 64 KiB. NULL: none.
    pub context: *const c_char,
    /// Collection (namespace). NULL or blank: the handle's default collection.
    pub collection: *const c_char,
    /// Session from rm_start_session(). NULL or blank: none.
    pub session_id: *const c_char,
    /// User tags (UTF-8, normalised: "Robot Arm" → "robot_arm"; at most 20 of 1–64
    /// characters), kept when the memory is updated. NULL with tag_count 0: none.
    pub tags: *const *const c_char,
    pub tag_count: usize,
}

/// Reads a caller's tag array.
///
/// # Safety
/// `tags` is NULL or points to `count` string pointers valid for the call.
unsafe fn tag_list<'a>(tags: *const *const c_char, count: usize) -> Result<Vec<&'a str>, Error> {
    if count > crate::limits::MAX_USER_TAGS {
        return Err(Error::invalid(format!("tag_count {count} exceeds {}", crate::limits::MAX_USER_TAGS)));
    }
    if tags.is_null() {
        return if count == 0 { Ok(Vec::new()) } else { Err(Error::invalid("tags is NULL but tag_count is not 0")) };
    }
    (0..count).map(|i| req_str(*tags.add(i), &format!("tags[{i}]"))).collect()
}

/// Sets every field of `opts` to its default (all NULL).
///
/// Errors: RM_INVALID_ARGUMENT if `opts` is NULL.
#[no_mangle]
pub unsafe extern "C" fn rm_learn_options_init(opts: *mut rm_learn_options) -> rm_status {
    guard(|| {
        out_ptr(opts, "opts")?;
        let d = rm_learn_options {
            context: std::ptr::null(),
            collection: std::ptr::null(),
            session_id: std::ptr::null(),
            tags: std::ptr::null(),
            tag_count: 0,
        };
        // SAFETY: checked non-NULL.
        unsafe { opts.write(d) };
        Ok(())
    })
}

/// Stores an experience ("grip_force=12.5N works best because ...").
///
/// The insight (UTF-8, 1–300 characters after trimming) is classified (category,
/// confidence, tags, scope) and checked for duplicates in its collection: an
/// exact copy or a near-identical text with the same numbers is not stored again;
/// the result then has duplicate=true and the existing memory's id. `opts` may be
/// NULL. `out` may be NULL when the result is not needed.
///
/// Errors: RM_INVALID_ARGUMENT (NULL/blank/oversize insight, invalid UTF-8, context
/// that starts like JSON but does not parse, context > 64 KiB, bad tags), RM_NOT_FOUND
/// (unknown session_id), RM_INVALID_STATE (the session has ended and the insight is
/// not a duplicate: a duplicate is reported as such, nothing is written), RM_CLOSED,
/// RM_BUSY, RM_FULL, RM_IO.
/// Ownership: free *out with rm_learn_result_free(). Thread-safe; writes of several
/// threads at once share one commit (each still returns only once it is durable).
#[no_mangle]
pub unsafe extern "C" fn rm_learn(
    db: *mut rm_db,
    insight: *const c_char,
    opts: *const rm_learn_options,
    out: *mut *mut rm_learn_result,
) -> rm_status {
    guard(|| {
        let db = super::db(db)?;
        let insight = req_str(insight, "insight")?;
        let (req, tags) = learn_request(insight, opts)?;
        let r = db.learn(&LearnRequest { tags: &tags, ..req })?;
        put(out, learn_result(r), LearnBox::into_raw);
        Ok(())
    })
}

/// A learn request from C arguments: the request (without tags) and the tags.
///
/// # Safety
/// `opts` is NULL or points to a valid rm_learn_options for the call.
pub(crate) unsafe fn learn_request<'a>(
    insight: &'a str,
    opts: *const rm_learn_options,
) -> Result<(LearnRequest<'a>, Vec<&'a str>), Error> {
    let mut req = LearnRequest { insight, ..Default::default() };
    let mut tags = Vec::new();
    if let Some(o) = opts.as_ref() {
        req.context = opt_str(o.context, "opts.context")?;
        req.collection = opt_str(o.collection, "opts.collection")?;
        req.session_id = opt_str(o.session_id, "opts.session_id")?;
        tags = tag_list(o.tags, o.tag_count)?;
    }
    Ok((req, tags))
}

/// Optional parameters of rm_recall(). Initialise with rm_recall_options_init().
#[repr(C)]
pub struct rm_recall_options {
    /// NULL or blank: the handle's default collection.
    pub collection: *const c_char,
    /// Number of results; clamped to 1–100. Default 5.
    pub n: i32,
    /// Minimum confidence, 0–1. Default 0.3.
    pub min_confidence: f64,
    /// Only memories of this session (episode replay). NULL: all.
    pub session_id: *const c_char,
    /// JSON object of conditions on the context, AND-ed, at most 10:
    /// {"task.success": true, "params.force.value": {"$lt": 15}}; operators
    /// $lt $lte $gt $gte $ne $eq (ranges compare numbers with numbers and strings
    /// with strings). A memory whose context lacks a path never matches that
    /// condition, $ne included. NULL or {} (no condition): none.
    pub context_filter: *const c_char,
    /// JSON {"field": "spatial.object_position", "target": [x, y, z],
    /// "max_distance": 0.1 (optional)}: the n nearest of all memories that
    /// satisfy the other constraints, nearest first, whatever the query's words
    /// (relevance breaks distance ties; a memory without usable coordinates is at
    /// +infinity). NULL: relevance order.
    pub spatial_sort: *const c_char,
    /// Fold results that say the same thing into the best-ranked of them: word
    /// sets alike (Jaccard > 0.5, Chinese segmented) and the same success/failure
    /// outcome; numbers may differ. Each hit then lists the ids it stands for
    /// (rm_hit.similar_ids), and n hits are n different facts. Default false.
    pub group_similar: bool,
}

/// Sets `opts` to the defaults (n = 5, min_confidence = 0.3, group_similar false,
/// everything else NULL).
///
/// Errors: RM_INVALID_ARGUMENT if `opts` is NULL.
#[no_mangle]
pub unsafe extern "C" fn rm_recall_options_init(opts: *mut rm_recall_options) -> rm_status {
    guard(|| {
        out_ptr(opts, "opts")?;
        let d = RecallRequest::default();
        let v = rm_recall_options {
            collection: std::ptr::null(),
            n: d.n as i32,
            min_confidence: d.min_confidence,
            session_id: std::ptr::null(),
            context_filter: std::ptr::null(),
            spatial_sort: std::ptr::null(),
            group_similar: d.group_similar,
        };
        // SAFETY: checked non-NULL.
        unsafe { opts.write(v) };
        Ok(())
    })
}

/// Returns the memories most relevant to `query` (BM25 over the content, Chinese
/// segmented; fused with vector similarity when an embedder is loaded), after
/// the real-world boost, within the constraints in `opts` (NULL: defaults).
/// Without context_filter, session_id and spatial_sort only memories that match
/// the query are returned (a shared word, or a vector above the model's cosine
/// floor). With any of them the constraints hold over all memories: the result
/// has min(n, memories satisfying them) hits — the query's matches first by
/// score, then the newest others that satisfy them (hit.matched false, score 0);
/// with spatial_sort the n nearest of all that satisfy them. A query with no
/// searchable word (e.g. "*") lists the newest memories within the constraints.
/// Recall does not wait for writers (access counters are written later).
///
/// Errors: RM_INVALID_ARGUMENT (NULL out, blank or > 1000-character query,
/// min_confidence outside 0–1 or NaN, malformed context_filter / spatial_sort,
/// more than 10 conditions, unknown operator, target not an array of numbers),
/// RM_CLOSED, RM_IO, RM_CORRUPT (a memory it would return does not match its
/// stored checksum: the message names its id; forget it or restore a backup).
/// Ownership: free *out with rm_recall_result_free(). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rm_recall(
    db: *mut rm_db,
    query: *const c_char,
    opts: *const rm_recall_options,
    out: *mut *mut rm_recall_result,
) -> rm_status {
    guard(|| {
        out_ptr(out, "out")?;
        let db = super::db(db)?;
        let mut req = RecallRequest { query: req_str(query, "query")?, ..Default::default() };
        if let Some(o) = opts.as_ref() {
            req.collection = opt_str(o.collection, "opts.collection")?;
            req.n = o.n as i64;
            req.min_confidence = o.min_confidence;
            req.session_id = opt_str(o.session_id, "opts.session_id")?;
            req.context_filter = opt_str(o.context_filter, "opts.context_filter")?;
            req.spatial_sort = opt_str(o.spatial_sort, "opts.spatial_sort")?;
            req.group_similar = o.group_similar;
        }
        let r = db.recall(&req)?;
        put(out, recall_result(r), RecallBox::into_raw);
        Ok(())
    })
}

/// Optional parameters of rm_save_perception(). Initialise with
/// rm_perception_options_init().
#[repr(C)]
pub struct rm_perception_options {
    /// Default RM_PERCEPTION_VISUAL. RM_PERCEPTION_NONE is invalid here.
    pub perception_type: rm_perception_type,
    /// Sensor data, stored byte for byte (JSON text or binary), at most 4 MiB.
    /// NULL with data_len 0: none.
    pub data: *const u8,
    pub data_len: usize,
    /// JSON metadata (format, units, rate), at most 64 KiB. NULL: none.
    pub metadata: *const c_char,
    /// Context JSON object, as for rm_learn(). NULL: none.
    pub context: *const c_char,
    pub collection: *const c_char,
    pub session_id: *const c_char,
    /// User tags, as for rm_learn_options.
    pub tags: *const *const c_char,
    pub tag_count: usize,
}

/// Sets `opts` to the defaults (visual, no data, everything else NULL).
///
/// Errors: RM_INVALID_ARGUMENT if `opts` is NULL.
#[no_mangle]
pub unsafe extern "C" fn rm_perception_options_init(opts: *mut rm_perception_options) -> rm_status {
    guard(|| {
        out_ptr(opts, "opts")?;
        let v = rm_perception_options {
            perception_type: rm_perception_type::RM_PERCEPTION_VISUAL,
            data: std::ptr::null(),
            data_len: 0,
            metadata: std::ptr::null(),
            context: std::ptr::null(),
            collection: std::ptr::null(),
            session_id: std::ptr::null(),
            tags: std::ptr::null(),
            tag_count: 0,
        };
        // SAFETY: checked non-NULL.
        unsafe { opts.write(v) };
        Ok(())
    })
}

/// Stores perception / trajectory / force data with a description (5–300
/// characters after trimming). The same description, type, data and metadata
/// already stored in the collection is reported as a duplicate, not stored twice.
///
/// Errors: RM_INVALID_ARGUMENT (short/blank/oversize description, unknown
/// perception type, data NULL with data_len > 0, data > 4 MiB, metadata not JSON),
/// RM_NOT_FOUND (unknown session_id), RM_INVALID_STATE (the session has ended),
/// RM_CLOSED, RM_BUSY, RM_FULL, RM_IO.
/// Ownership: free *out with rm_perception_result_free(); `out` may be NULL.
/// Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rm_save_perception(
    db: *mut rm_db,
    description: *const c_char,
    opts: *const rm_perception_options,
    out: *mut *mut rm_perception_result,
) -> rm_status {
    guard(|| {
        let db = super::db(db)?;
        let mut req = PerceptionRequest { description: req_str(description, "description")?, ..Default::default() };
        let mut tags = Vec::new();
        if let Some(o) = opts.as_ref() {
            tags = tag_list(o.tags, o.tag_count)?;
            let raw = *(std::ptr::addr_of!(o.perception_type) as *const i32);
            req.perception_type = match raw {
                1 => PerceptionType::Visual,
                2 => PerceptionType::Tactile,
                3 => PerceptionType::Auditory,
                4 => PerceptionType::Proprioceptive,
                5 => PerceptionType::Procedural,
                v => return Err(Error::invalid(format!("opts.perception_type {v} is not a perception type"))),
            };
            req.data = match (o.data.is_null(), o.data_len) {
                (true, 0) => None,
                (true, _) => return Err(Error::invalid("opts.data is NULL but opts.data_len is not 0")),
                (false, n) if n > crate::limits::MAX_PERCEPTION_DATA => {
                    return Err(Error::invalid(format!(
                        "opts.data_len is {n}; the limit is {}",
                        crate::limits::MAX_PERCEPTION_DATA
                    )))
                }
                (false, n) => Some(std::slice::from_raw_parts(o.data, n)),
            };
            req.metadata = opt_str(o.metadata, "opts.metadata")?;
            req.context = opt_str(o.context, "opts.context")?;
            req.collection = opt_str(o.collection, "opts.collection")?;
            req.session_id = opt_str(o.session_id, "opts.session_id")?;
        }
        req.tags = &tags;
        let r = db.save_perception(&req)?;
        put(out, perception_result(r), PerceptionBox::into_raw);
        Ok(())
    })
}

/// Reads one memory by id, whatever its status, with its tags.
///
/// Errors: RM_INVALID_ARGUMENT (NULL out, id <= 0), RM_NOT_FOUND, RM_CLOSED,
/// RM_CORRUPT (the memory's text does not match its stored checksum: it is never
/// returned damaged).
/// Ownership: free *out with rm_memory_result_free(). Thread-safe.
#[no_mangle]
pub extern "C" fn rm_get_memory(db: *mut rm_db, memory_id: i64, out: *mut *mut rm_memory_result) -> rm_status {
    guard(|| {
        out_ptr(out, "out")?;
        let db = super::db(db)?;
        let m = db.get(memory_id)?;
        let tags = db.tags(memory_id)?;
        put(out, memory_result(m, tags), MemoryBox::into_raw);
        Ok(())
    })
}

/// Forgets a memory (soft delete): it keeps its row, reason and time for audit
/// but leaves every search. `reason` is required (1–500 characters). A memory
/// found damaged (RM_CORRUPT from a read) can be forgotten; its result's content
/// is then "" (the damaged text is not returned).
///
/// Errors: RM_INVALID_ARGUMENT (id <= 0, NULL/blank reason), RM_NOT_FOUND,
/// RM_INVALID_STATE (already forgotten or superseded), RM_CLOSED, RM_BUSY, RM_FULL.
/// Ownership: free *out with rm_forget_result_free(); `out` may be NULL. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rm_forget(
    db: *mut rm_db,
    memory_id: i64,
    reason: *const c_char,
    out: *mut *mut rm_forget_result,
) -> rm_status {
    guard(|| {
        let db = super::db(db)?;
        let r = db.forget(memory_id, req_str(reason, "reason")?)?;
        put(out, forget_result(r), ForgetBox::into_raw);
        Ok(())
    })
}

/// Replaces an active memory's content (1–300 characters after trimming) and,
/// when `context` is not NULL, its context ("" clears it to {"source": ...});
/// NULL keeps the current context. The memory is re-classified, its
/// hash, summary, index entry and automatic tags are refreshed (user tags kept).
///
/// Errors: RM_INVALID_ARGUMENT, RM_NOT_FOUND, RM_INVALID_STATE (forgotten or
/// superseded), RM_DUPLICATE (another active memory of the collection already has
/// exactly this content; nothing changed), RM_CLOSED, RM_BUSY, RM_FULL.
/// Ownership: free *out with rm_update_result_free(); `out` may be NULL. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rm_update(
    db: *mut rm_db,
    memory_id: i64,
    new_content: *const c_char,
    context: *const c_char,
    out: *mut *mut rm_update_result,
) -> rm_status {
    guard(|| {
        let db = super::db(db)?;
        let content = req_str(new_content, "new_content")?;
        let r = db.update(memory_id, content, opt_str(context, "context")?)?;
        put(out, update_result(r), UpdateBox::into_raw);
        Ok(())
    })
}

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
        let db = super::db(db)?;
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
        let db = super::db(db)?;
        let sid = req_str(session_id, "session_id")?;
        let r = db.end_session(sid, outcome_score.as_ref().copied())?;
        put(out, summary_result(r), SummaryBox::into_raw);
        Ok(())
    })
}
