//! Recall results of the C ABI: hits with their relevance signals, the search
//! mode and what became of the query's embedding.

use std::ffi::c_char;

use super::results::{c_memory, owned, slice_ptr, to_json, Arena};
use super::{rm_memory, rm_status};
use crate::render;
use crate::types::*;

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

// --- recall ----------------------------------------------------------------

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
    RecallBox::free(r)
}

/// JSON rendering of a recall result ({"memories": [...], "total", "mode",
/// "query_vector", "query_ms"}; each memory with "_rrf_score", "_matched" and,
/// when known, "_lexical", "_cosine", "_distance"). Free *out_json with rm_string_free().
#[no_mangle]
pub unsafe extern "C" fn rm_recall_result_json(r: *const rm_recall_result, out_json: *mut *mut c_char) -> rm_status {
    to_json(RecallBox::from_raw(r).map(|b| &b.rust), render::recall, out_json)
}
