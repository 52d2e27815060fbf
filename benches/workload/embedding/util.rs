//! Shared helpers of the embedding phases: timing, process memory and CPU
//! readings, opening databases and the model, corpus texts, vector blobs.

use std::path::Path;
use std::time::Instant;

use robotmem::internals::embed::{self, EmbedSettings, Embedder, Embedding, TextKind};
use robotmem::internals::store::vectors;
use robotmem::{Db, Durability, Location, OpenOptions};
use rusqlite::{params, Connection, OpenFlags};

use super::Args;
use crate::corpus::{self, Corpus, Memory, Rng};
use crate::stats::{mib, proc_status_kb};

pub(super) fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

pub(super) fn r3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}

pub(super) fn timed<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let t = Instant::now();
    let out = f();
    (out, t.elapsed().as_nanos() as u64)
}

/// Calls `f(i)` for `i` in `0..warmup + samples`; the values (ns) of the calls
/// from `warmup` on.
pub(super) fn sample(warmup: usize, samples: usize, mut f: impl FnMut(usize) -> u64) -> Vec<u64> {
    let mut lat = Vec::with_capacity(samples);
    for i in 0..warmup + samples {
        let dt = f(i);
        if i >= warmup {
            lat.push(dt);
        }
    }
    lat
}

pub(super) fn hwm() -> f64 {
    mib(proc_status_kb("VmHWM"))
}

/// The open options' default `embed_threads` (what a robot gets).
pub(super) fn default_threads() -> u32 {
    robotmem::OpenOptions::default().embed_threads
}

pub(super) fn rss() -> f64 {
    mib(proc_status_kb("VmRSS"))
}

/// (anonymous, file-backed) resident MiB now: file pages (the mapped model
/// weights, the libraries) are shared with other processes and reclaimable.
pub(super) fn rss_parts() -> (f64, f64) {
    (mib(proc_status_kb("RssAnon")), mib(proc_status_kb("RssFile")))
}

/// (busy jiffies of the whole machine, jiffies of this process and its waited-for
/// children), from /proc/stat and /proc/self/stat.
pub(super) fn cpu_jiffies() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let f: Vec<u64> =
        stat.lines().next().unwrap_or("").split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    let busy = if f.len() >= 8 { f[0] + f[1] + f[2] + f[5] + f[6] + f[7] } else { 0 };
    let me = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = me.rsplit_once(')').map(|x| x.1).unwrap_or("");
    let g: Vec<u64> = after.split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
    // Fields 14-17 of the file (utime, stime, cutime, cstime) are 11-14 after the comm field.
    let own = if g.len() > 14 { g[11] + g[12] + g[13] + g[14] } else { 0 };
    (busy, own)
}

/// CPU cores used by other processes since `from` (busy, own jiffies), over `secs`.
pub(super) fn other_cores(from: (u64, u64), secs: f64) -> f64 {
    let now = cpu_jiffies();
    let hz = 100.0; // USER_HZ on Linux
    let other = now.0.saturating_sub(from.0) as f64 - now.1.saturating_sub(from.1) as f64;
    (other / hz / secs.max(1e-9)).max(0.0)
}

/// Waits until other processes use less than 0.25 cores (sampled over 2 s), at most `max_s`.
pub(super) fn wait_idle(max_s: u64) {
    let started = Instant::now();
    loop {
        let c = cpu_jiffies();
        std::thread::sleep(std::time::Duration::from_secs(2));
        let o = other_cores(c, 2.0);
        let waited = started.elapsed().as_secs();
        if o < 0.25 || waited >= max_s {
            eprintln!("[embedding] waited {waited} s for an idle machine; other processes now use {o:.2} cores");
            return;
        }
    }
}

pub(super) fn opts(a: &Args, path: &Path, d: Durability, threads: u32, model: bool) -> OpenOptions {
    OpenOptions {
        location: Location::Path(path.to_path_buf()),
        durability: d,
        embeddings: model,
        model_dir: Some(a.model_dir.clone()),
        ort_library: Some(a.ort.clone()),
        embed_threads: threads,
        ..OpenOptions::default()
    }
}

pub(super) fn open_db(a: &Args, path: &Path, d: Durability, threads: u32, model: bool) -> Db {
    open_with(path, opts(a, path, d, threads, model))
}

