//! Memory vectors: a sqlite-vec `vec0` table `memory_vec` (rowid = memory id,
//! partitioned by collection so a KNN scans only the collection asked for), the
//! model stamp in `robotmem_meta`, and each memory's `embedded` flag (0: no
//! vector yet, indexed so re-embed finds them without a scan; 1: vector stored;
//! 2: the model cannot represent the text).
//!
//! Vectors are L2-normalised and compared by L2 distance, which ranks exactly as
//! cosine (`cos = 1 - d²/2`) and lets sqlite-vec use its AVX / NEON kernels. The
//! table is created when a model is first stamped (its dimension comes from the
//! model) and rebuilt when the model changes.

use std::os::raw::{c_char, c_int};

use rusqlite::{params, Connection, OptionalExtension};

use crate::embed::ModelStamp;
use crate::error::{Error, Result};
use crate::store::memory::NEXT_REV;

/// `robotmem_meta` key of the model stamp.
const STAMP_KEY: &str = "embed_model";
/// sqlite-vec's largest `k`.
pub const MAX_K: usize = 4096;

/// sqlite-vec's entry point, one per build of it ([`kernel`], [`portable`]).
pub type InitFn = unsafe extern "C" fn(
    *mut rusqlite::ffi::sqlite3,
    *mut *mut c_char,
    *const rusqlite::ffi::sqlite3_api_routines,
) -> c_int;

extern "C" {
    fn rm_vec_sqlite3_vec_init(
        db: *mut rusqlite::ffi::sqlite3,
        err: *mut *mut c_char,
        api: *const rusqlite::ffi::sqlite3_api_routines,
    ) -> c_int;
    #[cfg(robotmem_vec_avx)]
    fn rm_vecavx_sqlite3_vec_init(
        db: *mut rusqlite::ffi::sqlite3,
        err: *mut *mut c_char,
        api: *const rusqlite::ffi::sqlite3_api_routines,
    ) -> c_int;
    #[cfg(robotmem_vec_neon)]
    fn rm_vecneon_sqlite3_vec_init(
        db: *mut rusqlite::ffi::sqlite3,
        err: *mut *mut c_char,
        api: *const rusqlite::ffi::sqlite3_api_routines,
    ) -> c_int;
}

/// The portable build of sqlite-vec (what [`kernel`] falls back to).
pub fn portable() -> InitFn {
    rm_vec_sqlite3_vec_init
}

/// The sqlite-vec build for this CPU and its name ("avx", "neon" or "portable").
pub fn kernel() -> (InitFn, &'static str) {
    #[cfg(robotmem_vec_avx)]
    if std::arch::is_x86_feature_detected!("avx") {
        return (rm_vecavx_sqlite3_vec_init, "avx");
    }
    #[cfg(robotmem_vec_neon)]
    return (rm_vecneon_sqlite3_vec_init, "neon");
    #[allow(unreachable_code)]
    (rm_vec_sqlite3_vec_init, "portable")
}

/// Registers sqlite-vec on a connection (every connection the store opens).
pub fn register(conn: &Connection) -> Result<()> {
    let (init, _) = kernel();
    let mut err: *mut c_char = std::ptr::null_mut();
    // SAFETY: a valid open connection handle; with SQLITE_CORE the API pointer is unused.
    let rc = unsafe { init(conn.handle(), &mut err, std::ptr::null()) };
    if rc != 0 {
        let msg = if err.is_null() {
            format!("sqlite-vec init failed ({rc})")
        } else {
            // SAFETY: sqlite-vec sets err with sqlite3_mprintf.
            let m = unsafe { std::ffi::CStr::from_ptr(err) }.to_string_lossy().into_owned();
            unsafe { rusqlite::ffi::sqlite3_free(err.cast()) };
            m
        };
        return Err(Error::internal(msg));
    }
    Ok(())
}

/// The stamp of the model that made the stored vectors, if any.
pub fn stamp(conn: &Connection) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT value FROM robotmem_meta WHERE key = ?1")?
        .query_row([STAMP_KEY], |r| r.get(0))
        .optional()?)
}

/// Whether the stored vectors were made by `model`.
pub fn matches(conn: &Connection, model: &ModelStamp) -> Result<bool> {
    Ok(stamp(conn)?.as_deref() == Some(model.encode().as_str()))
}

