//! Looking into a file: lists with filters (one page at a time), totals, sessions
//! and a health check — what the `robotmem` command and its web console show.

use std::path::Path;

use super::touches::{RECALLS_KEY, ZERO_HIT_KEY};
use super::Db;
use crate::error::{Error, Result};
use crate::limits;
use crate::store::{browse, schema, vectors};
use crate::types::*;

/// Largest page of a list.
const MAX_PAGE: u32 = 500;
/// Largest offset of a list (deeper pages: narrow the filters).
const MAX_OFFSET: u64 = 10_000_000;
/// A write-ahead log larger than this is reported by `doctor`.
const WAL_WARN_BYTES: u64 = 64 << 20;

fn page(offset: u64, limit: u32) -> Result<()> {
    if limit == 0 || limit > MAX_PAGE {
        return Err(Error::invalid(format!("limit must be in 1..={MAX_PAGE} (got {limit})")));
    }
    if offset > MAX_OFFSET {
        return Err(Error::invalid(format!("offset must be at most {MAX_OFFSET} (got {offset})")));
    }
    Ok(())
}

/// Sizes of the database file and its write-ahead log (0 when absent or in memory).
fn file_sizes(path: Option<&Path>) -> (u64, u64) {
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    match path {
        Some(p) => {
            let mut wal = p.as_os_str().to_owned();
            wal.push("-wal");
            (size(p), size(Path::new(&wal)))
        }
        None => (0, 0),
    }
}

fn check(name: &'static str, ok: bool, detail: String, fix: &str) -> DoctorCheck {
    DoctorCheck { name, ok, detail, fix: if ok { String::new() } else { fix.to_string() } }
}

impl Db {
    /// Memories passing the filters, one page, newest (or oldest) first, and how many pass.
    pub fn list(&self, req: &ListRequest) -> Result<MemoryPage> {
        page(req.offset, req.limit)?;
        let collection = match req.collection.map(str::trim) {
            None | Some("") => None,
            Some(c) => Some(limits::collection(Some(c), "")?),
        };
        let session = limits::optional_session(req.session_id)?;
        let category =
            req.category.map(|c| limits::required_text("category", c, 1, limits::MAX_NAME_CHARS)).transpose()?;
        limits::unit_range("min_confidence", req.min_confidence, 0.0, 1.0)?;
        let since = match req.days {
            None => None,
            Some(d) if (1..=36_500).contains(&d) => {
                Some(crate::clock::stamp(self.opts.clock.now() - chrono::Duration::days(i64::from(d))))
            }
            Some(d) => return Err(Error::invalid(format!("days must be in 1..=36500 (got {d})"))),
        };
        let req = ListRequest { category, ..*req };
        let mut page = self.store.read(|c| browse::list(c, &req, collection, session, since.as_deref()))?;
        page.memories = page.memories.into_iter().map(|m| self.as_of_fixed(m)).collect();
        Ok(page)
    }

    /// Totals of the file: memories by status, type, category, perception type and
    /// collection; learned per day; confidence histogram; sessions; recalls; sizes.
    pub fn stats(&self) -> Result<Stats> {
        let mut s = self.store.read(|c| {
            let mut s = browse::stats(c)?;
            s.recalls = browse::meta_count(c, RECALLS_KEY)?;
            s.zero_hit_recalls = browse::meta_count(c, ZERO_HIT_KEY)?;
            Ok(s)
        })?;
        let pending = self.touches.lock().counts();
        s.recalls += pending.0;
        s.zero_hit_recalls += pending.1;
        (s.db_bytes, s.wal_bytes) = file_sizes(self.store.path());
        Ok(s)
    }

    /// The newest memories of failures (a lesson category — postmortem, gotcha,
    /// root_cause — or a context with `task.success` false), in every collection,
    /// among the newest `window` memories (1–1,000,000; 10,000 is the console's).
    pub fn recent_failures(&self, n: u32, window: i64) -> Result<Vec<Memory>> {
        if !(1..=100).contains(&n) {
            return Err(Error::invalid(format!("n must be in 1..=100 (got {n})")));
        }
        if !(1..=1_000_000).contains(&window) {
            return Err(Error::invalid(format!("window must be in 1..=1000000 (got {window})")));
        }
        self.store.read(|c| browse::recent_failures(c, n, window))
    }

    /// Collections that hold active memories, with their counts, by name.
    pub fn collections(&self) -> Result<Vec<(String, i64)>> {
        self.store.read(browse::active_collections)
    }

    /// Sessions, newest first, with their memory counts and latest outcomes.
    pub fn sessions(&self, offset: u64, limit: u32) -> Result<SessionPage> {
        page(offset, limit)?;
        self.store.read(|c| browse::sessions(c, offset, limit))
    }

