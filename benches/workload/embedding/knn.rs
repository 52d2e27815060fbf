//! Phase knn: the handle's vector index and sqlite-vec's vec0 on the real corpus
//! and on random vectors, and a flat f32 scan in Rust for comparison; the KNN
//! helpers the other phases time with.

use std::path::Path;

use robotmem::internals::embed::ModelStamp;
use robotmem::internals::search::vector::VectorIndex;
use robotmem::internals::store::vectors;
use rusqlite::Connection;
use serde_json::{json, Map, Value};

use super::util::{
    each_vector, embedder, english_queries, fill_random, ms, query_vectors, r3, raw_conn, rss, sample, timed,
};
use super::{section, Args, Report, KNN_100K_P50_MS, KNN_10K_P50_MS, RECALL_K};
use crate::corpus::Rng;
use crate::file_bytes;
use crate::stats::{header, Summary};

/// A KNN to time: sqlite-vec's `vec0` table or the handle's in-process index.
pub(super) enum Knn<'a> {
    Vec0(&'a Connection),
    Index(&'a VectorIndex, &'a ModelStamp),
}

impl Knn<'_> {
    fn name(&self) -> &'static str {
        match self {
            Knn::Vec0(_) => "sqlite-vec",
            Knn::Index(..) => "index",
        }
    }

    fn run(&self, q: &[f32], k: usize) -> usize {
        match self {
            Knn::Vec0(c) => vectors::knn(c, "default", q, k).expect("knn").len(),
            Knn::Index(i, m) => i.nearest(m, "default", q, k).expect("index synced").len(),
        }
    }
}

/// Times a KNN for each query vector (after `warmup` unmeasured calls).
pub(super) fn time_knn(knn: &Knn, qv: &[Vec<f32>], k: usize, samples: usize, warmup: usize) -> (Summary, usize) {
    let mut found = 0;
    let lat = sample(warmup, samples, |i| {
        let (n, dt) = timed(|| knn.run(&qv[i % qv.len()], k));
        if i >= warmup {
            found += n;
        }
        dt
    });
    (Summary::of(&lat), found / samples.max(1))
}

/// Recall@k of the index against sqlite-vec's exact f32 KNN over (up to 32) query
/// vectors, and the largest gap (in exact cosine) between a neighbour the index
/// returned in place of an exact one and the exact k-th: the index's codes may
/// trade neighbours nearer to each other than their error (2e-3).
pub(super) fn index_recall(
    c: &Connection,
    index: &VectorIndex,
    model: &ModelStamp,
    qv: &[Vec<f32>],
    k: usize,
) -> (f64, f64) {
    let (mut found, mut wanted, mut gap) = (0usize, 0usize, 0f64);
    for q in qv.iter().take(32) {
        let exact = vectors::knn(c, "default", q, k).expect("knn");
        let ids: Vec<i64> = exact.iter().map(|x| x.0).collect();
        let got = index.nearest(model, "default", q, k).expect("index synced");
        found += got.iter().filter(|(_, id)| ids.contains(id)).count();
        wanted += exact.len();
        if let Some(&(_, kth)) = exact.last() {
            let kth = vectors::cosine_from_l2(kth);
            for (_, id) in got.iter().filter(|(_, id)| !ids.contains(id)) {
                let v = vectors::get(c, *id).expect("vector").expect("stored");
                let cos: f64 = v.iter().zip(q).map(|(a, b)| (a * b) as f64).sum();
                gap = gap.max(kth - cos);
            }
        }
    }
    (found as f64 / wanted.max(1) as f64, gap)
}

/// A vector index loaded from the file behind `c` (a full load: the first sync
/// of a handle), with the load time in ms.
pub(super) fn load_index(c: &Connection, model: &ModelStamp) -> (VectorIndex, f64) {
    let index = VectorIndex::default();
    let (_, dt) = timed(|| index.sync(c, model).expect("index sync"));
    (index, ms(dt))
}

