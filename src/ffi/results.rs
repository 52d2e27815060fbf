//! Result structs the library allocates, and their free / JSON functions.
//!
//! Each public `rm_*_result` struct is the first field of a private `#[repr(C)]`
//! box that also owns the strings and arrays it points to, plus the Rust value
//! for the JSON rendering. Freeing the public pointer frees the whole box.

use std::ffi::{c_char, CString};
use std::ptr;

use serde_json::Value;

use super::recall::{c_hits, rm_hit};
use super::{guard, out_ptr, rm_status, to_cstring};
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

fn dup_method(d: &Option<Duplicate>) -> (bool, rm_dup_method, f64) {
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

/// Owns C strings and arrays; pointers into it stay valid while it lives.
#[derive(Default)]
pub(crate) struct Arena {
    strings: Vec<CString>,
    lists: Vec<Vec<*const c_char>>,
}

impl Arena {
    pub(crate) fn str(&mut self, s: &str) -> *const c_char {
        let c = to_cstring(s);
        let p = c.as_ptr();
        self.strings.push(c);
        p
    }
    pub(crate) fn opt(&mut self, s: Option<&str>) -> *const c_char {
        s.map_or(ptr::null(), |s| self.str(s))
    }
    pub(crate) fn list(&mut self, items: &[String]) -> (*const *const c_char, usize) {
        let v: Vec<*const c_char> = items.iter().map(|s| self.str(s)).collect();
        let p = if v.is_empty() { ptr::null() } else { v.as_ptr() };
        let n = v.len();
        self.lists.push(v);
        (p, n)
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
        status: match m.status {
            MemoryStatus::Active => rm_memory_status::RM_MEMORY_ACTIVE,
            MemoryStatus::Superseded => rm_memory_status::RM_MEMORY_SUPERSEDED,
            MemoryStatus::Invalidated => rm_memory_status::RM_MEMORY_INVALIDATED,
        },
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
    }
}

pub(crate) fn slice_ptr<T>(v: &[T]) -> *const T {
    if v.is_empty() {
        ptr::null()
    } else {
        v.as_ptr()
    }
}

/// Declares a boxed result: the public struct first, then what it points into.
macro_rules! owned {
    ($boxed:ident, $public:ty, $rust:ty, { $($extra:ident : $ety:ty),* }) => {
        #[repr(C)]
        pub(crate) struct $boxed {
            public: $public,
            arena: Arena,
            rust: $rust,
            $($extra: $ety,)*
        }
        impl $boxed {
            pub(crate) fn into_raw(self) -> *mut $public {
                Box::into_raw(Box::new(self)) as *mut $public
            }
            /// # Safety
            /// `p` is NULL or was returned by `into_raw` and not freed.
            unsafe fn from_raw<'a>(p: *const $public) -> Option<&'a $boxed> {
                (p as *const $boxed).as_ref()
            }
            /// # Safety
            /// As `from_raw`; `p` is not used afterwards.
            unsafe fn free(p: *mut $public) {
                if !p.is_null() {
                    drop(Box::from_raw(p as *mut $boxed));
                }
            }
        }
    };
}
pub(crate) use owned;

/// Writes the JSON rendering of a result to `*out_json` (free with rm_string_free).
pub(crate) fn to_json<T>(found: Option<&T>, render: impl FnOnce(&T) -> Value, out_json: *mut *mut c_char) -> rm_status {
    guard(|| {
        out_ptr(out_json, "out_json")?;
        let r = found.ok_or_else(|| crate::Error::invalid("result is NULL"))?;
        let text = to_cstring(&render(r).to_string());
        // SAFETY: out_json checked non-NULL.
        unsafe { *out_json = text.into_raw() };
        Ok(())
    })
}

// --- learn -----------------------------------------------------------------

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
    }
}

/// Frees a learn result. NULL is accepted.
#[no_mangle]
pub unsafe extern "C" fn rm_learn_result_free(r: *mut rm_learn_result) {
    LearnBox::free(r)
}

