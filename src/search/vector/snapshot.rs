//! The vector index's stored snapshot (the shared codec and its binding are
//! [`crate::search::snapshot`]'s), so that opening a file does not rebuild the
//! index from every vector in sqlite-vec's chunk tables (about 0.5 s at 100k).
//!
//! Rows: `vector`, the header (magic `RMVH`, the collections in part order, a
//! random number of this save, the dimension, each collection's vector count,
//! the number of part rows; sealed with its checksum), and `vector part N`
//! (magic `RMVP`, the save's number, the collection's number, the vector count,
//! then little-endian arrays: ids, scales, sign bits, int8 codes)
//! of at most [`PART_VECTORS`] vectors each, so that loading holds one row's
//! bytes at a time beside the index, never a copy of all of it. The part rows
//! are not sealed: each row's binding tag covers a 128-bit digest of all its
//! bytes (`Cover::Digest`), checked before it is decoded (SHA-256 or a 64-bit
//! FNV over ~58 MB at 100k 512-d vectors would add 50–60 ms to every open).
//! Every row is bound to its name
//! (a swapped part is not its name's), the format names the model stamp (a
//! snapshot of another model's vectors is not looked at), all rows must be of
//! the header's `rev` and carry the header's save number, and the decoded
//! counts must be the header's: any failure rebuilds the whole index from
//! sqlite-vec, and the next close replaces every row.

use rusqlite::Connection;

use super::{Inner, Part};
use crate::error::Result;
use crate::search::snapshot::{
    begin, load_covered, load_named, open, open_unsealed, put, seal, store_named, Cover, Damaged,
};

/// The header row in `index_snapshots`.
const HEADER: &str = "vector";
const MAGIC_HEADER: &[u8; 4] = b"RMVH";
const MAGIC_PART: &[u8; 4] = b"RMVP";
/// Vectors in one part row (about 0.6 MB at 512 dimensions).
pub(crate) const PART_VECTORS: usize = 1024;
/// Bump with any change to the codes ([`super::quant`]) or to this layout.
const VECTOR_RULES: u32 = 2;

/// What a snapshot of `stamp`'s vectors must say it is to be loaded by this build.
fn format(stamp: &str) -> String {
    format!("robotmem {} vector index, rules {VECTOR_RULES}, model {stamp}", crate::VERSION)
}

fn part_name(i: usize) -> String {
    format!("{HEADER} part {i}")
}

/// What the header says.
struct Header {
    names: Vec<String>,
    save: u64,
    dim: usize,
    counts: Vec<usize>,
    rows: usize,
}

impl Header {
    fn decode(bytes: &[u8]) -> std::result::Result<Header, Damaged> {
        let mut r = open(bytes, MAGIC_HEADER)?;
        let mut names = Vec::new();
        r.names(|n| {
            names.push(n.to_string());
            names.len() as u32
        })?;
        let save = u64::from_le_bytes(r.bytes(8)?.try_into().map_err(|_| Damaged)?);
        let dim = r.below(1 << 16)? as usize;
        let counts = (0..names.len())
            .map(|_| r.below(u32::MAX as u64).map(|c| c as usize))
            .collect::<std::result::Result<_, _>>()?;
        let rows = r.below(u32::MAX as u64)? as usize;
        if !r.done() || dim == 0 {
            return Err(Damaged);
        }
        Ok(Header { names, save, dim, counts, rows })
    }
}

/// The stored snapshot of the vectors of model `stamp` (dimension `dim`), as an
/// index synced to its `rev`, if it is not ahead of `head` and every row is
/// bound, of one save and decodes. `None`: build from sqlite-vec.
pub(super) fn load(conn: &Connection, stamp: &str, dim: usize, head: i64) -> Result<Option<Inner>> {
    let format = format(stamp);
    let Some((rev, data)) = load_named(conn, HEADER, &format, head)? else { return Ok(None) };
    let Ok(h) = Header::decode(&data) else { return Ok(None) };
    if h.dim != dim {
        return Ok(None);
    }
    let mut inner = Inner { stamp: Some(stamp.to_string()), dim, rev, snapshot: true, ..Inner::default() };
    for (p, (name, &n)) in h.names.iter().zip(&h.counts).enumerate() {
        if inner.names.insert(name.clone(), p as u32).is_some() {
            return Ok(None);
        }
        // Sized up front, but from a count the rows have not confirmed yet: one
        // no allocation can hold is a damaged snapshot, not an abort.
        let Some(part) = sized(n, dim) else { return Ok(None) };
        inner.parts.push(part);
    }
    for i in 0..h.rows {
        let Some((r, data)) = load_covered(conn, &part_name(i), &format, head, Cover::Digest)? else { return Ok(None) };
        if r != rev || decode_part(&data, &h, &mut inner).is_err() {
            return Ok(None);
        }
    }
    let complete = inner.parts.iter().zip(&h.counts).all(|(p, &n)| p.ids.len() == n);
    Ok(complete.then_some(inner))
}

/// An empty part with room for `n` vectors of `dim` components; `None` when
/// that much cannot be allocated.
fn sized(n: usize, dim: usize) -> Option<Part> {
    let mut part = Part::default();
    let w = dim.div_ceil(64);
    part.ids.try_reserve_exact(n).ok()?;
    part.bits.try_reserve_exact(n.checked_mul(w)?).ok()?;
    part.hi.try_reserve_exact(n.checked_mul(dim)?).ok()?;
    part.scale.try_reserve_exact(n).ok()?;
    super::prefer_huge_pages(&part.bits);
    super::prefer_huge_pages(&part.hi);
    Some(part)
}