pub(super) fn knn_phase(a: &Args, dir: &Path, real: &Path, rep: &mut Report) {
    let e = embedder(a, 2, 32);
    let qv = query_vectors(e.as_ref(), &english_queries(64, a.seed));
    let model = e.stamp().clone();
    drop(e);
    let dim = qv[0].len();
    let mut j = Map::new();
    section(&format!(
        "vector KNN: the handle's vector index (int8 scan + 16-bit re-scoring) and sqlite-vec's vec0, {} query vectors of real queries",
        qv.len()
    ));
    println!("{}", header());
    // Both KNNs at k = 10 and RECALL_K; the target is checked on the index.
    let mut measure =
        |c: &Connection, model: &ModelStamp, label: &str, key: &str, limit: f64, j: &mut Map<String, Value>| {
            let (index, load) = load_index(c, model);
            println!("  {label}: {} vectors, index loaded in {load:.1} ms, VmRSS {:.1} MiB", index.len(), rss());
            j.insert(format!("{key}_index_load_ms"), json!(r3(load)));
            let (recall, _) = index_recall(c, &index, model, &qv, RECALL_K);
            println!("  {label}: index recall@{RECALL_K} vs sqlite-vec exact KNN {:.4}", recall);
            j.insert(format!("{key}_index_recall"), json!(recall));
            for knn in [Knn::Index(&index, model), Knn::Vec0(c)] {
                for k in [10, RECALL_K] {
                    let (s, got) = time_knn(&knn, &qv, k, a.samples, a.warmup);
                    println!("{}   (got {got})", s.row(&format!("{} {label}, k={k}", knn.name())));
                    j.insert(format!("{key}_{}_k{k}", knn.name()), s.json());
                    if k == RECALL_K && matches!(knn, Knn::Index(..)) {
                        rep.target(
                            format!("KNN p50 <= {limit} ms, {label} ({} vectors, k={k})", index.len()),
                            s.p50,
                            s.p50 <= limit,
                        );
                    }
                }
            }
        };

    // Real corpus at --memories.
    let c = raw_conn(real, true);
    measure(&c, &model, &format!("real {}", a.memories), &format!("real_{}", a.memories), KNN_10K_P50_MS, &mut j);
    drop(c);

    // Random unit vectors, inserted through SQL into a vec0 table (with the
    // `memories` rev column the index syncs by), one collection; measured at
    // --memories and at --large.
    let path = dir.join("vec-random.db");
    let c = raw_conn(&path, false);
    c.execute_batch(&format!(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
         CREATE TABLE memories (rev INTEGER);
         CREATE VIRTUAL TABLE memory_vec USING vec0(collection text partition key, embedding float[{dim}]);"
    ))
    .expect("create");
    let random = ModelStamp { name: "random".into(), dim, hash: "0".into() };
    let mut r = Rng::new(a.seed ^ 0xFEC7);
    let mut have = 0usize;
    let mut sizes = vec![a.memories.min(a.large), a.large];
    sizes.dedup();
    for &size in &sizes {
        let (_, dt) = timed(|| fill_random(&c, &mut r, &mut have, size, dim));
        eprintln!("  random vectors: {size} in the table (last fill {:.1} s)", ms(dt) / 1e3);
        let limit = if size >= 100_000 { KNN_100K_P50_MS } else { KNN_10K_P50_MS };
        measure(&c, &random, &format!("random {size}"), &format!("random_{size}"), limit, &mut j);
    }
    c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").ok();
    println!("  random-vector file: {:.1} MiB for {have} vectors", file_bytes(&path) as f64 / 1048576.0);

    // For comparison: a flat f32 scan in Rust (dot products + partial sort) over the same vectors.
    let size = have;
    let mut all: Vec<f32> = Vec::new();
    each_vector(&raw_conn(&path, true), "SELECT embedding FROM memory_vec ORDER BY rowid", |v| all.extend(v));
    let mut scores = vec![(0f32, 0u32); size];
    let lat = sample(a.warmup, a.samples, |i| {
        let q = &qv[i % qv.len()];
        timed(|| {
            for (n, v) in all.chunks_exact(dim).enumerate() {
                scores[n] = (-dot(v, q), n as u32);
            }
            scores.select_nth_unstable_by(RECALL_K.min(size - 1), |x, y| x.0.total_cmp(&y.0));
            let mut top = scores[..RECALL_K.min(size)].to_vec();
            top.sort_by(|x, y| x.0.total_cmp(&y.0));
            std::hint::black_box(top);
        })
        .1
    });
    let s = Summary::of(&lat);
    println!("{}", s.row(&format!("flat f32 scan in Rust, random {size}, k={RECALL_K}")));
    j.insert(format!("rust_flat_{size}"), s.json());
    drop(all);
    rep.json.insert("knn".into(), Value::Object(j));
}

/// Dot product with 16 independent accumulators (vectorisable), AVX2/FMA when the CPU has it.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the function is compiled for.
        return unsafe { dot_avx2(a, b) };
    }
    dot_portable(a, b)
}

#[inline(always)]
fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 16];
    let (ca, cb) = (a.chunks_exact(16), b.chunks_exact(16));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..16 {
            acc[i] = x[i].mul_add(y[i], acc[i]);
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    dot_portable(a, b)
}
