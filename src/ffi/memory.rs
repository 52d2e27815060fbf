//! A memory: `rm_memory` and its enums, and the operations on one memory —
//! rm_learn (with its options and result), rm_get_memory, rm_forget, rm_update —
//! with their results' free and JSON functions.

use std::ffi::c_char;
use std::ptr;

use serde_json::Value;

use super::arena::{owned, put, slice_ptr, to_json, Arena};
use super::args::{expiry, opt_str, out_ptr, req_str, tag_list};
use super::guard::{guard, guard_void, rm_status};
use super::handle::{self, rm_db};
use crate::error::Error;
use crate::render;
use crate::types::*;

/// Kind of memory.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum rm_memory_type {
    /// Declarative experience stored by rm_learn().
    RM_MEMORY_FACT = 0,
    /// Sensor / trajectory data stored by rm_save_perception().
    RM_MEMORY_PERCEPTION = 1,
}

/// Perception type (RM_PERCEPTION_NONE for facts).
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum rm_perception_type {
    RM_PERCEPTION_NONE = 0,
    RM_PERCEPTION_VISUAL = 1,
    RM_PERCEPTION_TACTILE = 2,
    RM_PERCEPTION_AUDITORY = 3,
    RM_PERCEPTION_PROPRIOCEPTIVE = 4,
    RM_PERCEPTION_PROCEDURAL = 5,
}

impl From<Option<PerceptionType>> for rm_perception_type {
    fn from(p: Option<PerceptionType>) -> Self {
        use rm_perception_type::*;
        match p {
            None => RM_PERCEPTION_NONE,
            Some(PerceptionType::Visual) => RM_PERCEPTION_VISUAL,
            Some(PerceptionType::Tactile) => RM_PERCEPTION_TACTILE,
            Some(PerceptionType::Auditory) => RM_PERCEPTION_AUDITORY,
            Some(PerceptionType::Proprioceptive) => RM_PERCEPTION_PROPRIOCEPTIVE,
            Some(PerceptionType::Procedural) => RM_PERCEPTION_PROCEDURAL,
        }
    }
}

/// Lifecycle state of a memory.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum rm_memory_status {
    RM_MEMORY_ACTIVE = 0,
    /// Merged into another memory by consolidation (see superseded_by).
    RM_MEMORY_SUPERSEDED = 1,
    /// Forgotten with rm_forget().
    RM_MEMORY_INVALIDATED = 2,
}

impl From<MemoryStatus> for rm_memory_status {
    fn from(s: MemoryStatus) -> Self {
        match s {
            MemoryStatus::Active => rm_memory_status::RM_MEMORY_ACTIVE,
            MemoryStatus::Superseded => rm_memory_status::RM_MEMORY_SUPERSEDED,
            MemoryStatus::Invalidated => rm_memory_status::RM_MEMORY_INVALIDATED,
        }
    }
}

/// How a duplicate was recognised (RM_DUP_NONE when the memory was created).
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum rm_dup_method {
    RM_DUP_NONE = 0,
    /// The same text (content hash) in the same collection.
    RM_DUP_EXACT = 1,
    /// The same fact written again: word-set Jaccard similarity > 0.70, the same
    /// numbers, the same success/failure outcome, one text's words containing the
    /// other's (words added or dropped, none substituted) and the shared words in
    /// the same order.
    RM_DUP_JACCARD = 2,
    /// Embedding cosine similarity above opts.cosine_dedup (0.85) with the same
    /// numbers, outcome and words up to inflection.
    RM_DUP_COSINE = 3,
}

pub(crate) fn dup_method(d: &Option<Duplicate>) -> (bool, rm_dup_method, f64) {
    match d {
        None => (false, rm_dup_method::RM_DUP_NONE, 0.0),
        Some(d) => (
            true,
            match d.method {
                DupMethod::Exact => rm_dup_method::RM_DUP_EXACT,
                DupMethod::Jaccard => rm_dup_method::RM_DUP_JACCARD,
                DupMethod::Cosine => rm_dup_method::RM_DUP_COSINE,
            },
            d.similarity,
        ),
    }
}

