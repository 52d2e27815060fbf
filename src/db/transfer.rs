//! Export and import as JSON Lines (docs/EXPORT-FORMAT.md): a header line, one
//! line per session, one line per memory, with everything a lossless round trip
//! needs (and, on request, each memory's vector with its model stamp).
//!
//! Both directions stream. Export walks one read snapshot with a cursor in id
//! order, one row in memory at a time. Import reads one line at a time (at most
//! [`MAX_LINE_BYTES`]), checks it completely before the database is touched, and
//! writes lines in batches: one transaction per batch, a savepoint per line, so a
//! line that fails leaves nothing behind while the lines around it are stored.
//! It keeps 16 bytes per memory (old id → new id) to point superseded memories
//! at their replacements once the whole file is read.

mod learned;
mod record;
#[cfg(test)]
mod tests;

use std::io::BufRead;

use rusqlite::Connection;
use serde_json::Value;

use super::{Db, Draft, DraftRequest};
use crate::dedup;
use crate::embed::{Embedding, ModelStamp};
use crate::error::{Error, Result, Status};
use crate::limits;
use crate::search;
use crate::session;
use crate::store::memory;
use crate::store::transfer::{self as sql, Restored};
use crate::store::vectors;
use crate::types::MemoryStatus;

pub use record::{parse_stamp, FORMAT, VERSION};
use record::{LearnIn, Line, MemoryIn, SessionIn};

/// Longest line import reads: 4 MiB of perception data is 5.6 MiB of base64.
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;
/// Lines written in one transaction, and the input bytes that also end a batch.
const BATCH_LINES: usize = 512;
const BATCH_BYTES: usize = 16 * 1024 * 1024;
/// Superseded memories re-pointed per transaction at the end of an import.
const RESOLVE_BATCH: usize = 4096;

/// What [`Db::export_each`] writes.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExportOptions<'a> {
    /// Only this collection's memories, and the sessions they or it have.
    pub collection: Option<&'a str>,
    /// Each active memory's vector (base64 of little-endian f32) and, in the
    /// header, the model stamp that made them.
    pub vectors: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    Header,
    Session,
    Memory,
}

/// One line of an export, handed to the caller's writer.
pub struct ExportLine<'a> {
    pub kind: LineKind,
    /// The line's JSON, without the newline.
    pub json: &'a str,
    /// Memory lines the export writes in all (for progress).
    pub memories_total: u64,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExportSummary {
    pub sessions: u64,
    pub memories: u64,
    pub vectors: u64,
    /// The model stamp of the vectors written (with `vectors` asked and a model stamped).
    pub model: Option<String>,
}

/// What became of one line of an import.
#[derive(Debug, Clone, PartialEq)]
pub enum LineOutcome {
    /// An empty line (skipped).
    Blank,
    Header,
    /// A session line; `stored` false: a session of that id exists and is kept as it is.
    Session {
        id: String,
        stored: bool,
    },
    /// A memory stored under a new id, with its vector or not.
    Memory {
        id: i64,
        vector: bool,
    },
    /// Not stored: the database holds this memory already (`existing_id`).
    Duplicate {
        existing_id: i64,
    },
    /// Nothing of the line was written; the message starts with "line N: ".
    Error(Error),
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportSummary {
    pub lines: u64,
    pub memories: u64,
    pub sessions: u64,
    /// Session lines whose id the database already had.
    pub sessions_existing: u64,
    pub duplicates: u64,
    /// Lines not imported (each reported with its number).
    pub errors: u64,
    /// Vectors stored from the file.
    pub vectors: u64,
    /// Vectors in the file that were not kept (another model's, or no model stamp).
    pub vectors_dropped: u64,
    /// Active memories stored without a vector: `Db::reembed` embeds them.
    pub waiting_for_vector: u64,
    /// Superseded memories whose replacement was not in the file (or not stored).
    pub unresolved_superseded: u64,
    /// The model stamp of the file's vectors (last header).
    pub file_model: Option<String>,
    /// The model stamp of the database's vectors after the import.
    pub db_model: Option<String>,
}

impl Db {
    /// Writes the database (or one collection) as JSON lines: `f` gets each line,
    /// header first, then sessions, then memories, each in id order. Reads one
    /// snapshot (writers are not blocked) and holds one row at a time. A damaged
    /// memory stops the export with `Status::Corrupt` naming it.
    pub fn export_each(
        &self,
        o: &ExportOptions,
        mut f: impl FnMut(&ExportLine) -> Result<()>,
    ) -> Result<ExportSummary> {
        let collection =
            o.collection.map(|c| limits::collection(Some(c), &self.opts.default_collection)).transpose()?;
        self.store.read(|conn| {
            let stamp = vectors::stamp(conn)?;
            let with_vectors = o.vectors && stamp.is_some();
            let counts = sql::counts(conn, collection)?;
            let mut sum = ExportSummary { model: stamp.clone().filter(|_| with_vectors), ..Default::default() };
            let mut emit =
                |kind: LineKind, v: Value| f(&ExportLine { kind, json: &v.to_string(), memories_total: counts.1 });
            emit(
                LineKind::Header,
                record::header_json(collection, stamp.as_deref(), with_vectors, counts, &self.now()),
            )?;
            sql::each_session(conn, collection, |s, outcomes| {
                sum.sessions += 1;
                emit(LineKind::Session, record::session_json(&s, &outcomes))
            })?;
            sql::each_memory(conn, collection, |m, extra| {
                let vector = match with_vectors && m.status == MemoryStatus::Active {
                    true => vectors::get(conn, m.id)?,
                    false => None,
                };
                sum.memories += 1;
                sum.vectors += vector.is_some() as u64;
                let tags = sql::tags_by_source(conn, m.id)?;
                emit(LineKind::Memory, record::memory_json(&m, &extra, &tags, vector.as_deref()))
            })?;
            Ok(sum)
        })
    }

