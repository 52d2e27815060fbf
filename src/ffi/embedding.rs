//! C API of the embedding side: status, re-embed, batch learn.

use std::ffi::c_char;

use super::arena::{owned, slice_ptr, to_json, Arena};
use super::args::{out_ptr, req_str};
use super::guard::{guard, guard_void, rm_status};
use super::handle::{self, rm_db};
use super::memory::{learn_public, learn_request, rm_learn_options, rm_learn_result};
use crate::types::*;

/// Whether vector search works on a handle.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum rm_embed_state {
    /// Model loaded and the stored vectors are its own: recall is hybrid.
    RM_EMBED_READY = 0,
    /// No model or ONNX Runtime (not configured, missing, or failed to load): BM25 only.
    RM_EMBED_UNAVAILABLE = 1,
    /// The stored vectors were made by another model: BM25 only until rm_reembed().
    RM_EMBED_MODEL_MISMATCH = 2,
}

/// Result of rm_embedding_status(). Free with rm_embedding_info_free().
#[repr(C)]
pub struct rm_embedding_info {
    pub state: rm_embed_state,
    /// This handle's model as "name/dim/hash"; NULL when no model is loaded.
    pub model: *const c_char,
    /// Vector dimension of this handle's model; 0 when none.
    pub dim: usize,
    /// Model stamp of the vectors stored in the file; NULL when none yet.
    pub stored_model: *const c_char,
    /// Active memories without a vector (embedded by rm_reembed()).
    pub pending: i64,
    /// sqlite-vec kernel in use: "avx", "neon" or "portable".
    pub kernel: *const c_char,
    /// Why state is not RM_EMBED_READY ("" when it is).
    pub reason: *const c_char,
    /// The in-process vector index's scan kernel, chosen for this CPU at run
    /// time: "avx512-vnni", "avx2", "neon-dotprod", "neon" or "portable" (every
    /// kernel ranks identically; this says which instructions do the work).
    pub index_kernel: *const c_char,
}

owned!(InfoBox, rm_embedding_info, EmbeddingStatus, {});

/// Reports whether vector search works on this handle, which model made the
/// stored vectors, how many memories wait for a vector, and why not ready.
///
/// Errors: RM_INVALID_ARGUMENT (NULL out), RM_CLOSED, RM_IO.
/// Ownership: free *out with rm_embedding_info_free(). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rm_embedding_status(db: *mut rm_db, out: *mut *mut rm_embedding_info) -> rm_status {
    guard(|| {
        out_ptr(out, "out")?;
        let s = handle::db(db)?.embedding_status()?;
        let mut arena = Arena::default();
        let public = rm_embedding_info {
            state: match s.state {
                EmbeddingState::Ready => rm_embed_state::RM_EMBED_READY,
                EmbeddingState::Unavailable => rm_embed_state::RM_EMBED_UNAVAILABLE,
                EmbeddingState::ModelMismatch => rm_embed_state::RM_EMBED_MODEL_MISMATCH,
            },
            model: arena.opt(s.model.as_deref()),
            dim: s.dim,
            stored_model: arena.opt(s.stored_model.as_deref()),
            pending: s.pending,
            kernel: arena.str(s.kernel),
            reason: arena.str(&s.reason),
            index_kernel: arena.str(s.index_kernel),
        };
        // SAFETY: out checked non-NULL.
        unsafe { *out = InfoBox { public, arena, rust: s }.into_raw() };
        Ok(())
    })
}

/// Frees an embedding status. NULL is accepted.
#[no_mangle]
pub unsafe extern "C" fn rm_embedding_info_free(r: *mut rm_embedding_info) {
    guard_void(|| InfoBox::free(r))
}

/// JSON rendering of an embedding status. Free *out_json with rm_string_free().
#[no_mangle]
pub unsafe extern "C" fn rm_embedding_info_json(r: *const rm_embedding_info, out_json: *mut *mut c_char) -> rm_status {
    guard(|| to_json(InfoBox::from_raw(r).map(|b| &b.rust), crate::render::embedding_status, out_json))
}

/// Output of rm_reembed() (a plain struct the caller owns).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct rm_reembed_result {
    /// Memories embedded by this call.
    pub embedded: i64,
    /// Active memories still without a vector.
    pub remaining: i64,
    /// True when this call dropped another model's vectors to rebuild them.
    pub rebuilt: bool,
}