/// A memory as seen from C. All strings are UTF-8, NUL-terminated and owned by
/// the result that contains this struct.
#[repr(C)]
pub struct rm_memory {
    pub id: i64,
    pub collection: *const c_char,
    /// NULL when the memory belongs to no session.
    pub session_id: *const c_char,
    pub memory_type: rm_memory_type,
    pub content: *const c_char,
    pub human_summary: *const c_char,
    pub category: *const c_char,
    /// 0–1; decays over time unless the category is protected.
    pub confidence: f64,
    pub status: rm_memory_status,
    /// Id of the memory that replaced this one; 0 if none.
    pub superseded_by: i64,
    /// The full context JSON object (at least {"source": ...}).
    pub context_json: *const c_char,
    /// Context fields lifted as JSON texts; NULL when absent.
    pub params_json: *const c_char,
    pub spatial_json: *const c_char,
    pub robot_json: *const c_char,
    pub task_json: *const c_char,
    pub perception_type: rm_perception_type,
    /// Perception data exactly as stored (NULL and 0 for facts / no data).
    pub perception_data: *const u8,
    pub perception_data_len: usize,
    /// Perception metadata JSON; NULL when absent.
    pub perception_metadata: *const c_char,
    pub access_count: i64,
    /// ISO 8601 UTC timestamps ("2026-03-09T10:30:00.123Z"); last_accessed may be NULL.
    pub created_at: *const c_char,
    pub updated_at: *const c_char,
    pub last_accessed: *const c_char,
    /// When it expires (same format); NULL: never.
    pub expires_at: *const c_char,
    /// Its expiry had passed when it was read: it is left out of recall, listings
    /// and dedup (its status is unchanged; rm_set_expiry() can renew it).
    pub expired: bool,
}

pub(crate) fn c_memory(m: &Memory, a: &mut Arena) -> rm_memory {
    let ctx = render::context_map(&m.context);
    let mut lifted = render::LIFTED_FIELDS.map(|k| ctx.get(k).map(Value::to_string));
    let mut take = |i: usize| a.opt(lifted[i].take().as_deref());
    let (params_json, spatial_json, robot_json, task_json) = (take(0), take(1), take(2), take(3));
    let data = m.perception_data.as_deref();
    rm_memory {
        id: m.id,
        collection: a.str(&m.collection),
        session_id: a.opt(m.session_id.as_deref()),
        memory_type: match m.kind {
            MemoryKind::Fact => rm_memory_type::RM_MEMORY_FACT,
            MemoryKind::Perception => rm_memory_type::RM_MEMORY_PERCEPTION,
        },
        content: a.str(&m.content),
        human_summary: a.str(&m.human_summary),
        category: a.str(&m.category),
        confidence: m.confidence,
        status: m.status.into(),
        superseded_by: m.superseded_by.unwrap_or(0),
        context_json: a.str(&m.context),
        params_json,
        spatial_json,
        robot_json,
        task_json,
        perception_type: m.perception_type.into(),
        perception_data: data.map_or(ptr::null(), <[u8]>::as_ptr),
        perception_data_len: data.map_or(0, <[u8]>::len),
        perception_metadata: a.opt(m.perception_metadata.as_deref()),
        access_count: m.access_count,
        created_at: a.str(&m.created_at),
        updated_at: a.str(&m.updated_at),
        last_accessed: a.opt(m.last_accessed.as_deref()),
        expires_at: a.opt(m.expires_at.as_deref()),
        expired: m.expired,
    }
}

// ---------------------------------------------------------------------------
// rm_learn

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
    /// Time to live in seconds (> 0, at most 100 years): the memory leaves recall,
    /// listings and dedup then. 0: not given.
    pub ttl_seconds: f64,
    /// Or when it expires, RFC 3339 ("2026-12-01T18:00:00Z"; a past time: expired
    /// at once). NULL: not given. Neither given: the collection's default
    /// (rm_open_options.default_ttl_json), else it never expires.
    pub expires_at: *const c_char,
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
            ttl_seconds: 0.0,
            expires_at: std::ptr::null(),
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
/// not a duplicate: a duplicate is reported as such, nothing is written),
/// RM_OVER_BUDGET (a memory budget of the open options only protected memories
/// could make room in; nothing is written), RM_READ_ONLY, RM_CLOSED, RM_BUSY,
/// RM_FULL, RM_IO. Under a budget, the memories evicted to make room are in
/// the result's evicted_ids (hard-deleted in the same transaction).
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
        let db = handle::db(db)?;
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
        (req.ttl_seconds, req.expires_at) = expiry(o.ttl_seconds, o.expires_at, "opts")?;
    }
    Ok((req, tags))
}

