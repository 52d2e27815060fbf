//! The text index saved in the database file, so that opening a file and the
//! first recall do not rebuild it from every row (at 100k memories the build
//! reads, splits and stems 100k texts: 0.7 s).
//!
//! A snapshot is the index's live documents at one `rev` (the change stamp every
//! searchable write sets, see [`super::index`]): it is loaded on the first sync of
//! a handle, then the rows with a later `rev` are applied as usual, so a snapshot
//! that is behind (a process killed before it saved one) costs only those rows.
//! It is written when the handle closes, if enough changed since the one stored.
//!
//! The format is private to one robotmem version and text-processing revision
//! ([`format`]): any other version rebuilds the index and replaces the snapshot.
//! A snapshot that does not decode (damaged, cut) is ignored the same way;
//! decoding checks every count, id and offset and never panics, and a 64-bit
//! checksum over the payload catches damage that would still decode. A stored
//! snapshot ends with a tag binding it to its row (kind and path), format, the
//! schema, the database's random identity, its `rev` and the save that wrote it
//! (a random token in `robotmem_meta`, written in the same transaction): a row
//! swapped with another, copied from another file or database, or left from an
//! earlier save is rebuilt from the memories and replaced at the next close.
//!
//! Layout (integers LEB128; ids zig-zag): magic `RMTI`, terms (length, UTF-8,
//! ignorable flag), collections (length, UTF-8), live documents in index order
//! (id, collection, length, dedup length + 1, term count, then per term the gap
//! to the previous term id and the frequency), then the FNV-1a hash of all that.

use std::collections::HashMap;

use rusqlite::{params, Connection, OptionalExtension};

use super::filter::DotPath;
use super::index::{Doc, Inner};
use crate::error::Result;

/// The row of the text index in `index_snapshots`.
const NAME: &str = "text";

const MAGIC: &[u8; 4] = b"RMTI";

/// Revision of the word rules the index depends on (splitting, stemming, which
/// words are dedup words). Bump it with any change to `crate::text` or
/// [`super::index::term`] that changes the words of a text.
const TEXT_RULES: u32 = 1;

/// What a snapshot must say it is to be loaded by this build.
pub(super) fn format() -> String {
    format!("robotmem {} text index, rules {TEXT_RULES}", crate::VERSION)
}

/// The stored text index snapshot of this format, as an index synced to its
/// `rev`, if it is not ahead of `head` (the newest `rev` of the caller's read
/// transaction) and decodes. `None`: build from the rows.
pub(super) fn load(conn: &Connection, head: i64) -> Result<Option<Inner>> {
    let Some((rev, data)) = load_named(conn, NAME, &format(), head)? else { return Ok(None) };
    Ok(Inner::decode(&data).ok().map(|mut inner| {
        inner.rev = Some(rev);
        inner
    }))
}

/// Writes the text index snapshot `encode` makes of an index synced to `rev`,
/// unless the stored one is of this format and fewer than `min_changes` revs behind.
pub(super) fn save(conn: &Connection, rev: i64, min_changes: i64, encode: impl FnOnce() -> Vec<u8>) -> Result<bool> {
    save_named(conn, NAME, &format(), rev, min_changes, encode)
}

/// The `(rev, bytes)` of snapshot `name` if it has `format`, is not ahead of
/// `head` and is bound to this row, database and save ([`bound`]).
pub(super) fn load_named(conn: &Connection, name: &str, format: &str, head: i64) -> Result<Option<(i64, Vec<u8>)>> {
    let row: Option<(i64, Vec<u8>)> = conn
        .prepare_cached("SELECT rev, data FROM index_snapshots WHERE name = ?1 AND format = ?2")?
        .query_row(params![name, format], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((rev, mut data)) = row.filter(|(rev, _)| *rev <= head) else { return Ok(None) };
    if !bound(conn, name, format, rev, &data)? {
        return Ok(None);
    }
    data.truncate(data.len() - TAG_BYTES);
    Ok(Some((rev, data)))
}

/// `robotmem_meta` key of the database's identity: a random id, made once.
const DB_ID: &str = "db.id";
/// Bytes of the binding tag at the end of a stored snapshot.
const TAG_BYTES: usize = 16;

/// `robotmem_meta` key of the token of the last save of snapshot `name`.
fn token_key(name: &str) -> String {
    format!("snapshot.token {name}")
}

fn meta(conn: &Connection, key: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT value FROM robotmem_meta WHERE key = ?1")?
        .query_row([key], |r| r.get(0))
        .optional()?)
}