    /// Reads JSON lines written by [`Db::export_each`] and stores what the database
    /// does not hold yet; `on_line` hears of every line, in order. A line without
    /// `kind` is an experience to learn: `{"text": ..., "context"?, "session_id"?,
    /// "collection"?, "tags"?, "time"?}` (a robot's log), stored as [`Db::learn`]
    /// stores one (classified, deduplicated, embedded in batches) at its `time`. A bad line is
    /// reported and skipped (nothing of it is written); the import goes on.
    /// Returns `Err` only when it cannot go on: the input cannot be read, a header
    /// names a newer format (`Status::SchemaTooNew`), or the database fails; the
    /// batches stored before stay stored.
    pub fn import_lines(
        &self,
        mut input: impl BufRead,
        on_line: impl FnMut(u64, &LineOutcome),
    ) -> Result<ImportSummary> {
        let mut imp = Import {
            db: self,
            on_line,
            stamp: None,
            batch: Vec::new(),
            batch_bytes: 0,
            ids: Vec::new(),
            ids_sorted: true,
            pending: Vec::new(),
            sum: ImportSummary::default(),
        };
        let mut buf = Vec::new();
        let mut n = 0u64;
        while let Some(fits) = read_line(&mut input, &mut buf, MAX_LINE_BYTES)
            .map_err(|e| Error::new(Status::Io, format!("cannot read the input after line {n}: {e}")))?
        {
            n += 1;
            let item = match (fits, std::str::from_utf8(&buf)) {
                (false, _) => Item::Done(LineOutcome::Error(Error::invalid(format!(
                    "the line is longer than {MAX_LINE_BYTES} bytes"
                )))),
                (true, Err(_)) => Item::Done(LineOutcome::Error(Error::invalid("the line is not valid UTF-8"))),
                (true, Ok(text)) => match record::parse(text, imp.stamp.as_ref()) {
                    Ok(Line::Blank) => Item::Done(LineOutcome::Blank),
                    Ok(Line::Header(h)) => {
                        imp.flush()?; // the lines before it were read with the previous header
                        imp.sum.file_model = h.vectors_of.as_ref().map(ModelStamp::encode);
                        imp.stamp = h.vectors_of;
                        Item::Done(LineOutcome::Header)
                    }
                    Ok(Line::Session(s)) => Item::Session(s),
                    Ok(Line::Memory(m)) => Item::Memory(m),
                    Ok(Line::Learn(l)) => Item::Learn(l),
                    Err(e) if e.status == Status::SchemaTooNew => return Err(at_line(n, e)),
                    Err(e) => Item::Done(LineOutcome::Error(e)),
                },
            };
            imp.push(n, item, buf.len())?;
        }
        imp.flush()?;
        imp.resolve()?;
        imp.sum.db_model = self.store.read(vectors::stamp)?;
        Ok(imp.sum)
    }