/// Result of rm_learn(). Free with rm_learn_result_free().
#[repr(C)]
pub struct rm_learn_result {
    /// Id of the new memory, or of the existing memory when duplicate is true.
    pub memory_id: i64,
    /// True when nothing was stored because an equivalent active memory exists.
    pub duplicate: bool,
    pub dup_method: rm_dup_method,
    /// Similarity to the existing memory (1.0 for exact), 0 when created.
    pub similarity: f64,
    /// Auto-classified category of the insight.
    pub category: *const c_char,
    /// Estimated confidence of the insight, 0.80–0.95.
    pub confidence: f64,
    /// Automatic tags followed by the user tags.
    pub tags: *const *const c_char,
    pub tag_count: usize,
    pub scope_files: *const *const c_char,
    pub scope_file_count: usize,
    /// Whether the memory got its vector (false without a usable model, and for
    /// duplicates; rm_reembed() embeds it later).
    pub has_embedding: bool,
    /// Memories hard-deleted to keep the memory budget (rm_open_options.max_memories,
    /// max_memories_json), in eviction order; NULL and 0 when none were.
    pub evicted_ids: *const i64,
    pub evicted_count: usize,
}

owned!(LearnBox, rm_learn_result, LearnOutcome, {});

pub(crate) fn learn_result(o: LearnOutcome) -> LearnBox {
    let mut arena = Arena::default();
    let public = learn_public(&o, &mut arena);
    LearnBox { public, arena, rust: o }
}

/// The C view of a learn outcome; strings owned by `arena`.
pub(crate) fn learn_public(o: &LearnOutcome, arena: &mut Arena) -> rm_learn_result {
    let (duplicate, dup_method, similarity) = dup_method(&o.duplicate);
    let (tags, tag_count) = arena.list(&o.tags);
    let (scope_files, scope_file_count) = arena.list(&o.scope_files);
    rm_learn_result {
        memory_id: o.memory_id,
        duplicate,
        dup_method,
        similarity,
        category: arena.str(&o.category),
        confidence: o.confidence,
        tags,
        tag_count,
        scope_files,
        scope_file_count,
        has_embedding: o.has_embedding,
        evicted_ids: slice_ptr(&o.evicted),
        evicted_count: o.evicted.len(),
    }
}

/// Frees a learn result. NULL is accepted.
#[no_mangle]
pub unsafe extern "C" fn rm_learn_result_free(r: *mut rm_learn_result) {
    guard_void(|| LearnBox::free(r))
}

/// JSON rendering of a learn result ({"status": "created", ...} or
/// {"status": "duplicate", ...}). Free *out_json with rm_string_free().
#[no_mangle]
pub unsafe extern "C" fn rm_learn_result_json(r: *const rm_learn_result, out_json: *mut *mut c_char) -> rm_status {
    guard(|| to_json(LearnBox::from_raw(r).map(|b| &b.rust), render::learn, out_json))
}

// ---------------------------------------------------------------------------
// rm_get_memory

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
        let db = handle::db(db)?;
        let m = db.get(memory_id)?;
        let tags = db.tags(memory_id)?;
        put(out, memory_result(m, tags), MemoryBox::into_raw);
        Ok(())
    })
}

/// Result of rm_get_memory(). Free with rm_memory_result_free().
#[repr(C)]
pub struct rm_memory_result {
    pub memory: rm_memory,
    pub tags: *const *const c_char,
    pub tag_count: usize,
}

owned!(MemoryBox, rm_memory_result, Memory, {});

pub(crate) fn memory_result(m: Memory, tags: Vec<String>) -> MemoryBox {
    let mut arena = Arena::default();
    let memory = c_memory(&m, &mut arena);
    let (tags, tag_count) = arena.list(&tags);
    MemoryBox { public: rm_memory_result { memory, tags, tag_count }, arena, rust: m }
}

/// Frees a memory result. NULL is accepted.
#[no_mangle]
pub unsafe extern "C" fn rm_memory_result_free(r: *mut rm_memory_result) {
    guard_void(|| MemoryBox::free(r))
}

/// JSON rendering of one memory. Free *out_json with rm_string_free().
#[no_mangle]
pub unsafe extern "C" fn rm_memory_result_json(r: *const rm_memory_result, out_json: *mut *mut c_char) -> rm_status {
    guard(|| to_json(MemoryBox::from_raw(r).map(|b| &b.rust), render::memory, out_json))
}

