//! Perception data: rm_save_perception with its options and result.

use std::ffi::c_char;

use super::arena::{owned, put, slice_ptr, to_json, Arena};
use super::args::{expiry, opt_str, out_ptr, req_str, tag_list};
use super::guard::{guard, guard_void, rm_status};
use super::handle::{self, rm_db};
use super::memory::{dup_method, rm_dup_method, rm_perception_type};
use crate::error::Error;
use crate::render;
use crate::types::*;

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
    /// Expiry, as for rm_learn_options (0 / NULL: not given).
    pub ttl_seconds: f64,
    pub expires_at: *const c_char,
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
            ttl_seconds: 0.0,
            expires_at: std::ptr::null(),
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
/// RM_OVER_BUDGET (as rm_learn()), RM_CLOSED, RM_BUSY, RM_FULL, RM_IO.
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
        let db = handle::db(db)?;
        let mut req = PerceptionRequest { description: req_str(description, "description")?, ..Default::default() };
        let mut tags = Vec::new();
        if let Some(o) = opts.as_ref() {
            tags = tag_list(o.tags, o.tag_count)?;
            (req.ttl_seconds, req.expires_at) = expiry(o.ttl_seconds, o.expires_at, "opts")?;
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
    /// Memories evicted to keep the memory budget, as for rm_learn_result.
    pub evicted_ids: *const i64,
    pub evicted_count: usize,
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
        evicted_ids: slice_ptr(&o.evicted),
        evicted_count: o.evicted.len(),
    };
    PerceptionBox { public, arena, rust: o }
}

/// Frees a perception result. NULL is accepted.
#[no_mangle]
pub unsafe extern "C" fn rm_perception_result_free(r: *mut rm_perception_result) {
    guard_void(|| PerceptionBox::free(r))
}

/// JSON rendering of a perception result. Free *out_json with rm_string_free().
#[no_mangle]
pub unsafe extern "C" fn rm_perception_result_json(
    r: *const rm_perception_result,
    out_json: *mut *mut c_char,
) -> rm_status {
    guard(|| to_json(PerceptionBox::from_raw(r).map(|b| &b.rust), render::perception, out_json))
}