/// Embeds active memories that have no vector of this handle's model — those
/// learned while no model was available, or all of them after a model change
/// (the old vectors are dropped first). At most `limit` per call (0: all), in
/// batches of opts.embed_batch with one short write transaction each, so other
/// threads and processes keep working; call again while remaining > 0 to spread
/// the work. `out` may be NULL.
///
/// Errors: RM_EMBEDDING_UNAVAILABLE (no model on this handle; see
/// rm_embedding_status()), RM_INVALID_STATE (another process changed the model
/// meanwhile), RM_CLOSED, RM_BUSY, RM_FULL, RM_IO. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rm_reembed(db: *mut rm_db, limit: usize, out: *mut rm_reembed_result) -> rm_status {
    guard(|| {
        let r = handle::db(db)?.reembed(limit)?;
        if !out.is_null() {
            // SAFETY: checked non-NULL; the caller owns a writable rm_reembed_result.
            unsafe {
                out.write(rm_reembed_result { embedded: r.embedded, remaining: r.remaining, rebuilt: r.rebuilt })
            };
        }
        Ok(())
    })
}

/// One experience of rm_learn_batch().
#[repr(C)]
pub struct rm_learn_item {
    /// As rm_learn()'s insight.
    pub insight: *const c_char,
    /// As rm_learn()'s opts; NULL: defaults.
    pub opts: *const rm_learn_options,
}

/// Result of rm_learn_batch(). Free with rm_learn_batch_result_free().
#[repr(C)]
pub struct rm_learn_batch_result {
    /// One result per item, in item order (see rm_learn_result).
    pub results: *const rm_learn_result,
    pub count: usize,
}

owned!(BatchBox, rm_learn_batch_result, Vec<LearnOutcome>, { items: Vec<rm_learn_result> });

/// Largest batch accepted by rm_learn_batch().
pub const RM_MAX_BATCH: usize = 10_000;

/// Stores many experiences at once: every item is validated first (one bad item
/// fails the call with a message naming its index, and nothing is stored), the
/// texts are embedded in batches of opts.embed_batch, and all items are written
/// in one transaction (one commit). Each item is deduplicated as by rm_learn()
/// against the database and the items before it. `out` may be NULL.
///
/// Errors: as rm_learn(); RM_INVALID_ARGUMENT also for NULL items with count > 0
/// or count > RM_MAX_BATCH.
/// Ownership: free *out with rm_learn_batch_result_free(). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rm_learn_batch(
    db: *mut rm_db,
    items: *const rm_learn_item,
    count: usize,
    out: *mut *mut rm_learn_batch_result,
) -> rm_status {
    guard(|| {
        let db = handle::db(db)?;
        if count > RM_MAX_BATCH {
            return Err(crate::Error::invalid(format!("count {count} exceeds RM_MAX_BATCH ({RM_MAX_BATCH})")));
        }
        if items.is_null() && count > 0 {
            return Err(crate::Error::invalid("items is NULL but count is not 0"));
        }
        let mut parts = Vec::with_capacity(count);
        for i in 0..count {
            // SAFETY: items points to `count` items (checked non-NULL above when count > 0).
            let item = unsafe { &*items.add(i) };
            let at = |e: crate::Error| crate::Error::new(e.status, format!("items[{i}]: {}", e.message));
            let insight = req_str(item.insight, "insight").map_err(at)?;
            parts.push(learn_request(insight, item.opts).map_err(at)?);
        }
        let reqs: Vec<LearnRequest> = parts.iter().map(|(req, tags)| LearnRequest { tags, ..*req }).collect();
        let outcomes = db.learn_batch(&reqs)?;
        if !out.is_null() {
            let mut arena = Arena::default();
            let items: Vec<rm_learn_result> = outcomes.iter().map(|o| learn_public(o, &mut arena)).collect();
            let public = rm_learn_batch_result { results: slice_ptr(&items), count: items.len() };
            // SAFETY: checked non-NULL.
            unsafe { *out = BatchBox { public, arena, rust: outcomes, items }.into_raw() };
        }
        Ok(())
    })
}

/// Frees a batch learn result. NULL is accepted.
#[no_mangle]
pub unsafe extern "C" fn rm_learn_batch_result_free(r: *mut rm_learn_batch_result) {
    guard_void(|| BatchBox::free(r))
}

/// JSON rendering of a batch learn result (an array of rm_learn_result_json()
/// objects). Free *out_json with rm_string_free().
#[no_mangle]
pub unsafe extern "C" fn rm_learn_batch_result_json(
    r: *const rm_learn_batch_result,
    out_json: *mut *mut c_char,
) -> rm_status {
    guard(|| {
        to_json(
            BatchBox::from_raw(r).map(|b| &b.rust),
            |v: &Vec<LearnOutcome>| serde_json::Value::Array(v.iter().map(crate::render::learn).collect()),
            out_json,
        )
    })
}