/// What a snapshot is bound to (issue 26, F6): its row (name: kind and path),
/// format, the schema, the database's identity, the save it was made by (a
/// random token stored with it, in the same transaction) and the `rev` it holds,
/// over its bytes. A row swapped with another, copied from another file or
/// database, or left from an earlier save does not match and is rebuilt.
fn tag(name: &str, format: &str, db_id: &str, token: &str, rev: i64, data: &[u8]) -> [u8; TAG_BYTES] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let schema = crate::store::schema::SCHEMA_VERSION.to_le_bytes();
    for part in [
        b"robotmem snapshot".as_slice(),
        name.as_bytes(),
        format.as_bytes(),
        &schema,
        db_id.as_bytes(),
        token.as_bytes(),
    ] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    h.update(rev.to_le_bytes());
    h.update((data.len() as u64).to_le_bytes());
    h.update(data);
    let mut out = [0u8; TAG_BYTES];
    out.copy_from_slice(&h.finalize()[..TAG_BYTES]);
    out
}

/// Whether `stored` (a snapshot's bytes and its tag) is bound to row `name` of
/// this database at `rev`, by the last save of that row.
fn bound(conn: &Connection, name: &str, format: &str, rev: i64, stored: &[u8]) -> Result<bool> {
    let (Some(db_id), Some(token)) = (meta(conn, DB_ID)?, meta(conn, &token_key(name))?) else { return Ok(false) };
    let Some(cut) = stored.len().checked_sub(TAG_BYTES) else { return Ok(false) };
    let (data, t) = stored.split_at(cut);
    Ok(tag(name, format, &db_id, &token, rev, data) == t)
}