// ---------------------------------------------------------------------------
// rm_set_expiry

/// Sets when an active memory expires: `ttl_seconds` from now (> 0, at most 100
/// years), or at `expires_at` (RFC 3339; a past time expires it at once). Both
/// 0 / NULL: it never expires. An expired memory can be renewed this way.
///
/// Errors: RM_INVALID_ARGUMENT (id <= 0, a bad ttl or time, both given),
/// RM_NOT_FOUND, RM_INVALID_STATE (forgotten or superseded), RM_READ_ONLY,
/// RM_CLOSED, RM_BUSY, RM_FULL. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rm_set_expiry(
    db: *mut rm_db,
    memory_id: i64,
    ttl_seconds: f64,
    expires_at: *const c_char,
) -> rm_status {
    guard(|| {
        let db = handle::db(db)?;
        let (ttl, at) = expiry(ttl_seconds, expires_at, "")?;
        db.set_expiry(memory_id, ttl, at).map(drop)
    })
}

// ---------------------------------------------------------------------------
// rm_forget

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
        let db = handle::db(db)?;
        let r = db.forget(memory_id, req_str(reason, "reason")?)?;
        put(out, forget_result(r), ForgetBox::into_raw);
        Ok(())
    })
}

/// Result of rm_forget(). Free with rm_forget_result_free().
#[repr(C)]
pub struct rm_forget_result {
    pub memory_id: i64,
    /// Content of the forgotten memory ("" when it was found damaged).
    pub content: *const c_char,
    pub reason: *const c_char,
}

owned!(ForgetBox, rm_forget_result, ForgetOutcome, {});

pub(crate) fn forget_result(o: ForgetOutcome) -> ForgetBox {
    let mut arena = Arena::default();
    let public =
        rm_forget_result { memory_id: o.memory_id, content: arena.str(&o.content), reason: arena.str(&o.reason) };
    ForgetBox { public, arena, rust: o }
}

/// Frees a forget result. NULL is accepted.
#[no_mangle]
pub unsafe extern "C" fn rm_forget_result_free(r: *mut rm_forget_result) {
    guard_void(|| ForgetBox::free(r))
}

/// JSON rendering of a forget result. Free *out_json with rm_string_free().
#[no_mangle]
pub unsafe extern "C" fn rm_forget_result_json(r: *const rm_forget_result, out_json: *mut *mut c_char) -> rm_status {
    guard(|| to_json(ForgetBox::from_raw(r).map(|b| &b.rust), render::forget, out_json))
}

// ---------------------------------------------------------------------------
// rm_update

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
        let db = handle::db(db)?;
        let content = req_str(new_content, "new_content")?;
        let r = db.update(memory_id, content, opt_str(context, "context")?)?;
        put(out, update_result(r), UpdateBox::into_raw);
        Ok(())
    })
}

/// Result of rm_update(). Free with rm_update_result_free().
#[repr(C)]
pub struct rm_update_result {
    pub memory_id: i64,
    pub old_content: *const c_char,
    pub new_content: *const c_char,
    /// Re-classified category and confidence of the new content.
    pub category: *const c_char,
    pub confidence: f64,
    /// The new automatic tags (user tags are kept on the memory).
    pub tags: *const *const c_char,
    pub tag_count: usize,
}

owned!(UpdateBox, rm_update_result, UpdateOutcome, {});

pub(crate) fn update_result(o: UpdateOutcome) -> UpdateBox {
    let mut arena = Arena::default();
    let (tags, tag_count) = arena.list(&o.tags);
    let public = rm_update_result {
        memory_id: o.memory_id,
        old_content: arena.str(&o.old_content),
        new_content: arena.str(&o.new_content),
        category: arena.str(&o.category),
        confidence: o.confidence,
        tags,
        tag_count,
    };
    UpdateBox { public, arena, rust: o }
}

/// Frees an update result. NULL is accepted.
#[no_mangle]
pub unsafe extern "C" fn rm_update_result_free(r: *mut rm_update_result) {
    guard_void(|| UpdateBox::free(r))
}

/// JSON rendering of an update result. Free *out_json with rm_string_free().
#[no_mangle]
pub unsafe extern "C" fn rm_update_result_json(r: *const rm_update_result, out_json: *mut *mut c_char) -> rm_status {
    guard(|| to_json(UpdateBox::from_raw(r).map(|b| &b.rust), render::update, out_json))
}