/// Appends one part row's vectors to `inner`.
fn decode_part(bytes: &[u8], h: &Header, inner: &mut Inner) -> std::result::Result<(), Damaged> {
    let mut r = open_unsealed(bytes, MAGIC_PART)?;
    if u64::from_le_bytes(r.bytes(8)?.try_into().map_err(|_| Damaged)?) != h.save {
        return Err(Damaged);
    }
    let p = r.below(h.names.len() as u64)? as u32;
    let n = r.below(PART_VECTORS as u64 + 1)? as usize;
    let (d, w) = (inner.dim, inner.dim.div_ceil(64));
    let (ids, scales, bits, hi) = (r.bytes(n * 8)?, r.bytes(n * 4)?, r.bytes(n * w * 8)?, r.bytes(n * d)?);
    if !r.done() {
        return Err(Damaged);
    }
    if inner.parts[p as usize].ids.len() + n > h.counts[p as usize] {
        return Err(Damaged);
    }
    for c in ids.chunks_exact(8) {
        let id = i64::from_le_bytes(c.try_into().map_err(|_| Damaged)?);
        if inner.slot(id).is_some() {
            return Err(Damaged); // an id twice, in one part or two
        }
        let part = &mut inner.parts[p as usize];
        part.slots.insert(id, part.ids.len() as u32);
        part.ids.push(id);
    }
    let part = &mut inner.parts[p as usize];
    for c in scales.chunks_exact(4) {
        let s = f32::from_le_bytes(c.try_into().map_err(|_| Damaged)?);
        if !(s.is_finite() && s >= 0.0) {
            return Err(Damaged);
        }
        part.scale.push(s);
    }
    part.bits.extend(bits.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))));
    part.hi.extend(hi.iter().map(|&b| b as i8));
    Ok(())
}

/// Stores the index (`conn` in a write transaction) unless the stored snapshot
/// is of this model and format, was loaded into (or saved from) this index, and
/// is fewer than `min_changes` revs behind. Returns whether it wrote.
pub(super) fn save(conn: &Connection, inner: &Inner, min_changes: i64) -> Result<bool> {
    let Some(stamp) = inner.stamp.as_deref() else { return Ok(false) };
    let format = format(stamp);
    if inner.snapshot {
        if let Some((r, _)) = load_named(conn, HEADER, &format, i64::MAX)? {
            if inner.rev - r < min_changes.max(1) {
                return Ok(false);
            }
        }
    }
    conn.prepare_cached("DELETE FROM index_snapshots WHERE name GLOB 'vector part *'")?.execute([])?;
    let save = uuid::Uuid::new_v4().as_u64_pair().0;
    let mut rows = 0;
    for (p, part) in inner.parts.iter().enumerate() {
        for from in (0..part.ids.len()).step_by(PART_VECTORS) {
            let to = (from + PART_VECTORS).min(part.ids.len());
            let data = encode_part(inner.dim, save, p, part, from, to);
            store_named(conn, &part_name(rows), &format, inner.rev, data, Cover::Digest)?;
            rows += 1;
        }
    }
    let mut names = vec![""; inner.parts.len()];
    for (name, &p) in &inner.names {
        names[p as usize] = name;
    }
    let mut out = begin(MAGIC_HEADER, &names);
    out.extend_from_slice(&save.to_le_bytes());
    put(&mut out, inner.dim as u64);
    inner.parts.iter().for_each(|p| put(&mut out, p.ids.len() as u64));
    put(&mut out, rows as u64);
    store_named(conn, HEADER, &format, inner.rev, seal(out), Cover::Bytes)?;
    Ok(true)
}

/// Slots `from..to` of `part` (collection number `p`) as a part row.
fn encode_part(dim: usize, save: u64, p: usize, part: &Part, from: usize, to: usize) -> Vec<u8> {
    let w = dim.div_ceil(64);
    let mut out = Vec::with_capacity(32 + (to - from) * (12 + 8 * w + dim));
    out.extend_from_slice(MAGIC_PART);
    out.extend_from_slice(&save.to_le_bytes());
    put(&mut out, p as u64);
    put(&mut out, (to - from) as u64);
    part.ids[from..to].iter().for_each(|id| out.extend_from_slice(&id.to_le_bytes()));
    part.scale[from..to].iter().for_each(|s| out.extend_from_slice(&s.to_le_bytes()));
    part.bits[from * w..to * w].iter().for_each(|b| out.extend_from_slice(&b.to_le_bytes()));
    out.extend(part.hi[from * dim..to * dim].iter().map(|&c| c as u8));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_count_no_allocation_holds_is_refused_not_an_abort() {
        // The largest count and dimension a header decodes (u32::MAX vectors of
        // 65,535 components: 280 TB) before any row confirms them.
        assert!(sized(u32::MAX as usize, (1 << 16) - 1).is_none());
        assert!(sized(usize::MAX, 512).is_none(), "overflowing sizes");
        let part = sized(1000, 512).expect("small");
        assert!(part.hi.capacity() >= 512_000 && part.bits.capacity() >= 8_000 && part.ids.capacity() >= 1000);
    }
}
