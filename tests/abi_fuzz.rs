//! Every numeric field and argument of the C ABI over the WHOLE range of its C type
//! (not the documented range): u32/u64/usize/i32/i64 from min to max, every class
//! of double (NaN, ±inf, subnormal, ±0), enums as raw int32 values. Each call must
//! return a status, never RM_PANIC; out-of-range values are RM_INVALID_ARGUMENT
//! with a message naming the field; no message carries a source path. (Issue 11:
//! busy_timeout_ms above INT32_MAX returned RM_PANIC with the build machine's
//! cargo path.) Pointer-length pairs are fuzzed over every length the test's own
//! buffers make safe to read plus every length above the documented limit.

use std::ffi::{c_char, CString};
use std::ptr::{null, null_mut};

use proptest::prelude::*;
use robotmem::ffi::*;

#[path = "common/c_abi.rs"]
mod c_abi;

use c_abi::last_error;

/// The status of a call and its message: never a panic, never a source path.
fn checked(status: rm_status) -> (rm_status, String) {
    let msg = last_error();
    assert_ne!(status, rm_status::RM_PANIC, "panic: {msg}");
    for marker in [".rs:", ".rs ", "/src/", "cargo", "rustc"] {
        assert!(!msg.contains(marker), "message carries a source path: {msg}");
    }
    (status, msg)
}

fn open_default() -> *mut rm_db {
    c_abi::open_in_memory()
}

fn unit(v: f64) -> bool {
    v.is_finite() && (0.0..=1.0).contains(&v)
}

fn non_negative(v: f64) -> bool {
    v.is_finite() && v >= 0.0
}

/// Every class of double, with the whole bit range behind it.
fn any_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        prop::num::f64::ANY,
        any::<u64>().prop_map(f64::from_bits),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(-0.0)
    ]
}

#[derive(Debug, Clone)]
struct OpenFields {
    busy_timeout_ms: u32,
    durability: i32,
    rrf_k: f64,
    decay_rate: f64,
    max_db_bytes: u64,
    embed_threads: u32,
    embed_batch: u32,
    cosine_dedup: f64,
    file: bool,
}

fn open_fields() -> impl Strategy<Value = OpenFields> {
    // Each field is either its default or drawn from its whole type range, so a
    // case often has one bad field (the message must name it) or none.
    let u32_or = |d: u32| prop_oneof![Just(d), any::<u32>()];
    let f64_or = |d: f64| prop_oneof![Just(d), any_f64()];
    (
        u32_or(5000),
        prop_oneof![Just(0), Just(1), any::<i32>()],
        f64_or(60.0),
        f64_or(0.01),
        prop_oneof![Just(0u64), any::<u64>()],
        u32_or(2),
        u32_or(32),
        f64_or(0.85),
        any::<bool>(),
    )
        .prop_map(|(b, d, k, r, m, t, ba, c, file)| OpenFields {
            busy_timeout_ms: b,
            durability: d,
            rrf_k: k,
            decay_rate: r,
            max_db_bytes: m,
            embed_threads: t,
            embed_batch: ba,
            cosine_dedup: c,
            file,
        })
}