/// Whether the vector table exists (a model was stamped once).
pub fn table_exists(conn: &Connection) -> Result<bool> {
    Ok(conn.prepare_cached("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'memory_vec'")?.exists([])?)
}

/// (Re)creates the vector table for `model`, marks every memory as not embedded
/// (with a new `rev`, so vector indexes drop them) and stamps the model. Runs in
/// a write transaction.
pub fn reset(conn: &Connection, model: &ModelStamp) -> Result<()> {
    conn.execute_batch(&format!(
        "DROP TABLE IF EXISTS memory_vec;
         CREATE VIRTUAL TABLE memory_vec USING vec0(collection text partition key, embedding float[{}]);
         UPDATE memories SET embedded = 0, rev = {NEXT_REV} WHERE embedded != 0;",
        model.dim
    ))?;
    conn.prepare_cached("INSERT OR REPLACE INTO robotmem_meta (key, value) VALUES (?1, ?2)")?
        .execute(params![STAMP_KEY, model.encode()])?;
    Ok(())
}

/// Stamps `model` if the database has no model yet. Returns whether the stored
/// vectors are now `model`'s.
pub fn adopt(conn: &Connection, model: &ModelStamp) -> Result<bool> {
    match stamp(conn)? {
        None => {
            reset(conn, model)?;
            Ok(true)
        }
        Some(s) => Ok(s == model.encode()),
    }
}

fn blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Reads a little-endian f32 blob into `out` (as many values as both hold).
fn unblob_into(b: &[u8], out: &mut [f32]) {
    for (x, c) in out.iter_mut().zip(b.chunks_exact(4)) {
        *x = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    }
}

fn unblob(b: &[u8]) -> Vec<f32> {
    let mut v = vec![0f32; b.len() / 4];
    unblob_into(b, &mut v);
    v
}

/// Stores (or replaces) the vector of memory `id`, marks it embedded and stamps
/// the row with the next `rev` (so every handle's vector index picks it up).
/// Returns that rev.
pub fn put(conn: &Connection, id: i64, collection: &str, v: &[f32]) -> Result<i64> {
    conn.prepare_cached("DELETE FROM memory_vec WHERE rowid = ?1")?.execute([id])?;
    insert(conn, id, collection, v)?;
    Ok(conn
        .prepare_cached(&format!("UPDATE memories SET embedded = 1, rev = {NEXT_REV} WHERE id = ?1 RETURNING rev"))?
        .query_row([id], |r| r.get(0))?)
}

/// Stores the vector of memory `id`, which has none, and nothing else (a copy of
/// stored rows: see `db::history`).
pub fn insert(conn: &Connection, id: i64, collection: &str, v: &[f32]) -> Result<()> {
    conn.prepare_cached("INSERT INTO memory_vec (rowid, collection, embedding) VALUES (?1, ?2, ?3)")?
        .execute(params![id, collection, blob(v)])?;
    Ok(())
}

/// Marks memory `id` as not representable by the model (`embedded = 2`): found
/// by BM25 only, not retried by re-embed until the model changes.
pub fn mark_unrepresentable(conn: &Connection, id: i64) -> Result<()> {
    conn.prepare_cached("UPDATE memories SET embedded = 2 WHERE id = ?1")?.execute([id])?;
    Ok(())
}

/// Drops the vector of memory `id` (if the table exists) and marks it not embedded.
pub fn remove(conn: &Connection, id: i64) -> Result<()> {
    if table_exists(conn)? {
        conn.prepare_cached("DELETE FROM memory_vec WHERE rowid = ?1")?.execute([id])?;
    }
    conn.prepare_cached("UPDATE memories SET embedded = 0 WHERE id = ?1 AND embedded != 0")?.execute([id])?;
    Ok(())
}

