//! The copies of the in-process indexes saved in the database file (table
//! `index_snapshots`, one row per index, or per path for the per-path ones), so
//! that opening a file and the first recall do not rebuild them from every row
//! (at 100k memories the text index build reads, splits and stems 100k texts:
//! 0.7 s). This is the codec they share; each index encodes its own payload
//! (`text::snapshot`; `spatial` and `columns` per path, [`load_path`]).
//!
//! A snapshot is an index's live state at one `rev` (the change stamp every
//! searchable write sets, see [`super::text`]): it is loaded on the first sync of
//! a handle, then the rows with a later `rev` are applied as usual, so a snapshot
//! that is behind (a process killed before it saved one) costs only those rows.
//! It is written when the handle closes, if enough changed since the one stored.
//!
//! The format is private to one robotmem version and the rules of the index's
//! payload (its format string): any other version rebuilds the index and
//! replaces the snapshot. A snapshot that does not decode (damaged, cut) is
//! ignored the same way; decoding checks every count, id and offset and never
//! panics, and a 64-bit checksum over the payload ([`seal`], [`open`]) catches
//! damage that would still decode. A stored snapshot ends with a tag binding it
//! to its row (kind and path), format, the schema, the database's random
//! identity, its `rev` and the save that wrote it (a random token in
//! `robotmem_meta`, written in the same transaction): a row swapped with another,
//! copied from another file or database, or left from an earlier save is rebuilt
//! from the memories and replaced at the next close.
//!
//! Integers are LEB128 ([`put`], [`Reader::int`]); ids zig-zag.

use rusqlite::{params, Connection, OptionalExtension};

use super::filter::DotPath;
use crate::error::Result;

/// The `(rev, bytes)` of snapshot `name` if it has `format`, is not ahead of
/// `head` and is bound to this row, database and save ([`bound`]).
pub(super) fn load_named(conn: &Connection, name: &str, format: &str, head: i64) -> Result<Option<(i64, Vec<u8>)>> {
    load_covered(conn, name, format, head, Cover::Bytes)
}

/// What a snapshot's binding tag covers of its bytes: each byte (SHA-256 over
/// all), or for rows of megabytes their [`fast_digest`] (SHA-256 runs at about
/// 0.9 GB/s here: 120 ms over the 110 MB of a 100k vector index).
#[derive(Clone, Copy)]
pub(super) enum Cover {
    Bytes,
    Digest,
}