    /// Validates, classifies and hashes an imported memory as a new one would be,
    /// then takes the file's stored context and user tags as they are.
    fn import_draft<'a>(&'a self, m: &'a MemoryIn) -> Result<Draft<'a>> {
        let fields = DraftRequest {
            tags: &[],
            context: Some(&m.user_context),
            collection: Some(&m.collection),
            session_id: m.session_id.as_deref(),
            perception: m.perception.as_ref().map(|(t, d, meta)| (*t, d.as_deref(), meta.as_deref())),
            ttl_seconds: None,
            expires_at: None,
        };
        let mut d = self.draft(m.kind, &m.content, fields)?;
        // The file's expiry exactly, none included (no collection default).
        d.expires_at.clone_from(&m.expires_at);
        d.ctx_json.clone_from(&m.context);
        d.is_real = search::is_real_world(&m.context_map);
        d.user_tags.clone_from(&m.user_tags);
        Ok(d)
    }

    /// Whether vectors made by the file's model `file` are kept: they are when
    /// the database's vectors are that model's, or when it has none and this
    /// handle has no model (the database then takes the file's model).
    fn keep_vectors(&self, tx: &Connection, file: Option<&ModelStamp>) -> Result<bool> {
        let Some(file) = file else { return Ok(false) };
        match vectors::stamp(tx)? {
            Some(s) => Ok(s == file.encode()),
            None if self.embedder.is_none() => vectors::adopt(tx, file),
            None => Ok(false),
        }
    }

    /// Stores one memory line inside the caller's savepoint.
    fn import_memory(&self, tx: &Connection, m: &MemoryIn, d: &Draft, keep: bool) -> Result<LineOutcome> {
        if let Some(s) = d.session {
            if session::get(tx, s)?.is_none() {
                return Err(Error::invalid(format!(
                    "session_id {s:?} names no session (its session line must come first)"
                )));
            }
        }
        let existing = match m.status {
            MemoryStatus::Active => dedup::exact(tx, d.collection, &d.hash, None)?.map(|x| x.existing_id),
            s => sql::find_same(tx, d.collection, &d.hash, s.as_str(), &m.created_at)?,
        };
        if let Some(existing_id) = existing {
            return Ok(LineOutcome::Duplicate { existing_id });
        }
        let arrived = self.now();
        let mut row = d.row(&m.category, m.confidence, m.decay_rate, &m.created_at);
        row.stored_at = Some(&arrived);
        let id = memory::insert(tx, &row)?;
        let restored = Restored {
            status: m.status.as_str(),
            decay_base: m.decay_base,
            decay_next_at: m.decay_next_at.as_deref(),
            invalidated_reason: m.invalidated_reason.as_deref(),
            invalidated_at: m.invalidated_at.as_deref(),
            access_count: m.access_count,
            return_count: m.return_count,
            last_accessed: m.last_accessed.as_deref(),
            updated_at: &m.updated_at,
        };
        sql::restore(tx, id, &restored)?;
        memory::set_auto_tags(tx, id, &m.auto_tags)?;
        memory::add_user_tags(tx, id, &d.user_tags)?;
        let vector = match (&m.vector, keep && m.status == MemoryStatus::Active) {
            (Some(v), true) => self.store_embedding(tx, id, d.collection, Some(&Embedding::Vector(v.clone())))?,
            _ => false,
        };
        Ok(LineOutcome::Memory { id, vector })
    }