impl OpenFields {
    /// Names of the fields outside their range.
    fn invalid(&self) -> Vec<&'static str> {
        let mut bad = Vec::new();
        if self.busy_timeout_ms > i32::MAX as u32 {
            bad.push("busy_timeout_ms");
        }
        if !(0..=1).contains(&self.durability) {
            bad.push("durability");
        }
        if !non_negative(self.rrf_k) {
            bad.push("rrf_k");
        }
        if !unit(self.decay_rate) {
            bad.push("decay_rate");
        }
        if !(1..=64).contains(&self.embed_threads) {
            bad.push("embed_threads");
        }
        if !(1..=1024).contains(&self.embed_batch) {
            bad.push("embed_batch");
        }
        if !non_negative(self.cosine_dedup) {
            bad.push("cosine_dedup");
        }
        bad
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn open_options_over_their_whole_type_ranges(f in open_fields()) {
        let dir = tempfile::Builder::new().prefix("rm-abi-fuzz-").tempdir().unwrap();
        let path = CString::new(if f.file { dir.path().join("m.db").display().to_string() } else { ":memory:".into() }).unwrap();
        let mut o = std::mem::MaybeUninit::<rm_open_options>::uninit();
        // SAFETY: init writes every field; the enum field is written as its raw int32.
        let mut o = unsafe {
            rm_open_options_init(o.as_mut_ptr());
            o.assume_init()
        };
        o.path = path.as_ptr();
        o.busy_timeout_ms = f.busy_timeout_ms;
        // SAFETY: rm_durability is a 32-bit C enum; any int32 a C caller can store.
        unsafe { *(std::ptr::addr_of_mut!(o.durability) as *mut i32) = f.durability };
        o.rrf_k = f.rrf_k;
        o.decay_rate = f.decay_rate;
        o.max_db_bytes = f.max_db_bytes;
        o.embed_threads = f.embed_threads;
        o.embed_batch = f.embed_batch;
        o.cosine_dedup = f.cosine_dedup;
        o.embeddings = false;
        let mut db = null_mut();
        // SAFETY: valid options and out pointer.
        let (status, msg) = checked(unsafe { rm_open(&o, &mut db) });
        let bad = f.invalid();
        if bad.is_empty() {
            // A tiny max_db_bytes leaves no room for the schema: RM_FULL, not a crash.
            prop_assert!(status == rm_status::RM_OK || (status == rm_status::RM_FULL && f.max_db_bytes > 0), "{status:?} {msg}");
        } else {
            prop_assert_eq!(status, rm_status::RM_INVALID_ARGUMENT, "{:?}: {}", bad, msg);
            prop_assert!(bad.iter().any(|b| msg.contains(b)), "message names none of {:?}: {}", bad, msg);
            prop_assert!(db.is_null(), "no handle on failure");
        }
        if status == rm_status::RM_OK {
            prop_assert_eq!(rm_close(db), rm_status::RM_OK);
        }
    }

    #[test]
    fn recall_options_over_their_whole_type_ranges(n in any::<i32>(), min_confidence in any_f64(), group_similar in any::<bool>()) {
        let db = open_default();
        let mut o = std::mem::MaybeUninit::<rm_recall_options>::uninit();
        // SAFETY: init writes every field.
        let mut o = unsafe { rm_recall_options_init(o.as_mut_ptr()); o.assume_init() };
        o.n = n;
        o.min_confidence = min_confidence;
        o.group_similar = group_similar;
        let mut out = null_mut();
        // SAFETY: valid pointers.
        let (status, msg) = checked(unsafe { rm_recall(db, c"grasp".as_ptr(), &o, &mut out) });
        if unit(min_confidence) {
            prop_assert_eq!(status, rm_status::RM_OK, "{}", msg);
            // SAFETY: a result of rm_recall.
            unsafe { rm_recall_result_free(out) };
        } else {
            prop_assert_eq!(status, rm_status::RM_INVALID_ARGUMENT);
            prop_assert!(msg.contains("min_confidence"), "{}", msg);
        }
        rm_close(db);
    }

