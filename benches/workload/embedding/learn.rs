//! Phases learn (one at a time, with and without the model) and batch
//! (learn_batch throughput and its knobs).

use std::path::{Path, PathBuf};
use std::time::Instant;

use robotmem::internals::embed::TextKind;
use robotmem::{Db, Durability, LearnRequest};
use serde_json::{json, Map, Value};

use super::knn::{load_index, time_knn, Knn};
use super::util::{count, embedder, english_queries, memories, open_db, opts, query_vectors, r3, raw_conn, timed};
use super::{section, Args, Report, BATCH_PER_S, DEDUP_K, LEARN_EMBED_P50_MS};
use crate::corpus::Memory;
use crate::stats::{header, Summary};
use crate::{dur_name, file_bytes, window};

/// One-at-a-time learns; returns (latencies ns, stored with a vector, duplicates, wall s).
fn learn_into(db: &Db, mems: &[Memory], label: &str) -> (Vec<u64>, usize, usize, f64) {
    let mut lat = Vec::with_capacity(mems.len());
    let (mut embedded, mut dups) = (0, 0);
    let started = Instant::now();
    for (i, m) in mems.iter().enumerate() {
        let (out, dt) = timed(|| db.learn(&m.request()));
        let out = out.unwrap_or_else(|e| panic!("learn #{i}: {e}"));
        lat.push(dt);
        embedded += out.has_embedding as usize;
        dups += out.duplicate.is_some() as usize;
        if (i + 1) % (mems.len() / 10).max(1) == 0 {
            eprint!("\r  [{label}] {}/{}", i + 1, mems.len());
        }
    }
    eprintln!();
    (lat, embedded, dups, started.elapsed().as_secs_f64())
}

pub(super) fn learn_phase(a: &Args, dir: &Path, rep: &mut Report) -> PathBuf {
    let n = a.learns.unwrap_or(a.memories);
    let mems = memories(n, a.seed);
    let w = window(n);
    let mut j = Map::new();
    let mut keep = None;
    let mut bm25_p50 = 0.0;
    for (d, model) in [(Durability::Normal, false), (Durability::Normal, true), (Durability::Full, true)] {
        let tag = format!("{}{}", dur_name(d), if model { "" } else { "-bm25" });
        let path = dir.join(format!("learn-{tag}.db"));
        let db = open_db(a, &path, d, 2, model);
        let (lat, embedded, dups, wall) = learn_into(&db, &mems, &tag);
        let pick = |zh: bool| -> Vec<u64> {
            lat.iter().zip(&mems).filter(|(_, m)| m.chinese == zh).map(|(&l, _)| l).collect()
        };
        let (all, first, last, en, zh) = (
            Summary::of(&lat),
            Summary::of(&lat[..w]),
            Summary::of(&lat[n - w..]),
            Summary::of(&pick(false)),
            Summary::of(&pick(true)),
        );
        section(&format!(
            "learn one at a time, durability {}, {} (embed_threads 2)",
            dur_name(d),
            if model { "with the model" } else { "embeddings off (baseline)" }
        ));
        println!("{}", header());
        println!("{}", first.row(&format!("first {w}")));
        println!("{}", last.row(&format!("last {w}")));
        println!("{}", all.row("all"));
        println!("{}", en.row("  english"));
        println!("{}", zh.row("  chinese"));
        println!(
            "  {:.0} learns/s wall ({wall:.1} s); with a vector {embedded}, duplicates {dups}; database {:.1} MiB",
            n as f64 / wall,
            file_bytes(&path) as f64 / 1048576.0
        );
        if model {
            rep.target(
                format!("learn with embedding p50 <= {LEARN_EMBED_P50_MS} ms [{}]", dur_name(d)),
                all.p50,
                all.p50 <= LEARN_EMBED_P50_MS,
            );
            println!("  of which not BM25-path work (p50 - baseline p50): {:.3} ms", all.p50 - bm25_p50);
        } else {
            bm25_p50 = all.p50;
        }
        j.insert(
            tag.clone(),
            json!({"all": all.json(), "first": first.json(), "last": last.json(), "english": en.json(), "chinese": zh.json(),
                   "per_s": (n as f64 / wall).round(), "embedded": embedded, "duplicates": dups}),
        );
        drop(db);
        if model && d == Durability::Normal {
            keep = Some(path);
        }
    }
    // Two pieces of the extra work of a learn with the model, on the file just made.
    let path = keep.expect("normal db");
    let c = raw_conn(&path, true);
    let e = embedder(a, 2, 32);
    let qv = query_vectors(e.as_ref(), &english_queries(64, a.seed));
    let (index, _) = load_index(&c, e.stamp());
    let (s, _) = time_knn(&Knn::Index(&index, e.stamp()), &qv, DEDUP_K, a.samples, a.warmup);
    println!(
        "  cosine-dedup KNN (k = {DEDUP_K}, vector index) at {} vectors: p50 {:.3} ms, p95 {:.3} ms",
        count(&c, "SELECT count(*) FROM memory_vec"),
        s.p50,
        s.p95
    );
    j.insert("dedup_knn".into(), s.json());
    rep.json.insert("learn".into(), Value::Object(j));
    path
}