    /// Runs one line's writes in a savepoint: a line at fault is rolled back alone
    /// (with the vectors it staged) and reported; any other failure fails the batch.
    fn in_savepoint(&self, tx: &Connection, f: impl FnOnce(&Connection) -> Result<LineOutcome>) -> Result<LineOutcome> {
        tx.execute_batch("SAVEPOINT rm_import_line")?;
        let mark = self.vindex.staged_mark();
        match f(tx) {
            Ok(o) => {
                tx.execute_batch("RELEASE rm_import_line")?;
                Ok(o)
            }
            Err(e) => {
                self.vindex.truncate_staged(mark);
                tx.execute_batch("ROLLBACK TO rm_import_line; RELEASE rm_import_line")?;
                match e.status {
                    Status::InvalidArgument | Status::NotFound | Status::InvalidState | Status::Duplicate => {
                        Ok(LineOutcome::Error(e))
                    }
                    _ => Err(e),
                }
            }
        }
    }
}

fn at_line(n: u64, e: Error) -> Error {
    Error::new(e.status, format!("line {n}: {}", e.message))
}

/// A line waiting for its batch.
enum Item {
    /// Nothing to write (blank, header, or a line that failed its checks).
    Done(LineOutcome),
    Session(Box<SessionIn>),
    Memory(Box<MemoryIn>),
    Learn(Box<LearnIn>),
}

/// The state of one import.
struct Import<'a, F> {
    db: &'a Db,
    on_line: F,
    /// The model of the vectors of the last header, if it had vectors.
    stamp: Option<ModelStamp>,
    batch: Vec<(u64, Item)>,
    batch_bytes: usize,
    /// (id in the file, id in the database) of every memory line stored or found.
    ids: Vec<(i64, i64)>,
    ids_sorted: bool,
    /// (new id, superseded_by in the file) of superseded memories stored.
    pending: Vec<(i64, i64)>,
    sum: ImportSummary,
}