/// The stored vector of memory `id`.
pub fn get(conn: &Connection, id: i64) -> Result<Option<Vec<f32>>> {
    if !table_exists(conn)? {
        return Ok(None);
    }
    let b: Option<Vec<u8>> = conn
        .prepare_cached("SELECT embedding FROM memory_vec WHERE rowid = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?;
    Ok(b.as_deref().map(unblob))
}

/// The `k` nearest memories of `collection` to `query`: (id, L2 distance), nearest first.
pub fn knn(conn: &Connection, collection: &str, query: &[f32], k: usize) -> Result<Vec<(i64, f64)>> {
    let mut st = conn.prepare_cached(
        "SELECT rowid, distance FROM memory_vec
         WHERE embedding MATCH ?1 AND k = ?2 AND collection = ?3 ORDER BY distance",
    )?;
    let rows =
        st.query_map(params![blob(query), k.clamp(1, MAX_K) as i64, collection], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Cosine similarity of two unit vectors from their L2 distance.
pub fn cosine_from_l2(d: f64) -> f64 {
    1.0 - d * d / 2.0
}

/// Active memories without a vector: (id, text), oldest first, at most `limit`.
pub fn pending(conn: &Connection, limit: usize) -> Result<Vec<(i64, String)>> {
    let mut st = conn.prepare_cached(
        "SELECT id, content FROM memories INDEXED BY idx_mem_unembedded
         WHERE embedded = 0 AND status = 'active' ORDER BY id LIMIT ?1",
    )?;
    let rows = st.query_map([limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Number of active memories without a vector.
pub fn pending_count(conn: &Connection) -> Result<i64> {
    Ok(conn
        .prepare_cached(
            "SELECT count(*) FROM memories INDEXED BY idx_mem_unembedded WHERE embedded = 0 AND status = 'active'",
        )?
        .query_row([], |r| r.get(0))?)
}

/// Calls `f(id, collection, vector)` for every stored vector. Reads sqlite-vec's
/// chunk tables directly (whole chunks: ~3.6 µs per vector, where the vec0 table
/// costs ~16 µs per row) and falls back to the vec0 table if their layout is not
/// the one of the pinned sqlite-vec 0.1.9.
pub fn for_each_stored(conn: &Connection, dim: usize, mut f: impl FnMut(i64, &str, &[f32])) -> Result<()> {
    if !table_exists(conn)? {
        return Ok(());
    }
    let bytes = dim * 4;
    let chunks = conn.prepare(
        "SELECT c.partition00, c.validity, c.rowids, v.vectors
         FROM memory_vec_chunks c JOIN memory_vec_vector_chunks00 v ON v.rowid = c.chunk_id",
    );
    if let Ok(mut st) = chunks {
        let mut rows = st.query([])?;
        let mut v = vec![0f32; dim];
        while let Some(r) = rows.next()? {
            let (coll, valid, ids, vecs) =
                (r.get_ref(0)?, r.get_ref(1)?.as_blob()?, r.get_ref(2)?.as_blob()?, r.get_ref(3)?.as_blob()?);
            let coll = coll.as_str().unwrap_or_default();
            let n = ids.len() / 8;
            if valid.len() * 8 != n || vecs.len() != n * bytes {
                return Err(Error::internal("sqlite-vec chunk layout is not the expected one"));
            }
            for i in (0..n).filter(|i| valid[i / 8] >> (i % 8) & 1 == 1) {
                let id = i64::from_le_bytes(ids[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
                unblob_into(&vecs[i * bytes..(i + 1) * bytes], &mut v);
                f(id, coll, &v);
            }
        }
        return Ok(());
    }
    let mut st = conn.prepare("SELECT rowid, collection, embedding FROM memory_vec")?;
    let mut rows = st.query([])?;
    while let Some(r) = rows.next()? {
        f(r.get(0)?, r.get_ref(1)?.as_str()?, &unblob(r.get_ref(2)?.as_blob()?));
    }
    Ok(())
}

/// A memory whose searchable state changed after some `rev`.
pub struct Changed {
    pub id: i64,
    pub rev: i64,
    pub collection: String,
    /// Active with a vector stored.
    pub has_vector: bool,
}

/// Memories changed or removed (see `store::retention`) after `rev`, in rev order.
pub fn changed_since(conn: &Connection, rev: i64, up_to: i64) -> Result<Vec<Changed>> {
    let mut st = conn.prepare_cached(
        "SELECT id, rev, collection, status = 'active' AND embedded = 1 FROM memories
         WHERE rev > ?1 AND rev <= ?2
         UNION ALL SELECT id, rev, '', 0 FROM memory_removals WHERE rev > ?1 AND rev <= ?2
         ORDER BY rev",
    )?;
    let rows = st.query_map([rev, up_to], |r| {
        Ok(Changed { id: r.get(0)?, rev: r.get(1)?, collection: r.get(2)?, has_vector: r.get(3)? })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