/// learn_batch of `mems` in calls of `batch`; returns (per-call ns, wall s, stored with a vector).
fn batch_into(db: &Db, mems: &[Memory], batch: usize, label: &str) -> (Vec<u64>, f64, usize) {
    let mut lat = Vec::new();
    let mut embedded = 0;
    let started = Instant::now();
    let mut done = 0;
    for chunk in mems.chunks(batch) {
        let reqs: Vec<LearnRequest> = chunk.iter().map(Memory::request).collect();
        let (out, dt) = timed(|| db.learn_batch(&reqs).expect("learn_batch"));
        embedded += out.iter().filter(|o| o.has_embedding).count();
        lat.push(dt);
        done += chunk.len();
        if lat.len() % (mems.len() / batch / 10).max(1) == 0 {
            eprint!("\r  [{label}] {done}/{}", mems.len());
        }
    }
    eprintln!();
    (lat, started.elapsed().as_secs_f64(), embedded)
}

pub(super) fn batch_phase(a: &Args, dir: &Path, rep: &mut Report) -> PathBuf {
    let mems = memories(a.memories, a.seed);
    let path = dir.join("batch.db");
    let db = open_db(a, &path, Durability::Full, 2, true);
    let (lat, wall, embedded) = batch_into(&db, &mems, a.batch, "batch");
    drop(db);
    let rate = a.memories as f64 / wall;
    section(&format!(
        "learn_batch, {} memories in calls of {} (durability full, embed_threads 2, embed_batch 32)",
        a.memories, a.batch
    ));
    println!("{}", header());
    let s = Summary::of(&lat);
    println!("{}", s.row(&format!("per call of {}", a.batch)));
    println!("  throughput {rate:.0} memories/s ({wall:.1} s); with a vector {embedded}");
    rep.target(format!("batch learn >= {BATCH_PER_S} memories/s (calls of {})", a.batch), rate, rate >= BATCH_PER_S);
    let mut j = Map::new();
    j.insert("main".into(), json!({"per_call": s.json(), "per_s": rate.round(), "wall_s": r3(wall)}));

    // Knobs, on a smaller corpus (fresh files): threads × embed_batch, and the pure embedding rate.
    let n = a.memories.min(1000);
    let sub = &mems[..n];
    println!("  variants, {n} memories each, fresh files (memories/s):");
    let texts: Vec<&str> = sub.iter().map(|m| m.insight.as_str()).collect();
    for &threads in &a.threads {
        for eb in [8u32, 32] {
            let p = dir.join(format!("batch-t{threads}-b{eb}.db"));
            let mut o = opts(a, &p, Durability::Full, threads, true);
            o.embed_batch = eb;
            let db = Db::open(o).expect("open");
            let (_, wall, _) = batch_into(&db, sub, a.batch, &format!("t{threads} b{eb}"));
            drop(db);
            let _ = std::fs::remove_file(&p);
            let e = embedder(a, threads, eb);
            let (_, pure) = timed(|| {
                for c in texts.chunks(eb as usize) {
                    e.embed(c, TextKind::Passage).unwrap();
                }
            });
            let (r, pr) = (n as f64 / wall, n as f64 / (pure as f64 / 1e9));
            println!("    embed_threads {threads}, embed_batch {eb:>2}: learn_batch {r:>6.0}/s; embedding alone {pr:>6.0}/s ({:.0}% of the time)", 100.0 * r / pr);
            j.insert(
                format!("t{threads}_b{eb}"),
                json!({"learn_batch_per_s": r.round(), "embed_only_per_s": pr.round()}),
            );
        }
    }
    rep.json.insert("batch".into(), Value::Object(j));
    path
}

/// A real embedded corpus of `--memories` (when neither learn nor batch ran).
pub(super) fn build_real(a: &Args, dir: &Path) -> PathBuf {
    let path = dir.join("real.db");
    let db = open_db(a, &path, Durability::Normal, 2, true);
    batch_into(&db, &memories(a.memories, a.seed), a.batch, "real corpus");
    path
}