    /// Checks the file and the handle: SQLite's quick_check (`full`: the slower
    /// integrity_check, plus every memory's checksum), schema version, the
    /// in-process text and vector indexes against the memories table, the model
    /// against the stored vectors, memories waiting for a vector, the write-ahead
    /// log's size, and the zero-hit recall rate. Each finding says what to do.
    pub fn doctor(&self, full: bool) -> Result<DoctorReport> {
        let (db_bytes, wal_bytes) = file_sizes(self.store.path());
        let status = self.embedding_status()?;
        let stats = self.stats()?;
        let mut checks = Vec::new();
        let report = self.store.read(|c| {
            let problems = browse::check_file(c, full)?;
            checks.push(check(
                if full { "integrity_check" } else { "quick_check" },
                problems.is_empty(),
                if problems.is_empty() { "ok".into() } else { problems.join("; ") },
                "the file is damaged: copy it aside, then restore a backup or `robotmem export` what still reads and import it into a new file",
            ));
            if full {
                let (bad, read) = browse::damaged(c, 20)?;
                checks.push(check(
                    "checksums",
                    bad.is_empty(),
                    if bad.is_empty() { format!("{read} memories match their checksums") } else { format!("damaged memories: {bad:?}") },
                    "forget the damaged memories (`robotmem forget ID --reason damaged`) or restore a backup",
                ));
            }
            let version = schema::header(c)?.user_version;
            checks.push(check(
                "schema",
                version == schema::SCHEMA_VERSION,
                format!("version {version} (this robotmem: {})", schema::SCHEMA_VERSION),
                "open the file once with this robotmem (it migrates) or upgrade robotmem",
            ));
            self.index.sync(c)?;
            let (active, embedded) = browse::active_and_embedded(c)?;
            checks.push(check(
                "text index",
                self.index.len() as i64 == active,
                format!("{} of {active} active memories indexed", self.index.len()),
                "delete the stored copies of the indexes (sqlite3 FILE 'DELETE FROM index_snapshots') and reopen \
                 the file: the index is then rebuilt from the memories table; if it persists, report a bug",
            ));
            if self.sync_vectors(c)? {
                let stored: i64 = c.query_row("SELECT count(*) FROM memories WHERE embedded = 1", [], |r| r.get(0))?;
                let table: i64 = if vectors::table_exists(c)? { c.query_row("SELECT count(*) FROM memory_vec", [], |r| r.get(0))? } else { 0 };
                checks.push(check(
                    "vector index",
                    stored == table && self.vindex.len() as i64 == table,
                    format!("{table} stored vectors, {stored} memories marked embedded, {} in the in-process index ({embedded} active)", self.vindex.len()),
                    "run `robotmem reembed` (it rebuilds missing vectors); if it persists, report a bug",
                ));
            }
            Ok(version)
        })?;
        checks.push(check(
            "model",
            status.state != EmbeddingState::ModelMismatch,
            match (&status.model, &status.stored_model) {
                (Some(m), Some(s)) => format!("loaded {m}, stored vectors {s} ({})", status.state.as_str()),
                (Some(m), None) => format!("loaded {m}, no stored vectors yet"),
                (None, s) => {
                    format!("no model loaded ({}); stored vectors {}", status.reason, s.as_deref().unwrap_or("none"))
                }
            },
            "run `robotmem reembed` with the model you want (it replaces the other model's vectors)",
        ));
        checks.push(check(
            "pending vectors",
            status.state != EmbeddingState::Ready || status.pending == 0,
            format!("{} active memories without a vector", status.pending),
            "run `robotmem reembed`",
        ));
        checks.push(check(
            "write-ahead log",
            wal_bytes <= WAL_WARN_BYTES,
            format!("{wal_bytes} bytes"),
            "a reader holds the log open: close long-lived handles (or reopen them) so it can be copied back",
        ));
        checks.push(DoctorCheck {
            name: "size",
            ok: true,
            detail: format!("{} memories ({} active) in {db_bytes} bytes", stats.memories, stats.active),
            fix: String::new(),
        });
        let rate = if stats.recalls > 0 { stats.zero_hit_recalls as f64 / stats.recalls as f64 } else { 0.0 };
        checks.push(DoctorCheck {
            name: "zero-hit recalls",
            ok: true,
            detail: format!(
                "{} of {} recalls matched no memory ({:.1} %)",
                stats.zero_hit_recalls,
                stats.recalls,
                rate * 100.0
            ),
            fix: String::new(),
        });
        Ok(DoctorReport { checks, schema_version: report, memories: stats.memories, db_bytes, wal_bytes })
    }
}
