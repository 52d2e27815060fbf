//! Recall: its options, the hits with their relevance signals, the search mode,
//! what became of the query's embedding, and the recall result.

use std::ffi::c_char;

use super::arena::{owned, put, slice_ptr, to_json, Arena};
use super::args::{opt_str, out_ptr, req_str};
use super::guard::{guard, guard_void, rm_status};
use super::handle::{self, rm_db};
use super::memory::{c_memory, rm_memory};
use crate::render;
use crate::types::*;

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
        let db = handle::db(db)?;
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

/// Which ranked lists produced a recall.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum rm_search_mode {
    /// BM25 and vector lists fused (a weighted sum of BM25 share and cosine; README).
    RM_MODE_HYBRID = 0,
    /// BM25 only (no model, a query the model cannot represent, or no vector
    /// neighbour above the model's cosine floor).
    RM_MODE_BM25_ONLY = 1,
    /// Vector only (no memory holds a query word).
    RM_MODE_VEC_ONLY = 2,
    /// The query had no searchable word: newest memories passing the filters.
    RM_MODE_SCAN = 3,
}

/// What became of the query's embedding in a recall.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum rm_query_vector {
    /// No vector search: no model on the handle, stored vectors of another model
    /// (see rm_embedding_status), or a query without a letter or digit.
    RM_QUERY_VECTOR_NONE = 0,
    /// The query was embedded and its neighbours searched.
    RM_QUERY_VECTOR_EMBEDDED = 1,
    /// The model cannot represent the query (too many unknown tokens, e.g.
    /// Chinese with an English-vocabulary model): BM25 ranked it alone.
    RM_QUERY_VECTOR_UNREPRESENTABLE = 2,
}

/// One recall result.
#[repr(C)]
pub struct rm_hit {
    pub memory: rm_memory,
    /// Fused relevance, normalised so the best hit of the call is 1.0.
    pub score: f64,
    /// Distance to the spatial_sort target; only meaningful when has_distance.
    /// INFINITY when the memory has no usable coordinates.
    pub distance: f64,
    pub has_distance: bool,
    /// True when the memory matched the query (shares a word with it, or its
    /// vector is above the model's cosine floor). A recall with context_filter,
    /// session_id or spatial_sort also returns memories that only satisfy those
    /// (matched false, score 0): after the matches, newest first; with
    /// spatial_sort, the nearest whatever the query.
    pub matched: bool,
    /// Share of the query's BM25 weight the memory holds, 0–1; only meaningful
    /// when has_lexical (it holds a query word).
    pub lexical: f64,
    pub has_lexical: bool,
    /// Cosine of the memory's vector to the query's; only meaningful when
    /// has_cosine (hybrid recall, and the memory has a vector).
    pub cosine: f64,
    pub has_cosine: bool,
    /// With rm_recall_options.group_similar: the ids of the other ranked memories
    /// that say the same thing as this one, best first (similar_count of them;
    /// NULL when 0). Owned by the result.
    pub similar_ids: *const i64,
    pub similar_count: usize,
}

pub(crate) fn c_hits(hits: &[Hit], a: &mut Arena) -> Vec<rm_hit> {
    hits.iter()
        .map(|h| rm_hit {
            memory: c_memory(&h.memory, a),
            score: h.score,
            distance: h.distance.unwrap_or(0.0),
            has_distance: h.distance.is_some(),
            matched: h.matched,
            lexical: h.lexical.unwrap_or(0.0),
            has_lexical: h.lexical.is_some(),
            cosine: h.cosine.unwrap_or(0.0),
            has_cosine: h.cosine.is_some(),
            // Points into the hit's own vector, which the result owns and never changes.
            similar_ids: slice_ptr(&h.similar),
            similar_count: h.similar.len(),
        })
        .collect()
}

// ---------------------------------------------------------------------------
// The recall result

/// Result of rm_recall(). Free with rm_recall_result_free().
#[repr(C)]
pub struct rm_recall_result {
    /// `count` hits, best first (nearest first with spatial_sort). NULL when count is 0.
    pub hits: *const rm_hit,
    pub count: usize,
    pub mode: rm_search_mode,
    /// Whether the query was embedded; RM_QUERY_VECTOR_UNREPRESENTABLE says the
    /// model could not represent it, so memories in other words or another
    /// language were not found by meaning.
    pub query_vector: rm_query_vector,
    /// Time spent in the search, in milliseconds.
    pub query_ms: f64,
}

owned!(RecallBox, rm_recall_result, RecallResult, { hits: Vec<rm_hit> });

pub(crate) fn recall_result(r: RecallResult) -> RecallBox {
    let mut arena = Arena::default();
    let hits = c_hits(&r.hits, &mut arena);
    let public = rm_recall_result {
        hits: slice_ptr(&hits),
        count: hits.len(),
        mode: search_mode(r.mode),
        query_vector: match r.query_vector {
            QueryVector::None => rm_query_vector::RM_QUERY_VECTOR_NONE,
            QueryVector::Embedded => rm_query_vector::RM_QUERY_VECTOR_EMBEDDED,
            QueryVector::Unrepresentable => rm_query_vector::RM_QUERY_VECTOR_UNREPRESENTABLE,
        },
        query_ms: r.query_ms,
    };
    RecallBox { public, arena, rust: r, hits }
}

fn search_mode(m: SearchMode) -> rm_search_mode {
    match m {
        SearchMode::Hybrid => rm_search_mode::RM_MODE_HYBRID,
        SearchMode::Bm25Only => rm_search_mode::RM_MODE_BM25_ONLY,
        SearchMode::VecOnly => rm_search_mode::RM_MODE_VEC_ONLY,
        SearchMode::Scan => rm_search_mode::RM_MODE_SCAN,
    }
}

/// Frees a recall result and every string it points to. NULL is accepted.
#[no_mangle]
pub unsafe extern "C" fn rm_recall_result_free(r: *mut rm_recall_result) {
    guard_void(|| RecallBox::free(r))
}

/// JSON rendering of a recall result ({"memories": [...], "total", "mode",
/// "query_vector", "query_ms"}; each memory with "_rrf_score", "_matched" and,
/// when known, "_lexical", "_cosine", "_distance"). Free *out_json with rm_string_free().
#[no_mangle]
pub unsafe extern "C" fn rm_recall_result_json(r: *const rm_recall_result, out_json: *mut *mut c_char) -> rm_status {
    guard(|| to_json(RecallBox::from_raw(r).map(|b| &b.rust), render::recall, out_json))
}