/// Stores snapshot `name` (what `encode` makes at `rev`) unless the stored one has
/// `format` and is fewer than `min_changes` revs behind. Returns whether it wrote.
pub(super) fn save_named(
    conn: &Connection,
    name: &str,
    format: &str,
    rev: i64,
    min_changes: i64,
    encode: impl FnOnce() -> Vec<u8>,
) -> Result<bool> {
    let stored: Option<(i64, String, Vec<u8>)> = conn
        .prepare_cached("SELECT rev, format, data FROM index_snapshots WHERE name = ?1")?
        .query_row([name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    if let Some((r, f, data)) = stored {
        // A stored snapshot not bound to this row is replaced whatever its age.
        if f == format && rev - r < min_changes.max(1) && bound(conn, name, format, r, &data)? {
            return Ok(false);
        }
    }
    let db_id = match meta(conn, DB_ID)? {
        Some(id) => id,
        None => {
            let id = uuid::Uuid::new_v4().to_string();
            set_meta(conn, DB_ID, &id)?;
            id
        }
    };
    let token = uuid::Uuid::new_v4().to_string();
    set_meta(conn, &token_key(name), &token)?;
    let mut data = encode();
    let t = tag(name, format, &db_id, &token, rev, &data);
    data.extend_from_slice(&t);
    conn.prepare_cached(
        "INSERT INTO index_snapshots (name, rev, format, data) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (name) DO UPDATE SET rev = excluded.rev, format = excluded.format, data = excluded.data",
    )?
    .execute(params![name, rev, format, data])?;
    Ok(true)
}

fn set_meta(conn: &Connection, key: &str, value: &str) -> Result<()> {
    conn.prepare_cached("INSERT OR REPLACE INTO robotmem_meta (key, value) VALUES (?1, ?2)")?.execute([key, value])?;
    Ok(())
}

/// Bump with any change to what a per-path index (filter columns, coordinates)
/// holds for a context.
const PATH_RULES: u32 = 1;

/// Name and format of the snapshot of the per-path index `kind` ("column",
/// "coordinates") at `path`.
fn path_key(kind: &str, path: &DotPath) -> (String, String) {
    let name = format!("{kind} {}", serde_json::to_string(path).unwrap_or_default());
    (name, format!("robotmem {} {kind}, rules {PATH_RULES}", crate::VERSION))
}

/// The stored snapshot of `kind` at `path` as `decode` makes it, with its `rev`,
/// if it is not ahead of `head` and decodes.
pub(super) fn load_path<T>(
    conn: &Connection,
    kind: &str,
    path: &DotPath,
    head: i64,
    decode: impl FnOnce(&[u8]) -> std::result::Result<T, Damaged>,
) -> Result<Option<(i64, T)>> {
    let (name, format) = path_key(kind, path);
    Ok(load_named(conn, &name, &format, head)?.and_then(|(rev, data)| Some((rev, decode(&data).ok()?))))
}

/// [`save_named`] for the per-path index `kind` at `path`.
pub(super) fn save_path(
    conn: &Connection,
    kind: &str,
    path: &DotPath,
    rev: i64,
    min_changes: i64,
    encode: impl FnOnce() -> Vec<u8>,
) -> Result<bool> {
    let (name, format) = path_key(kind, path);
    save_named(conn, &name, &format, rev, min_changes, encode)
}

/// Starts a snapshot: its magic, then the collection names by number.
pub(super) fn begin(magic: &[u8; 4], names: &[&str]) -> Vec<u8> {
    let mut out = magic.to_vec();
    put(&mut out, names.len() as u64);
    names.iter().for_each(|n| put_str(&mut out, n));
    out
}

/// Why a snapshot was not loaded (it is then rebuilt, never trusted in part).
#[derive(Debug, PartialEq)]
pub struct Damaged;

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

pub(super) fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(super) fn put_str(out: &mut Vec<u8>, s: &str) {
    put(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

pub(super) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

pub(super) fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

pub(super) struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn int(&mut self) -> std::result::Result<u64, Damaged> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self.b.get(self.at).ok_or(Damaged)?;
            self.at += 1;
            v |= ((byte & 0x7f) as u64).checked_shl(shift).ok_or(Damaged)?;
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Damaged)
    }

    /// A count of items that each take at least one byte: never more than the bytes left.
    pub(super) fn count(&mut self) -> std::result::Result<usize, Damaged> {
        let n = self.int()?;
        if n > (self.b.len() - self.at) as u64 {
            return Err(Damaged);
        }
        Ok(n as usize)
    }

    pub(super) fn below(&mut self, limit: u64) -> std::result::Result<u64, Damaged> {
        let v = self.int()?;
        if v >= limit {
            return Err(Damaged);
        }
        Ok(v)
    }

    pub(super) fn str(&mut self) -> std::result::Result<&'a str, Damaged> {
        let n = self.count()?;
        let s = std::str::from_utf8(&self.b[self.at..self.at + n]).map_err(|_| Damaged)?;
        self.at += n;
        Ok(s)
    }
}

impl Reader<'_> {
    pub(super) fn f64(&mut self) -> std::result::Result<f64, Damaged> {
        let b = self.b.get(self.at..self.at + 8).ok_or(Damaged)?;
        self.at += 8;
        Ok(f64::from_le_bytes(b.try_into().map_err(|_| Damaged)?))
    }

    /// The collection names [`begin`] wrote, as numbers from `intern`.
    pub(super) fn names(&mut self, mut intern: impl FnMut(&str) -> u32) -> std::result::Result<Vec<u32>, Damaged> {
        (0..self.count()?).map(|_| self.str().map(&mut intern)).collect()
    }

    /// Whether every byte was read.
    pub(super) fn done(&self) -> bool {
        self.at == self.b.len()
    }
}