    #[test]
    fn counts_and_lengths_over_their_whole_type_ranges(
        tag_count in prop_oneof![0usize..=3, 21usize..=usize::MAX],
        data_len in prop_oneof![0usize..=(4 << 20) + 1, (4usize << 20) + 2..=usize::MAX],
        perception_type in prop_oneof![1i32..=5, any::<i32>()],
        batch in prop_oneof![0usize..=3, RM_MAX_BATCH + 1..=usize::MAX],
        limit in any::<usize>(),
    ) {
        let db = open_default();
        let tags = [c"arm".as_ptr(), c"grasp".as_ptr(), c"lab".as_ptr()];
        let mut lo = std::mem::MaybeUninit::<rm_learn_options>::uninit();
        // SAFETY: init writes every field.
        let mut lo = unsafe { rm_learn_options_init(lo.as_mut_ptr()); lo.assume_init() };
        lo.tags = tags.as_ptr();
        lo.tag_count = tag_count;
        // SAFETY: tags holds 3 pointers; counts above the limit (20) are refused before reading.
        let (status, msg) = checked(unsafe { rm_learn(db, c"grasp of the red mug worked".as_ptr(), &lo, null_mut()) });
        prop_assert_eq!(status == rm_status::RM_OK, tag_count <= 3, "{:?} {}", status, msg);
        if tag_count > 3 {
            prop_assert!(msg.contains("tag_count"), "{}", msg);
        }

        let data = vec![7u8; (4 << 20) + 1];
        let mut po = std::mem::MaybeUninit::<rm_perception_options>::uninit();
        // SAFETY: init writes every field.
        let mut po = unsafe { rm_perception_options_init(po.as_mut_ptr()); po.assume_init() };
        // SAFETY: a 32-bit C enum; any int32 a C caller can store.
        unsafe { *(std::ptr::addr_of_mut!(po.perception_type) as *mut i32) = perception_type };
        po.data = data.as_ptr();
        po.data_len = data_len;
        // SAFETY: data holds 4 MiB + 1 bytes; longer lengths are refused before reading.
        let (status, msg) = checked(unsafe { rm_save_perception(db, c"force trace of a grasp".as_ptr(), &po, null_mut()) });
        let ok = (1..=5).contains(&perception_type) && data_len <= 4 << 20;
        prop_assert_eq!(status == rm_status::RM_OK, ok, "{:?} {}", status, msg);
        if !ok {
            prop_assert_eq!(status, rm_status::RM_INVALID_ARGUMENT);
            prop_assert!(msg.contains("perception_type") || msg.contains("data_len"), "{}", msg);
        }

        let insights = [c"first batch item".as_ptr(), c"second batch item".as_ptr(), c"third batch item".as_ptr()];
        let items: Vec<rm_learn_item> = insights.iter().map(|&i| rm_learn_item { insight: i, opts: null() }).collect();
        let mut out = null_mut();
        // SAFETY: items holds 3 entries; counts above RM_MAX_BATCH are refused before reading.
        let (status, msg) = checked(unsafe { rm_learn_batch(db, items.as_ptr(), batch, &mut out) });
        prop_assert_eq!(status == rm_status::RM_OK, batch <= 3, "{:?} {}", status, msg);
        if status == rm_status::RM_OK {
            // SAFETY: a result of rm_learn_batch.
            unsafe { rm_learn_batch_result_free(out) };
        }

        let mut r = std::mem::MaybeUninit::<rm_reembed_result>::uninit();
        // SAFETY: valid pointers.
        let (status, _) = checked(unsafe { rm_reembed(db, limit, r.as_mut_ptr()) });
        prop_assert_eq!(status, rm_status::RM_EMBEDDING_UNAVAILABLE);
        rm_close(db);
    }

    #[test]
    fn ids_scores_and_codes_over_their_whole_type_ranges(id in any::<i64>(), score in any_f64(), code in any::<i32>()) {
        let db = open_default();
        let mut out = null_mut();
        let (status, msg) = checked(rm_get_memory(db, id, &mut out));
        prop_assert!(matches!(status, rm_status::RM_NOT_FOUND | rm_status::RM_INVALID_ARGUMENT), "{:?} {}", status, msg);
        // SAFETY: valid pointers.
        let (status, _) = checked(unsafe { rm_forget(db, id, c"gone".as_ptr(), null_mut()) });
        prop_assert!(matches!(status, rm_status::RM_NOT_FOUND | rm_status::RM_INVALID_ARGUMENT));
        // SAFETY: valid pointers.
        let (status, _) = checked(unsafe { rm_update(db, id, c"new text".as_ptr(), null(), null_mut()) });
        prop_assert!(matches!(status, rm_status::RM_NOT_FOUND | rm_status::RM_INVALID_ARGUMENT));

        let mut s = null_mut();
        // SAFETY: valid pointers.
        assert_eq!(unsafe { rm_start_session(db, null(), null(), &mut s) }, rm_status::RM_OK);
        // SAFETY: s is a session result; its id is a NUL-terminated string it owns.
        let sid: *const c_char = unsafe { (*s).session_id };
        let mut summary = null_mut();
        // SAFETY: valid pointers.
        let (status, msg) = checked(unsafe { rm_end_session(db, sid, &score, &mut summary) });
        if unit(score) {
            prop_assert_eq!(status, rm_status::RM_OK, "{}", msg);
            // SAFETY: a result of rm_end_session.
            unsafe { rm_session_summary_free(summary) };
        } else {
            prop_assert_eq!(status, rm_status::RM_INVALID_ARGUMENT);
            prop_assert!(msg.contains("outcome_score"), "{}", msg);
        }
        // SAFETY: a result of rm_start_session.
        unsafe { rm_session_free(s) };
        prop_assert!(!rm_status_str(code).is_null());
        rm_close(db);
    }
}
