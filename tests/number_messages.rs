//! Issue 26 (cosmetic): an out-of-range number echoed in an error message is
//! printed short (`%g`-like), not as the ~330 digits of its exact decimal
//! expansion. Before: `decay_rate = -DBL_MIN` came back as
//! "-0.0000…00022250738585072014" (over 300 characters).

use std::ptr::null_mut;

use robotmem::ffi::*;
use robotmem::*;

#[path = "common/c_abi.rs"]
mod c_abi;

/// Every bad value whose exact decimal form is long, and some short ones.
const VALUES: [f64; 8] = [-f64::MIN_POSITIVE, f64::MAX, f64::MIN, -5e-324, 1e300, -1e-300, 1.5, -0.25];

fn short_and_exact(msg: &str, field: &str, v: f64) {
    assert!(msg.contains(field), "{msg}");
    assert!(msg.len() < 120, "{} characters: {msg}", msg.len());
    // The value is there, in a form that reads back as the same number.
    let echoed = msg.split([' ', '(', ')']).filter_map(|w| w.parse::<f64>().ok());
    assert!(echoed.into_iter().any(|x| x == v), "{v:e} not echoed: {msg}");
}

#[test]
fn out_of_range_numbers_are_echoed_short_through_the_c_abi() {
    for v in VALUES.into_iter().filter(|v| !(0.0..=1.0).contains(v)) {
        let o = rm_open_options { decay_rate: v, ..c_abi::memory_options() };
        let mut db = null_mut();
        // SAFETY: valid options and out pointer.
        assert_eq!(unsafe { rm_open(&o, &mut db) }, rm_status::RM_INVALID_ARGUMENT);
        short_and_exact(&c_abi::last_error(), "decay_rate", v);
    }
}

#[test]
fn out_of_range_numbers_are_echoed_short_through_the_rust_api() {
    let mut o = OpenOptions::in_memory();
    o.embeddings = false;
    let db = Db::open(o.clone()).unwrap();
    for v in VALUES.into_iter().filter(|v| *v < 0.0) {
        o.rrf_k = v;
        short_and_exact(&Db::open(o.clone()).err().expect("refused").message, "rrf_k", v);
        o.rrf_k = 60.0;
        o.cosine_dedup = v;
        short_and_exact(&Db::open(o.clone()).err().expect("refused").message, "cosine_dedup", v);
        o.cosine_dedup = OpenOptions::default().cosine_dedup;
    }
    for v in VALUES.into_iter().filter(|v| !(0.0..=1.0).contains(v)) {
        let req = RecallRequest { query: "gripper", min_confidence: v, ..Default::default() };
        short_and_exact(&db.recall(&req).expect_err("refused").message, "min_confidence", v);
    }
}