/// Opens `path` with `o`; with a model (`o.embeddings`), panics unless it loaded.
pub(super) fn open_with(path: &Path, o: OpenOptions) -> Db {
    let model = o.embeddings;
    let db = Db::open(o).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    if model {
        let s = db.embedding_status().expect("embedding_status");
        assert!(
            s.model.is_some(),
            "no embedding model on {}: {} (run scripts/fetch-model.sh or pass --model-dir / --ort-library)",
            path.display(),
            s.reason
        );
    }
    db
}

pub(super) fn embedder(a: &Args, threads: u32, batch: u32) -> Box<dyn Embedder> {
    embed::load(&EmbedSettings {
        model_dir: Some(a.model_dir.clone()),
        runtime_path: Some(a.ort.clone()),
        threads: threads as usize,
        batch_size: batch as usize,
    })
    .unwrap_or_else(|e| panic!("cannot load the embedding model from {}: {e}", a.model_dir.display()))
}

/// Query embeddings of `qs` (English queries are always representable).
pub(super) fn query_vectors(e: &dyn Embedder, qs: &[&str]) -> Vec<Vec<f32>> {
    qs.iter()
        .map(|q| match e.embed(&[q], TextKind::Query).expect("embed").pop() {
            Some(Embedding::Vector(v)) => v,
            _ => panic!("query {q:?} is not representable"),
        })
        .collect()
}

/// The first `n` texts of one language (`zh`) among the first `pool` queries of the recall mix.
pub(super) fn query_texts(pool: usize, zh: bool, n: usize, seed: u64) -> Vec<&'static str> {
    corpus::queries(pool, seed).into_iter().filter(|q| q.chinese == zh).map(|q| q.text).take(n).collect()
}

/// English queries of the recall mix (short sentences).
pub(super) fn english_queries(n: usize, seed: u64) -> Vec<&'static str> {
    query_texts(n * 2 + 64, false, n, seed)
}

pub(super) fn memories(n: usize, seed: u64) -> Vec<Memory> {
    let mut c = Corpus::new(seed);
    (0..n).map(|_| c.next_memory()).collect()
}

/// The English insights among the first `n` memories of the corpus.
pub(super) fn english_texts(n: usize, seed: u64) -> Vec<String> {
    memories(n, seed).into_iter().filter(|m| !m.chinese).map(|m| m.insight).collect()
}

pub(super) fn blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub(super) fn unblob(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

pub(super) fn normalise(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 1e-12 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// Standard normal sample (Box–Muller).
pub(super) fn gauss(r: &mut Rng) -> f32 {
    let u1 = r.f64().max(1e-300);
    let u2 = r.f64();
    ((-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()) as f32
}

pub(super) fn random_unit(r: &mut Rng, dim: usize) -> Vec<f32> {
    let mut v: Vec<f32> = (0..dim).map(|_| gauss(r)).collect();
    normalise(&mut v);
    v
}

/// A read connection like the engine's (default page cache) with sqlite-vec registered.
pub(super) fn raw_conn(path: &Path, read_only: bool) -> Connection {
    let flags = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
    } else {
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX
    };
    let c = Connection::open_with_flags(path, flags).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    vectors::register(&c).expect("sqlite-vec");
    c
}

pub(super) fn count(c: &Connection, sql: &str) -> i64 {
    c.query_row(sql, [], |r| r.get(0)).unwrap_or(-1)
}

/// Calls `f` with each stored vector that `sql` (one blob column) selects.
pub(super) fn each_vector(c: &Connection, sql: &str, mut f: impl FnMut(Vec<f32>)) {
    let mut st = c.prepare(sql).unwrap();
    let rows = st.query_map([], |r| r.get::<_, Vec<u8>>(0)).unwrap();
    rows.for_each(|b| f(unblob(&b.unwrap())));
}

/// Inserts random unit vectors into `memory_vec` (collection `default`), rowids
/// `*have + 1 ..= size`, in one transaction; `*have` ends at `size`.
pub(super) fn fill_random(c: &Connection, r: &mut Rng, have: &mut usize, size: usize, dim: usize) {
    let tx = c.unchecked_transaction().expect("tx");
    {
        let mut st = tx
            .prepare("INSERT INTO memory_vec (rowid, collection, embedding) VALUES (?1, 'default', ?2)")
            .expect("insert");
        while *have < size {
            *have += 1;
            st.execute(params![*have as i64, blob(&random_unit(r, dim))]).expect("insert");
        }
    }
    tx.commit().expect("commit");
}
