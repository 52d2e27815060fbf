//! Property tests over the input surface (stable Rust has no coverage-guided
//! fuzzer; these are the fallback): query sanitising, context_filter and
//! spatial_sort parsing and matching, dedup symmetry, learn/recall and the C ABI
//! with arbitrary input. `PROPTEST_CASES=N` scales every property.

use std::ffi::CString;

use proptest::prelude::*;
use robotmem::internals::search::filter::{ContextFilter, SpatialSort};
use robotmem::internals::{fingerprint, search, text};
use robotmem::*;
use serde_json::Value;

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| serde_json::json!(f)),
        any::<i64>().prop_map(|i| serde_json::json!(i)),
        "[a-z$._ \"'\\\\]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map("[a-z$._]{0,6}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn fts_queries_are_quoted_words_only(q in any::<String>()) {
        if let Some(m) = text::fts_query(&q) {
            for part in m.split(" OR ") {
                prop_assert!(part.len() >= 3 && part.starts_with('"') && part.ends_with('"'), "{m}");
                prop_assert!(part[1..part.len() - 1].chars().all(char::is_alphanumeric), "{m}");
            }
        }
    }

    #[test]
    fn filters_parse_or_fail_and_never_panic(spec in json_value(), ctx in json_value(), raw in any::<String>()) {
        let _ = ContextFilter::parse(&raw);
        let _ = SpatialSort::parse(&raw);
        if let Ok(f) = ContextFilter::parse(&spec.to_string()) {
            let _ = f.matches(&ctx);
            let text = ctx.to_string();
            let lazy = search::LazyContext::new(&text);
            prop_assert_eq!(f.matches(&ctx), f.matches_with(|p| lazy.lookup(p)));
        }
        if let Ok(s) = SpatialSort::parse(&spec.to_string()) {
            let d = s.distance(&ctx);
            prop_assert!(d >= 0.0 || d.is_nan());
        }
    }

    #[test]
    fn dedup_is_symmetric(a in "[a-z0-9 .]{0,60}", b in "[a-z0-9 .]{0,60}") {
        let (ta, tb) = (fingerprint::Terms::of(&a), fingerprint::Terms::of(&b));
        prop_assert_eq!(ta.duplicate_similarity(&tb), tb.duplicate_similarity(&ta));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn learn_then_recall_finds_it(text in "[a-zA-Z0-9 .,;:'\"*()\\-_=!?\u{4e00}-\u{4e20}]{1,120}") {
        let db = Db::open(OpenOptions::in_memory()).unwrap();
        match db.learn(&LearnRequest { insight: &text, ..Default::default() }) {
            Ok(o) => {
                prop_assert_eq!(db.get(o.memory_id).unwrap().content, text.trim());
                let r = db.recall(&RecallRequest { query: &text, ..Default::default() });
                // The only memory is always found: by its words, or by a scan when it has none.
                prop_assert!(r.unwrap().hits.iter().any(|h| h.memory.id == o.memory_id));
            }
            Err(e) => prop_assert_eq!(e.status, Status::InvalidArgument, "{}", e),
        }
    }

    #[test]
    fn c_abi_takes_arbitrary_bytes(bytes in prop::collection::vec(1u8..=255, 0..400), ctx in prop::collection::vec(1u8..=255, 0..100)) {
        use robotmem::ffi::*;
        let insight = CString::new(bytes).unwrap();
        let context = CString::new(ctx).unwrap();
        unsafe {
            let mut opts: rm_open_options = std::mem::zeroed();
            rm_open_options_init(&mut opts);
            opts.path = c":memory:".as_ptr();
            let mut db = std::ptr::null_mut();
            prop_assert_eq!(rm_open(&opts, &mut db), rm_status::RM_OK);
            let mut lo: rm_learn_options = std::mem::zeroed();
            rm_learn_options_init(&mut lo);
            lo.context = context.as_ptr();
            let mut out = std::ptr::null_mut();
            let s = rm_learn(db, insight.as_ptr(), &lo, &mut out);
            prop_assert!(s == rm_status::RM_OK || s == rm_status::RM_INVALID_ARGUMENT);
            prop_assert_eq!(s == rm_status::RM_OK, !out.is_null());
            rm_learn_result_free(out);
            let mut r = std::ptr::null_mut();
            let s = rm_recall(db, insight.as_ptr(), std::ptr::null(), &mut r);
            prop_assert!(s == rm_status::RM_OK || s == rm_status::RM_INVALID_ARGUMENT);
            rm_recall_result_free(r);
            prop_assert_eq!(rm_close(db), rm_status::RM_OK);
        }
    }
}