/// JSON rendering of a learn result ({"status": "created", ...} or
/// {"status": "duplicate", ...}). Free *out_json with rm_string_free().
#[no_mangle]
pub unsafe extern "C" fn rm_learn_result_json(r: *const rm_learn_result, out_json: *mut *mut c_char) -> rm_status {
    to_json(LearnBox::from_raw(r).map(|b| &b.rust), render::learn, out_json)
}

// --- single memory -----------------------------------------------------------

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
    MemoryBox::free(r)
}

/// JSON rendering of one memory. Free *out_json with rm_string_free().
#[no_mangle]
pub unsafe extern "C" fn rm_memory_result_json(r: *const rm_memory_result, out_json: *mut *mut c_char) -> rm_status {
    to_json(MemoryBox::from_raw(r).map(|b| &b.rust), render::memory, out_json)
}

// --- perception --------------------------------------------------------------

/// Result of rm_save_perception(). Free with rm_perception_result_free().
#[repr(C)]
pub struct rm_perception_result {
    /// Id of the new memory, or of the identical existing one when duplicate.
    pub memory_id: i64,
    /// True when the same description, type, data and metadata are already stored.
    pub duplicate: bool,
    pub dup_method: rm_dup_method,
    pub perception_type: rm_perception_type,
    pub collection: *const c_char,
    /// Whether an embedding was stored with it.
    pub has_embedding: bool,
}

owned!(PerceptionBox, rm_perception_result, PerceptionOutcome, {});

pub(crate) fn perception_result(o: PerceptionOutcome) -> PerceptionBox {
    let mut arena = Arena::default();
    let (duplicate, dup_method, _) = dup_method(&o.duplicate);
    let public = rm_perception_result {
        memory_id: o.memory_id,
        duplicate,
        dup_method,
        perception_type: Some(o.perception_type).into(),
        collection: arena.str(&o.collection),
        has_embedding: o.has_embedding,
    };
    PerceptionBox { public, arena, rust: o }
}

/// Frees a perception result. NULL is accepted.
#[no_mangle]
pub unsafe extern "C" fn rm_perception_result_free(r: *mut rm_perception_result) {
    PerceptionBox::free(r)
}

/// JSON rendering of a perception result. Free *out_json with rm_string_free().
#[no_mangle]
pub unsafe extern "C" fn rm_perception_result_json(
    r: *const rm_perception_result,
    out_json: *mut *mut c_char,
) -> rm_status {
    to_json(PerceptionBox::from_raw(r).map(|b| &b.rust), render::perception, out_json)
}

// --- forget / update ----------------------------------------------------------

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
    ForgetBox::free(r)
}

/// JSON rendering of a forget result. Free *out_json with rm_string_free().
#[no_mangle]
pub unsafe extern "C" fn rm_forget_result_json(r: *const rm_forget_result, out_json: *mut *mut c_char) -> rm_status {
    to_json(ForgetBox::from_raw(r).map(|b| &b.rust), render::forget, out_json)
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
    UpdateBox::free(r)
}

/// JSON rendering of an update result. Free *out_json with rm_string_free().
#[no_mangle]
pub unsafe extern "C" fn rm_update_result_json(r: *const rm_update_result, out_json: *mut *mut c_char) -> rm_status {
    to_json(UpdateBox::from_raw(r).map(|b| &b.rust), render::update, out_json)
}

// --- sessions ----------------------------------------------------------------

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
    SessionBox::free(r)
}

/// JSON rendering of a started session. Free *out_json with rm_string_free().
#[no_mangle]
pub unsafe extern "C" fn rm_session_json(r: *const rm_session, out_json: *mut *mut c_char) -> rm_status {
    to_json(SessionBox::from_raw(r).map(|b| &b.rust), render::session_started, out_json)
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
    SummaryBox::free(r)
}

/// JSON rendering of a session summary. Free *out_json with rm_string_free().
#[no_mangle]
pub unsafe extern "C" fn rm_session_summary_json(
    r: *const rm_session_summary,
    out_json: *mut *mut c_char,
) -> rm_status {
    to_json(SummaryBox::from_raw(r).map(|b| &b.rust), render::session_ended, out_json)
}