/// Appends the checksum of `out` (which starts with its magic).
pub(super) fn seal(mut out: Vec<u8>) -> Vec<u8> {
    let sum = fnv1a(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// A reader past the magic of a sealed snapshot, if the magic and checksum hold.
pub(super) fn open<'a>(bytes: &'a [u8], magic: &[u8; 4]) -> std::result::Result<Reader<'a>, Damaged> {
    let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(8).ok_or(Damaged)?).ok_or(Damaged)?;
    if !body.starts_with(magic) || fnv1a(body).to_le_bytes() != sum {
        return Err(Damaged);
    }
    Ok(Reader { b: body, at: magic.len() })
}

impl Inner {
    /// The live documents and the words and collections they use.
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.docs.len() * 48);
        out.extend_from_slice(MAGIC);
        let mut terms: Vec<(&str, u32)> = self.term_ids.iter().map(|(s, &t)| (s.as_str(), t)).collect();
        terms.sort_unstable_by_key(|&(_, t)| t);
        put(&mut out, terms.len() as u64);
        for (s, t) in terms {
            put_str(&mut out, s);
            out.push(self.ignorable[t as usize] as u8);
        }
        let mut colls: Vec<(&str, u32)> = self.collections.iter().map(|(s, &c)| (s.as_str(), c)).collect();
        colls.sort_unstable_by_key(|&(_, c)| c);
        put(&mut out, colls.len() as u64);
        for (s, _) in colls {
            put_str(&mut out, s);
        }
        put(&mut out, self.live as u64);
        for doc in self.docs.iter().filter(|d| d.live) {
            put(&mut out, zigzag(doc.id));
            put(&mut out, doc.collection as u64);
            put(&mut out, doc.len as u64);
            put(&mut out, (doc.dedup_len as i64 + 1) as u64);
            put(&mut out, doc.terms.len() as u64);
            let mut prev = 0u32;
            for &(t, tf) in &doc.terms {
                put(&mut out, (t - prev) as u64);
                put(&mut out, tf as u64);
                prev = t;
            }
        }
        seal(out)
    }

    /// The index a snapshot holds (its `rev` is the caller's to set).
    pub(super) fn decode(bytes: &[u8]) -> std::result::Result<Inner, Damaged> {
        let mut r = open(bytes, MAGIC)?;
        let mut inner = Inner::default();
        let n_terms = r.count()?;
        for t in 0..n_terms as u32 {
            let s = r.str()?;
            let ignorable = r.below(2)? == 1;
            if inner.term_ids.insert(s.to_string(), t).is_some() {
                return Err(Damaged);
            }
            inner.postings.push(Vec::new());
            inner.df.push(0);
            inner.ignorable.push(ignorable);
            inner.max_tf.push(0);
            inner.min_len.push(u32::MAX);
        }
        let n_colls = r.count()?;
        for c in 0..n_colls as u32 {
            if inner.collections.insert(r.str()?.to_string(), c).is_some() {
                return Err(Damaged);
            }
        }
        let n_docs = r.count()?;
        inner.docs.reserve(n_docs);
        inner.by_id = HashMap::with_capacity(n_docs);
        for d in 0..n_docs as u32 {
            let id = unzigzag(r.int()?);
            let collection = r.below(n_colls as u64)? as u32;
            let len = r.below(u32::MAX as u64 + 1)? as u32;
            let dedup_len = r.below(i32::MAX as u64 + 1)? as i32 - 1;
            let n = r.count()?;
            let mut terms = Vec::with_capacity(n);
            let mut t = 0u64;
            for i in 0..n {
                let gap = r.int()?;
                if i > 0 && gap == 0 {
                    return Err(Damaged); // term ids strictly ascending
                }
                t = t.checked_add(gap).filter(|&t| t < n_terms as u64).ok_or(Damaged)?;
                let tf = r.below(u16::MAX as u64 + 1)? as u16;
                if tf == 0 {
                    return Err(Damaged);
                }
                terms.push((t as u32, tf));
            }
            if inner.by_id.insert(id, d).is_some() {
                return Err(Damaged);
            }
            for &(t, _) in &terms {
                inner.df[t as usize] += 1;
            }
            inner.live += 1;
            inner.total_len += len as u64;
            inner.docs.push(Doc { id, collection, len, live: true, dedup_len, terms });
        }
        if !r.done() {
            return Err(Damaged);
        }
        // Postings sized exactly (grown by doubling they would hold up to twice the memory).
        for (list, &df) in inner.postings.iter_mut().zip(&inner.df) {
            list.reserve_exact(df as usize);
        }
        for d in 0..inner.docs.len() {
            let (len, terms) = (inner.docs[d].len, std::mem::take(&mut inner.docs[d].terms));
            for &(t, tf) in &terms {
                inner.post(t, d as u32, tf, len);
            }
            inner.docs[d].terms = terms;
        }
        Ok(inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Inner {
        let mut i = Inner::default();
        i.add(1, "a", "grasping the red mug worked", 4);
        i.add(7, "b", "抓取杯子成功 grasp", -1);
        i.add(-3, "a", "mug mug mug on the table", -1);
        i.add(9, "a", "to be removed", -1);
        i.remove(9);
        i
    }

    #[test]
    fn round_trip_keeps_the_live_documents() {
        let i = sample();
        let bytes = i.encode();
        let j = Inner::decode(&bytes).unwrap();
        assert_eq!(j.encode(), bytes, "decoding and encoding again is the identity");
        assert_eq!(j.live, 3);
        assert_eq!(j.docs.len(), 3);
        assert_eq!(j.total_len, i.total_len);
        assert_eq!(j.df, i.df);
        for (a, b) in j.docs.iter().zip(i.docs.iter().filter(|d| d.live)) {
            assert_eq!(
                (a.id, a.collection, a.len, a.dedup_len, &a.terms),
                (b.id, b.collection, b.len, b.dedup_len, &b.terms)
            );
        }
    }

    #[test]
    fn any_damage_is_refused_without_panicking() {
        let bytes = sample().encode();
        for cut in 0..bytes.len() {
            assert_eq!(Inner::decode(&bytes[..cut]).err(), Some(Damaged), "cut at {cut}");
        }
        for at in 0..bytes.len() {
            for bit in 0..8 {
                let mut b = bytes.clone();
                b[at] ^= 1 << bit;
                assert!(Inner::decode(&b).is_err(), "bit {bit} of byte {at}");
            }
        }
    }

    #[test]
    fn hostile_payloads_with_a_valid_checksum_are_refused() {
        // Arbitrary bodies sealed with a correct checksum: decode must check every
        // count and id itself (no panic, no huge allocation).
        let mut x = 0x1234_5678_9abc_def0u64;
        for round in 0..20_000 {
            let mut body = MAGIC.to_vec();
            let n = (round % 64) + 1;
            for _ in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                body.push(if round % 3 == 0 { (x % 4) as u8 } else { x as u8 });
            }
            let sum = fnv1a(&body);
            body.extend_from_slice(&sum.to_le_bytes());
            let _ = Inner::decode(&body);
        }
        let mut huge = MAGIC.to_vec();
        put(&mut huge, u64::MAX);
        let sum = fnv1a(&huge);
        huge.extend_from_slice(&sum.to_le_bytes());
        assert!(Inner::decode(&huge).is_err());
    }
}