/// [`load_named`] for a row stored with `cover`.
pub(super) fn load_covered(
    conn: &Connection,
    name: &str,
    format: &str,
    head: i64,
    cover: Cover,
) -> Result<Option<(i64, Vec<u8>)>> {
    let row: Option<(i64, Vec<u8>)> = conn
        .prepare_cached("SELECT rev, data FROM index_snapshots WHERE name = ?1 AND format = ?2")?
        .query_row(params![name, format], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((rev, mut data)) = row.filter(|(rev, _)| *rev <= head) else { return Ok(None) };
    if !bound(conn, name, format, rev, &data, cover)? {
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
fn tag(name: &str, format: &str, db_id: &str, token: &str, rev: i64, data: &[u8], cover: Cover) -> [u8; TAG_BYTES] {
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
    match cover {
        Cover::Bytes => h.update(data),
        Cover::Digest => h.update(fast_digest(data)),
    }
    let mut out = [0u8; TAG_BYTES];
    out.copy_from_slice(&h.finalize()[..TAG_BYTES]);
    out
}

/// A 128-bit digest of `b` that any change of its bytes changes (not against
/// forgery: the tag binds, this only stands for the bytes): four lanes, each
/// step a bijection of the lane and the next 8 bytes, so one changed word always
/// changes its lane; 8–10 ms over 110 MB.
fn fast_digest(b: &[u8]) -> [u8; 16] {
    const M: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut lanes = [M, 0xC2B2_AE3D_27D4_EB4F, 0x1656_67B1_9E37_79F9, 0xD6E8_FEB8_6659_FD93];
    let step = |lane: &mut u64, w: u64| *lane = (*lane ^ w).wrapping_mul(M).rotate_left(29);
    let mut blocks = b.chunks_exact(32);
    for c in &mut blocks {
        for (i, lane) in lanes.iter_mut().enumerate() {
            step(lane, u64::from_le_bytes(c[i * 8..i * 8 + 8].try_into().expect("8 bytes")));
        }
    }
    let mut tail = [0u8; 32];
    tail[..blocks.remainder().len()].copy_from_slice(blocks.remainder());
    for (i, lane) in lanes.iter_mut().enumerate() {
        step(lane, u64::from_le_bytes(tail[i * 8..i * 8 + 8].try_into().expect("8 bytes")));
        step(lane, b.len() as u64);
    }
    let mix = |mut x: u64| {
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^ (x >> 31)
    };
    let (a, c) = (mix(lanes[0] ^ lanes[2].rotate_left(17)), mix(lanes[1] ^ lanes[3].rotate_left(17)));
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&a.to_le_bytes());
    out[8..].copy_from_slice(&c.to_le_bytes());
    out
}

/// Whether `stored` (a snapshot's bytes and its tag) is bound to row `name` of
/// this database at `rev`, by the last save of that row.
fn bound(conn: &Connection, name: &str, format: &str, rev: i64, stored: &[u8], cover: Cover) -> Result<bool> {
    let (Some(db_id), Some(token)) = (meta(conn, DB_ID)?, meta(conn, &token_key(name))?) else { return Ok(false) };
    let Some(cut) = stored.len().checked_sub(TAG_BYTES) else { return Ok(false) };
    let (data, t) = stored.split_at(cut);
    Ok(tag(name, format, &db_id, &token, rev, data, cover) == t)
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
    let stored: Option<(i64, String)> = conn
        .prepare_cached("SELECT rev, format FROM index_snapshots WHERE name = ?1")?
        .query_row([name], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    // Its bytes are read only when it may be kept: a stored snapshot not bound
    // to this row is replaced whatever its age.
    if let Some((r, f)) = stored.filter(|(r, f)| f == format && rev - r < min_changes.max(1)) {
        let data: Vec<u8> = conn
            .prepare_cached("SELECT data FROM index_snapshots WHERE name = ?1")?
            .query_row([name], |row| row.get(0))?;
        if bound(conn, name, &f, r, &data, Cover::Bytes)? {
            return Ok(false);
        }
    }
    store_named(conn, name, format, rev, encode(), Cover::Bytes)?;
    Ok(true)
}

/// Stores `data` as snapshot `name` at `rev`, bound to this row, database and
/// save (whatever is stored there now), its tag covering it as `cover` says.
pub(super) fn store_named(
    conn: &Connection,
    name: &str,
    format: &str,
    rev: i64,
    data: Vec<u8>,
    cover: Cover,
) -> Result<()> {
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
    let t = tag(name, format, &db_id, &token, rev, &data, cover);
    // The row is made with zeros (`zeroblob`, the last column: SQLite writes its
    // pages without a buffer of its size), then the bytes are written into it a
    // piece at a time. Bound as a parameter, a snapshot's bytes were copied twice
    // more (SQLite's own copy of the parameter, then the record it builds): at 1M
    // memories a close of a handle that built its indexes peaked 80 MiB higher (506 against 427).
    let stored_len = data.len() + TAG_BYTES;
    let rowid: i64 = conn
        .prepare_cached(
            "INSERT INTO index_snapshots (name, rev, format, data) VALUES (?1, ?2, ?3, zeroblob(?4))
             ON CONFLICT (name) DO UPDATE SET rev = excluded.rev, format = excluded.format, data = excluded.data
             RETURNING rowid",
        )?
        .query_row(params![name, rev, format, stored_len as i64], |r| r.get(0))?;
    let mut blob = conn.blob_open(rusqlite::MAIN_DB, c"index_snapshots", c"data", rowid, false)?;
    let mut at = 0;
    for piece in data.chunks(WRITE_PIECE).chain([t.as_slice()]) {
        blob.write_at(piece, at)?;
        at += piece.len();
    }
    Ok(())
}

/// Bytes of a snapshot written into its row at a time.
const WRITE_PIECE: usize = 1 << 20;

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

pub(super) fn fnv1a(bytes: &[u8]) -> u64 {
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

    /// Bytes not read yet.
    pub(super) fn left(&self) -> usize {
        self.b.len() - self.at
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

    /// The next `n` bytes as they are.
    pub(super) fn bytes(&mut self, n: usize) -> std::result::Result<&'a [u8], Damaged> {
        let b = self.b.get(self.at..self.at.checked_add(n).ok_or(Damaged)?).ok_or(Damaged)?;
        self.at += n;
        Ok(b)
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

/// A reader past the magic of a snapshot that is not sealed (its bytes are
/// checked by their binding tag alone, [`load_named`]), if the magic holds.
pub(super) fn open_unsealed<'a>(bytes: &'a [u8], magic: &[u8; 4]) -> std::result::Result<Reader<'a>, Damaged> {
    if !bytes.starts_with(magic) {
        return Err(Damaged);
    }
    Ok(Reader { b: bytes, at: magic.len() })
}

/// A reader past the magic of a sealed snapshot, if the magic and checksum hold.
pub(super) fn open<'a>(bytes: &'a [u8], magic: &[u8; 4]) -> std::result::Result<Reader<'a>, Damaged> {
    let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(8).ok_or(Damaged)?).ok_or(Damaged)?;
    if !body.starts_with(magic) || fnv1a(body).to_le_bytes() != sum {
        return Err(Damaged);
    }
    Ok(Reader { b: body, at: magic.len() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot_tables() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE robotmem_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             CREATE TABLE index_snapshots (name TEXT PRIMARY KEY, rev INTEGER NOT NULL, format TEXT NOT NULL,
                                           data BLOB NOT NULL);",
        )
        .unwrap();
        conn
    }

    #[test]
    fn a_snapshot_written_piece_by_piece_reads_back_whole_and_bound() {
        let conn = snapshot_tables();
        // Pieces: two whole, one cut, then the tag; written over a longer row first.
        let big: Vec<u8> = (0..3 * WRITE_PIECE as u32).map(|i| (i * 131 % 251) as u8).collect();
        let data = big[..2 * WRITE_PIECE + 12_345].to_vec();
        for (rev, bytes) in [(3, &big), (7, &data)] {
            store_named(&conn, "x", "f", rev, bytes.clone(), Cover::Bytes).unwrap();
        }
        assert_eq!(load_named(&conn, "x", "f", 7).unwrap(), Some((7, data.clone())));
        let stored: i64 = conn.query_row("SELECT length(data) FROM index_snapshots", [], |r| r.get(0)).unwrap();
        assert_eq!(stored as usize, data.len() + TAG_BYTES);
        assert_eq!(load_named(&conn, "x", "f", 6).unwrap(), None, "ahead of the reader");
        assert_eq!(load_named(&conn, "x", "g", 7).unwrap(), None, "another format");
        // A young, bound snapshot is kept; one whose bytes changed is replaced.
        assert!(!save_named(&conn, "x", "f", 8, 4, || unreachable!("kept")).unwrap());
        conn.execute("UPDATE index_snapshots SET data = zeroblob(length(data))", []).unwrap();
        assert_eq!(load_named(&conn, "x", "f", 7).unwrap(), None, "damaged");
        assert!(save_named(&conn, "x", "f", 8, 4, || big.clone()).unwrap());
        assert_eq!(load_named(&conn, "x", "f", 8).unwrap(), Some((8, big)));
    }

    #[test]
    fn fast_digest_changes_with_any_byte_and_the_length() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 131 % 251) as u8).collect();
        let d = fast_digest(&data);
        for at in [0, 7, 8, 31, 32, 500, 991, 999] {
            for bit in [0, 3, 7] {
                let mut v = data.clone();
                v[at] ^= 1 << bit;
                assert_ne!(fast_digest(&v), d, "byte {at} bit {bit}");
            }
        }
        let mut longer = data.clone();
        longer.push(0);
        assert_ne!(fast_digest(&longer), d);
        assert_ne!(fast_digest(&data[..999]), d);
        assert_eq!(fast_digest(&data), d);
    }
}