impl<F: FnMut(u64, &LineOutcome)> Import<'_, F> {
    fn push(&mut self, line: u64, item: Item, bytes: usize) -> Result<()> {
        self.batch.push((line, item));
        self.batch_bytes += bytes;
        if self.batch.len() >= BATCH_LINES || self.batch_bytes >= BATCH_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the batch in one transaction, a savepoint per line, then reports it.
    fn flush(&mut self) -> Result<()> {
        let items = std::mem::take(&mut self.batch);
        self.batch_bytes = 0;
        if items.is_empty() {
            return Ok(());
        }
        let db = self.db;
        // Drafts (validation, classification, hashes) outside the write lock.
        let mut drafts: Vec<Option<Result<Draft>>> = items
            .iter()
            .map(|(_, it)| match it {
                Item::Memory(m) => Some(db.import_draft(m)),
                Item::Learn(l) => Some(db.learn_draft(l)),
                _ => None,
            })
            .collect();
        // The lines to learn are embedded together, as learn_batch embeds.
        let learning: Vec<usize> =
            (0..items.len()).filter(|&i| matches!((&items[i].1, &drafts[i]), (Item::Learn(_), Some(Ok(_))))).collect();
        let texts: Vec<&str> = learning
            .iter()
            .filter_map(|&i| match &items[i].1 {
                Item::Learn(l) => Some(l.text.as_str()),
                _ => None,
            })
            .collect();
        for (&i, v) in learning.iter().zip(db.embed_passages(&texts)) {
            if let Some(Ok(d)) = &mut drafts[i] {
                d.vector = v;
            }
        }
        let stamp = self.stamp.as_ref();
        let wants_vectors = items.iter().any(|(_, it)| matches!(it, Item::Memory(m) if m.vector.is_some()));
        let mut made = 0u64;
        let outcomes = db.write(|tx| {
            made = 0;
            let keep = wants_vectors && db.keep_vectors(tx, stamp)?;
            if !learning.is_empty() {
                let learned = learning.iter().filter_map(|&i| drafts[i].as_ref().and_then(|d| d.as_ref().ok()));
                db.sync_for_dedup(tx, learned)?;
            }
            let mut out = Vec::with_capacity(items.len());
            for ((_, item), draft) in items.iter().zip(&drafts) {
                out.push(match (item, draft) {
                    (Item::Done(o), _) => o.clone(),
                    (_, Some(Err(e))) => LineOutcome::Error(e.clone()),
                    (Item::Session(s), _) => db.in_savepoint(tx, |tx| {
                        let stored = sql::insert_session(tx, &s.row, &s.outcomes)?;
                        Ok(LineOutcome::Session { id: s.row.id.clone(), stored })
                    })?,
                    (Item::Memory(m), Some(Ok(d))) => db.in_savepoint(tx, |tx| db.import_memory(tx, m, d, keep))?,
                    (Item::Learn(l), Some(Ok(d))) => {
                        let mut n = 0;
                        let o = db.in_savepoint(tx, |tx| db.import_learned(tx, l, d, &mut n))?;
                        made += n * u64::from(matches!(o, LineOutcome::Memory { .. } | LineOutcome::Duplicate { .. }));
                        o
                    }
                    (Item::Memory(_) | Item::Learn(_), None) => {
                        return Err(Error::internal("an imported memory has no draft"))
                    }
                });
            }
            Ok(out)
        })?;
        self.sum.sessions += made;
        for ((line, item), outcome) in items.iter().zip(outcomes) {
            self.account(*line, item, outcome);
        }
        Ok(())
    }

    /// Counts one written line, remembers its ids and reports it.
    fn account(&mut self, line: u64, item: &Item, outcome: LineOutcome) {
        let s = &mut self.sum;
        s.lines += 1;
        let memory = match item {
            Item::Memory(m) => Some(m),
            _ => None,
        };
        let mut map = |old: i64, new: i64| {
            if self.ids.last().is_some_and(|&(last, _)| last > old) {
                self.ids_sorted = false;
            }
            self.ids.push((old, new));
        };
        let outcome = match (outcome, memory) {
            (LineOutcome::Memory { id, vector }, Some(m)) => {
                s.memories += 1;
                s.vectors += vector as u64;
                s.waiting_for_vector += (m.status == MemoryStatus::Active && !vector) as u64;
                s.vectors_dropped += ((m.vector.is_some() || m.vector_unstamped) && !vector) as u64;
                map(m.id, id);
                if let (MemoryStatus::Superseded, Some(by)) = (m.status, m.superseded_by) {
                    self.pending.push((id, by));
                }
                LineOutcome::Memory { id, vector }
            }
            (LineOutcome::Duplicate { existing_id }, Some(m)) => {
                s.duplicates += 1;
                map(m.id, existing_id);
                LineOutcome::Duplicate { existing_id }
            }
            (LineOutcome::Memory { id, vector }, None) => {
                s.memories += 1;
                s.vectors += vector as u64;
                s.waiting_for_vector += !vector as u64;
                LineOutcome::Memory { id, vector }
            }
            (LineOutcome::Duplicate { existing_id }, None) => {
                s.duplicates += 1;
                LineOutcome::Duplicate { existing_id }
            }
            (LineOutcome::Session { id, stored }, _) => {
                s.sessions += stored as u64;
                s.sessions_existing += !stored as u64;
                LineOutcome::Session { id, stored }
            }
            (LineOutcome::Error(e), _) => {
                s.errors += 1;
                LineOutcome::Error(at_line(line, e))
            }
            (o, _) => o,
        };
        (self.on_line)(line, &outcome);
    }

    /// Points each superseded memory stored at its replacement's id here.
    fn resolve(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        if !self.ids_sorted {
            self.ids.sort_unstable_by_key(|p| p.0);
        }
        let ids = &self.ids;
        let lookup = |old: i64| ids.binary_search_by_key(&old, |p| p.0).ok().map(|i| ids[i].1);
        for chunk in self.pending.chunks(RESOLVE_BATCH) {
            let found: Vec<(i64, i64)> = chunk.iter().filter_map(|&(id, old)| lookup(old).map(|by| (id, by))).collect();
            self.sum.unresolved_superseded += (chunk.len() - found.len()) as u64;
            self.db.write(|tx| found.iter().try_for_each(|&(id, by)| sql::set_superseded_by(tx, id, by)))?;
        }
        Ok(())
    }
}

/// Reads one line (without its "\n" or "\r\n") into `buf`: `None` at the end of
/// the input, `Some(false)` for a line longer than `max` bytes (read past, not kept).
fn read_line(r: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> std::io::Result<Option<bool>> {
    buf.clear();
    let (mut fits, mut any) = (true, false);
    loop {
        let avail = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            break;
        }
        any = true;
        let newline = avail.iter().position(|&b| b == b'\n');
        let chunk = &avail[..newline.unwrap_or(avail.len())];
        if fits && buf.len() + chunk.len() > max {
            fits = false;
            *buf = Vec::new();
        }
        if fits {
            buf.extend_from_slice(chunk);
        }
        let used = newline.map_or(avail.len(), |i| i + 1);
        r.consume(used);
        if newline.is_some() {
            break;
        }
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    Ok(any.then_some(fits))
}
