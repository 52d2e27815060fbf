//! Phase writers: several threads learning one memory at a time into one
//! handle, with the model. Their embeddings share the handle's sessions (a
//! caller finding them busy waits for the next free one, or has its text run
//! with the other waiting texts when the model batches) and their commits
//! share group commits; the rows give the latency each writer sees and the
//! learns per second of all of them.

use std::path::Path;
use std::time::Instant;

use robotmem::Durability;
use serde_json::{json, Map, Value};

use super::util::{memories, open_db, timed};
use super::{section, Args, Report};
use crate::stats::{header, Summary};

/// Writer counts measured.
const WRITERS: &[usize] = &[1, 2, 4];

pub(super) fn writers_phase(a: &Args, dir: &Path, rep: &mut Report) {
    let n = a.learns.unwrap_or(a.memories).min(4000);
    let mems = memories(n, a.seed ^ 0x77);
    section(&format!(
        "concurrent writers: {n} learns one at a time with the model, split over W threads (durability normal, \
         embed_threads 2)"
    ));
    println!("{}", header());
    let mut j = Map::new();
    for &w in WRITERS {
        let path = dir.join(format!("writers-{w}.db"));
        let db = open_db(a, &path, Durability::Normal, 2, true);
        let started = Instant::now();
        let lat: Vec<u64> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..w)
                .map(|t| {
                    let (db, mems) = (&db, &mems);
                    s.spawn(move || {
                        mems.iter()
                            .skip(t)
                            .step_by(w)
                            .map(|m| timed(|| db.learn(&m.request()).expect("learn")).1)
                            .collect::<Vec<u64>>()
                    })
                })
                .collect();
            handles.into_iter().flat_map(|h| h.join().expect("writer")).collect()
        });
        let wall = started.elapsed().as_secs_f64();
        drop(db);
        let _ = std::fs::remove_file(&path);
        let s = Summary::of(&lat);
        println!("{}", s.row(&format!("{w} writer(s), per learn")));
        println!("  {w} writer(s): {:.0} learns/s ({wall:.1} s)", n as f64 / wall);
        j.insert(format!("w{w}"), json!({"per_learn": s.json(), "per_s": (n as f64 / wall).round()}));
    }
    rep.json.insert("writers".into(), Value::Object(j));
}
