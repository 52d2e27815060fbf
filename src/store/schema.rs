//! Schema creation and forward migrations, keyed by `PRAGMA user_version`.
//!
//! Version 1 is the schema of the functional spec (memories, sessions,
//! session_outcomes, memory_tags, tag_meta, memories_fts and the listed indexes)
//! plus: scope columns, a real-world flag, forget bookkeeping, each memory's word
//! set, word count and numbers signature for dedup (indexed), a change stamp
//! `rev` for the in-process search index (indexed), a decay anchor and the
//! indexed time of each memory's next decay step, and a key/value `robotmem_meta` table.
//! Version 2 adds the `embedded` flag, version 3 drops what nothing reads (see
//! [`V3`]), version 4 adds `index_snapshots` ([`V4`]), version 5 the fleet replication log ([`V5`]), version 6 the checksum of a memory's other texts ([`V6`]), version 7 expiry ([`V7`]), version 8 the record of hard-deleted memories ([`V8`]), version 9 the versions a change replaces ([`V9`]). A database with a newer version than [`SCHEMA_VERSION`] is refused,
//! never touched.

use rusqlite::Connection;

use crate::error::{Error, Result, Status};

/// Schema version written by this build.
pub const SCHEMA_VERSION: i32 = 9;

/// `PRAGMA application_id` of robotmem databases ("RMEM").
pub const APPLICATION_ID: i32 = 0x524D_454D;

/// Migrations: entry `i` upgrades version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6, V7, V8, V9];

const V1: &str = r#"
CREATE TABLE memories (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id          TEXT,
    collection          TEXT NOT NULL,
    type                TEXT NOT NULL CHECK (type IN ('fact', 'perception')),
    content             TEXT NOT NULL,
    human_summary       TEXT NOT NULL,
    context             TEXT NOT NULL DEFAULT '{}',
    perception_type     TEXT CHECK (perception_type IS NULL OR perception_type IN
                            ('visual', 'tactile', 'auditory', 'proprioceptive', 'procedural')),
    perception_data     BLOB,
    perception_metadata TEXT,
    category            TEXT NOT NULL,
    confidence          REAL NOT NULL DEFAULT 0.9,
    decay_rate          REAL NOT NULL DEFAULT 0.01,
    status              TEXT NOT NULL DEFAULT 'active'
                            CHECK (status IN ('active', 'superseded', 'invalidated')),
    superseded_by       INTEGER,
    content_hash        TEXT,
    embedding           BLOB,
    access_count        INTEGER NOT NULL DEFAULT 0,
    return_count        INTEGER NOT NULL DEFAULT 0,
    last_accessed       TEXT,
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    scope_files         TEXT NOT NULL DEFAULT '[]',
    scope_entities      TEXT NOT NULL DEFAULT '[]',
    scope_modules       TEXT NOT NULL DEFAULT '[]',
    is_real             INTEGER NOT NULL DEFAULT 0,
    term_count          INTEGER NOT NULL DEFAULT 0,
    terms               TEXT NOT NULL DEFAULT '',
    numbers_sig         TEXT NOT NULL DEFAULT '',
    rev                 INTEGER NOT NULL DEFAULT 0,
    decay_base          REAL,
    decay_next_at       TEXT,
    invalidated_reason  TEXT,
    invalidated_at      TEXT
);
CREATE INDEX idx_mem_collection ON memories(collection);
CREATE INDEX idx_mem_status     ON memories(status);
CREATE INDEX idx_mem_session    ON memories(session_id);
CREATE INDEX idx_mem_type       ON memories(type);
CREATE INDEX idx_mem_hash       ON memories(content_hash, collection) WHERE content_hash IS NOT NULL;
CREATE INDEX idx_mem_dedup      ON memories(collection, numbers_sig, term_count)
    WHERE status = 'active' AND type = 'fact';
CREATE INDEX idx_mem_rev        ON memories(rev);
CREATE INDEX idx_mem_decay      ON memories(decay_next_at) WHERE decay_next_at IS NOT NULL;
CREATE INDEX idx_mem_no_embed   ON memories(collection) WHERE embedding IS NULL AND status = 'active';

CREATE TABLE sessions (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    external_id    TEXT NOT NULL UNIQUE,
    collection     TEXT NOT NULL,
    context        TEXT,
    session_count  INTEGER NOT NULL DEFAULT 1,
    status         TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'ended')),
    client_type    TEXT NOT NULL DEFAULT 'c_api',
    created_at     TEXT NOT NULL,
    ended_at       TEXT
);

CREATE TABLE session_outcomes (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id  TEXT NOT NULL,
    score       REAL,
    created_at  TEXT NOT NULL
);
CREATE INDEX idx_outcomes_session ON session_outcomes(session_id);

CREATE TABLE memory_tags (
    memory_id  INTEGER NOT NULL,
    tag        TEXT NOT NULL,
    source     TEXT NOT NULL DEFAULT 'auto' CHECK (source IN ('auto', 'user')),
    PRIMARY KEY (memory_id, tag)
) WITHOUT ROWID;
CREATE INDEX idx_memory_tags_tag ON memory_tags(tag);

CREATE TABLE tag_meta (
    tag           TEXT PRIMARY KEY,
    parent        TEXT,
    display_name  TEXT
);

CREATE TABLE robotmem_meta (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);

CREATE VIRTUAL TABLE memories_fts USING fts5(
    content, human_summary, scope_files, scope_entities,
    content = '', contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO memories_fts (memories_fts, rank) VALUES ('rank', 'bm25(1.0, 0.5, 0.5, 0.5)');
"#;

const V2: &str = r#"
ALTER TABLE memories ADD COLUMN embedded INTEGER NOT NULL DEFAULT 0;
DROP INDEX IF EXISTS idx_mem_no_embed;
CREATE INDEX idx_mem_unembedded ON memories(id) WHERE embedded = 0 AND status = 'active';
"#;

/// Version 3 cuts what a learn writes (each index an insert touches is one more
/// page in the WAL, so one more page of SD/eMMC wear and of every fsync): a learn
/// appended 21 WAL pages, 7 of them for FTS5, which nothing reads since recall and
/// dedup use the in-process index built from `memories` (see `search::text`).
/// - `memories_fts` is dropped;
/// - the collection, status and type indexes become one index of the active
///   memories by collection (what start_session's count and the word-less recall
///   scan read);
/// - the session index holds only memories that have a session;
/// - the index of memory tags by tag is dropped (nothing looks tags up by name;
///   each tag of a learn touched its own page).
const V3: &str = r#"
DROP TABLE IF EXISTS memories_fts;
DROP INDEX IF EXISTS idx_mem_collection;
DROP INDEX IF EXISTS idx_mem_status;
DROP INDEX IF EXISTS idx_mem_type;
DROP INDEX IF EXISTS idx_mem_session;
DROP INDEX IF EXISTS idx_memory_tags_tag;
CREATE INDEX idx_mem_active  ON memories(collection) WHERE status = 'active';
CREATE INDEX idx_mem_session ON memories(session_id) WHERE session_id IS NOT NULL;
"#;

/// Version 4 keeps snapshots of the in-process indexes (see `search::snapshot`),
/// so opening a file does not rebuild them from every row: one row per index,
/// the `rev` it reflects, the format of the build that wrote it, the bytes.
const V4: &str = r#"
CREATE TABLE index_snapshots (
    name   TEXT PRIMARY KEY,
    rev    INTEGER NOT NULL,
    format TEXT NOT NULL,
    data   BLOB NOT NULL
);
"#;

/// A UUIDv7 (RFC 9562) as SQL: 48 bits of Unix milliseconds (the SQL expression
/// given), version 7, 74 random bits, in SQLite's own functions so every writer
/// (robotmem, an import, a hand-made INSERT) gets one.
macro_rules! uuid7_sql {
    ($ms:literal) => {
        concat!(
            "(SELECT substr(t, 1, 8) || '-' || substr(t, 9, 4) || '-7' || substr(h, 1, 3) || '-' ||
                 substr('89ab', 1 + (abs(random()) % 4), 1) || substr(h, 4, 3) || '-' || substr(h, 7, 12)
              FROM (SELECT printf('%012x', CAST(",
            $ms,
            " AS INTEGER)) AS t, lower(hex(randomblob(9))) AS h))"
        )
    };
}

/// Version 5 is the fleet replication log (see `fleet`):
/// - each memory gets a global id (UUIDv7, from its creation time for existing
///   rows; robotmem's own inserts make it in Rust, a trigger for any other), its origin robot and the robot of its latest version (`''`: this file's
///   own robot, whatever id it syncs under), and a version counter;
/// - `sync_outbox` lists, in commit order, the memories and sessions a local
///   change touched; triggers append to it in the writing transaction, only once
///   the file was claimed by `robotmem sync` (a robot id in `robotmem_meta`), so a
///   file that never syncs does not grow a log;
/// - `sync_remote` maps every memory received from the fleet (its global id) to the
///   local memory holding it (one memory can hold the same fact from several
///   robots), with the version applied, or a tombstone;
/// - `sync_marks`: per robot, the last of its change numbers received;
/// - `sync_applying` holds a row while the fleet's changes are being applied (in
///   their transaction): the update trigger logs only the writes made without it.
const V5: &str = concat!(
    r#"
ALTER TABLE memories ADD COLUMN global_id TEXT;
ALTER TABLE memories ADD COLUMN origin TEXT NOT NULL DEFAULT '';
ALTER TABLE memories ADD COLUMN writer TEXT NOT NULL DEFAULT '';
ALTER TABLE memories ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
UPDATE memories SET global_id = "#,
    uuid7_sql!("coalesce(unixepoch(created_at, 'subsec'), unixepoch('subsec')) * 1000"),
    r#";
CREATE UNIQUE INDEX idx_mem_global ON memories(global_id);

CREATE TABLE sync_outbox (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id   INTEGER,
    session_id  TEXT
);
CREATE TABLE sync_remote (
    global_id  TEXT PRIMARY KEY,
    memory_id  INTEGER,
    origin     TEXT NOT NULL,
    writer     TEXT NOT NULL,
    version    INTEGER NOT NULL,
    deleted    INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX idx_sync_remote_memory ON sync_remote(memory_id) WHERE memory_id IS NOT NULL;
CREATE TABLE sync_marks (
    writer  TEXT PRIMARY KEY,
    seq     INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE sync_applying (
    one  INTEGER PRIMARY KEY CHECK (one = 1)
);
CREATE TRIGGER sync_given_id AFTER INSERT ON memories WHEN new.global_id IS NULL
BEGIN
    UPDATE memories SET global_id = "#,
    uuid7_sql!("coalesce(unixepoch(new.created_at, 'subsec'), unixepoch('subsec')) * 1000"),
    r#" WHERE id = new.id;
END;
CREATE TRIGGER sync_learned AFTER INSERT ON memories
WHEN NOT EXISTS (SELECT 1 FROM sync_applying) AND EXISTS (SELECT 1 FROM robotmem_meta WHERE key = 'sync.robot')
BEGIN
    INSERT INTO sync_outbox (memory_id) VALUES (new.id);
END;
CREATE TRIGGER sync_changed AFTER UPDATE OF content, context, category, status, superseded_by ON memories
WHEN NOT EXISTS (SELECT 1 FROM sync_applying)
    AND (new.content IS NOT old.content OR new.context IS NOT old.context OR new.category IS NOT old.category
         OR new.status IS NOT old.status OR new.superseded_by IS NOT old.superseded_by)
BEGIN
    UPDATE memories SET version = old.version + 1, writer = '' WHERE id = new.id;
    INSERT INTO sync_outbox (memory_id)
        SELECT new.id WHERE EXISTS (SELECT 1 FROM robotmem_meta WHERE key = 'sync.robot');
END;
CREATE TRIGGER sync_session_ended AFTER UPDATE OF status ON sessions
WHEN new.status = 'ended' AND old.status IS NOT 'ended'
BEGIN
    INSERT INTO sync_outbox (session_id)
        SELECT new.external_id WHERE EXISTS (SELECT 1 FROM robotmem_meta WHERE key = 'sync.robot');
END;
"#
);

/// `meta_hash`: checksum of the texts a read returns besides the content (which
/// `content_hash` covers): collection, session id, category, context, creation
/// time (`fingerprint::meta_hash`), written with them; the migration computes it for
/// every stored memory ([`fill_meta_hashes`]).
const V6: &str = "ALTER TABLE memories ADD COLUMN meta_hash TEXT;";

/// Version 7: a memory may expire (`expires_at`, UTC milliseconds as every stored
/// time, so text order is time order; NULL: never). An expired memory keeps its
/// row and status; reads leave it out by comparing with the time of the read.
/// A change of expiry is a change the fleet replicates (the trigger watches it).
const V7: &str = r#"
ALTER TABLE memories ADD COLUMN expires_at TEXT;
CREATE INDEX idx_mem_expiry ON memories(expires_at) WHERE expires_at IS NOT NULL;
DROP TRIGGER IF EXISTS sync_changed;
CREATE TRIGGER sync_changed AFTER UPDATE OF content, context, category, status, superseded_by, expires_at ON memories
WHEN NOT EXISTS (SELECT 1 FROM sync_applying)
    AND (new.content IS NOT old.content OR new.context IS NOT old.context OR new.category IS NOT old.category
         OR new.status IS NOT old.status OR new.superseded_by IS NOT old.superseded_by
         OR new.expires_at IS NOT old.expires_at)
BEGIN
    UPDATE memories SET version = old.version + 1, writer = '' WHERE id = new.id;
    INSERT INTO sync_outbox (memory_id)
        SELECT new.id WHERE EXISTS (SELECT 1 FROM robotmem_meta WHERE key = 'sync.robot');
END;
"#;

/// Version 8: memories can be hard-deleted (budget eviction, purge: see
/// `store::retention`). Each removal is kept as (memory id, `rev`), so the
/// in-process indexes and their stored snapshots, which follow `memories` by
/// `rev`, drop the memory too. The forgotten and superseded memories get an index
/// of their own (eviction takes them before any active one; a learn or a recall
/// never writes it).
const V8: &str = r#"
CREATE TABLE memory_removals (
    id   INTEGER PRIMARY KEY,
    rev  INTEGER NOT NULL
);
CREATE INDEX idx_removals_rev ON memory_removals(rev);
CREATE INDEX idx_mem_inactive ON memories(collection) WHERE status != 'active';
"#;

/// Version 9: history (see `store::history`).
/// - `stored_at`: when this file got the memory, where that is not its creation
///   time (an import keeps the original creation time in `created_at`); NULL:
///   stored when created (every learn, a memory received from the fleet, which
///   is created here when it arrives, and every row older than version 9);
/// - `memory_versions`: every change of what a memory says or is (content,
///   context, category, status, what superseded it, expiry) keeps the version it
///   replaces, written by a trigger in the changing transaction, so no writer
///   (robotmem, the fleet's merge, an import, hand-made SQL) can skip it: the
///   replaced row's text and everything derived from it, when it was replaced
///   (SQLite's clock, UTC milliseconds), what replaced it and which robot;
/// - `memory_change_cause`: the one row robotmem writes just before a change to
///   say what it is (`update`, `forget`, `consolidation`, `expiry`, `import`);
///   the trigger takes it and removes it. A change while the fleet's changes are
///   applied is `fleet`; a change with no cause given, `sql`.
///
/// A hard-deleted memory (eviction, purge) takes its versions with it.
const V9: &str = r#"
ALTER TABLE memories ADD COLUMN stored_at TEXT;
CREATE TABLE memory_versions (
    seq                 INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id           INTEGER NOT NULL,
    version             INTEGER NOT NULL,
    writer              TEXT NOT NULL,
    content             TEXT NOT NULL,
    human_summary       TEXT NOT NULL,
    context             TEXT NOT NULL,
    category            TEXT NOT NULL,
    confidence          REAL NOT NULL,
    status              TEXT NOT NULL,
    superseded_by       INTEGER,
    invalidated_reason  TEXT,
    invalidated_at      TEXT,
    expires_at          TEXT,
    content_hash        TEXT,
    meta_hash           TEXT,
    is_real             INTEGER NOT NULL,
    term_count          INTEGER NOT NULL,
    terms               TEXT NOT NULL,
    numbers_sig         TEXT NOT NULL,
    scope_files         TEXT NOT NULL,
    scope_entities      TEXT NOT NULL,
    scope_modules       TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    replaced_at         TEXT NOT NULL,
    cause               TEXT NOT NULL,
    cause_writer        TEXT NOT NULL
);
CREATE INDEX idx_versions_memory ON memory_versions(memory_id, replaced_at);
CREATE INDEX idx_versions_replaced ON memory_versions(replaced_at);
CREATE TABLE memory_change_cause (
    one    INTEGER PRIMARY KEY CHECK (one = 1),
    cause  TEXT NOT NULL
);
CREATE TRIGGER memory_versioned AFTER UPDATE OF content, context, category, status, superseded_by, expires_at
    ON memories
WHEN new.content IS NOT old.content OR new.context IS NOT old.context OR new.category IS NOT old.category
    OR new.status IS NOT old.status OR new.superseded_by IS NOT old.superseded_by
    OR new.expires_at IS NOT old.expires_at
BEGIN
    INSERT INTO memory_versions (memory_id, version, writer, content, human_summary, context, category,
        confidence, status, superseded_by, invalidated_reason, invalidated_at, expires_at, content_hash,
        meta_hash, is_real, term_count, terms, numbers_sig, scope_files, scope_entities, scope_modules,
        updated_at, replaced_at, cause, cause_writer)
    VALUES (old.id, old.version, old.writer, old.content, old.human_summary, old.context, old.category,
        old.confidence, old.status, old.superseded_by, old.invalidated_reason, old.invalidated_at,
        old.expires_at, old.content_hash, old.meta_hash, old.is_real, old.term_count, old.terms,
        old.numbers_sig, old.scope_files, old.scope_entities, old.scope_modules, old.updated_at,
        strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
        CASE WHEN EXISTS (SELECT 1 FROM sync_applying) THEN 'fleet'
             ELSE coalesce((SELECT cause FROM memory_change_cause), 'sql') END,
        CASE WHEN EXISTS (SELECT 1 FROM sync_applying) THEN new.writer ELSE '' END);
    DELETE FROM memory_change_cause;
END;
CREATE TRIGGER memory_versions_removed AFTER DELETE ON memories
BEGIN
    DELETE FROM memory_versions WHERE memory_id = old.id;
END;
"#;

/// Computes `meta_hash` of every memory that has none (schema 6). The sync
/// triggers watch other columns, so this logs no fleet change.
fn fill_meta_hashes(conn: &Connection) -> Result<()> {
    let mut read = conn.prepare(
        "SELECT id, collection, session_id, category, context, created_at FROM memories WHERE meta_hash IS NULL",
    )?;
    let rows = read
        .query_map([], |r| {
            let session: Option<String> = r.get(2)?;
            let (collection, category, context, created): (String, String, String, String) =
                (r.get(1)?, r.get(3)?, r.get(4)?, r.get(5)?);
            Ok((
                r.get::<_, i64>(0)?,
                crate::fingerprint::meta_hash(&collection, session.as_deref(), &category, &context, &created),
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut write = conn.prepare("UPDATE memories SET meta_hash = ?2 WHERE id = ?1")?;
    for (id, hash) in rows {
        write.execute(rusqlite::params![id, hash])?;
    }
    Ok(())
}

/// Brings the database at `conn` to [`SCHEMA_VERSION`]. Must run inside a write
/// transaction (BEGIN IMMEDIATE) so concurrent openers serialise.
pub fn migrate(conn: &Connection) -> Result<()> {
    let h = header(conn)?;
    check_openable(&h)?;
    let version = h.user_version;
    if version == 0 {
        conn.execute_batch(&format!("PRAGMA application_id = {APPLICATION_ID};"))?;
    }
    for (v, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        conn.execute_batch(sql)?;
        if v + 1 == 6 {
            fill_meta_hashes(conn)?;
        }
        conn.execute_batch(&format!("PRAGMA user_version = {};", v + 1))?;
    }
    Ok(())
}

/// What an opener needs to know about a file, read in one statement (one
/// snapshot, so a concurrent first-time migration is seen whole or not at all).
pub struct Header {
    pub user_version: i32,
    pub application_id: i32,
    pub tables: i64,
}

pub fn header(conn: &Connection) -> Result<Header> {
    Ok(conn.query_row(
        "SELECT (SELECT user_version FROM pragma_user_version()),
                (SELECT application_id FROM pragma_application_id()),
                (SELECT count(*) FROM sqlite_schema WHERE type = 'table')",
        [],
        |r| Ok(Header { user_version: r.get(0)?, application_id: r.get(1)?, tables: r.get(2)? }),
    )?)
}

/// Read-only checks that a file may be opened (and migrated): not from a newer
/// robotmem, not another application's database.
pub fn check_openable(h: &Header) -> Result<()> {
    if h.user_version > SCHEMA_VERSION {
        return Err(Error::new(
            Status::SchemaTooNew,
            format!(
                "database schema version {} is newer than this robotmem supports \
                 ({SCHEMA_VERSION}); upgrade robotmem (the file was not modified)",
                h.user_version
            ),
        ));
    }
    let ours = h.application_id == APPLICATION_ID;
    if !ours && (h.application_id != 0 || h.tables > 0) {
        return Err(Error::new(
            Status::Corrupt,
            "file is an SQLite database of another application, not a robotmem database \
             (the file was not modified)",
        ));
    }
    Ok(())
}

/// For a read-only open, which cannot create or upgrade: the file must already
/// hold a robotmem database of this schema version.
pub fn check_readable(h: &Header) -> Result<()> {
    if h.user_version == 0 && h.tables == 0 {
        return Err(Error::new(
            Status::Corrupt,
            "the file is empty: not a robotmem database yet (a read-only open does not create one)",
        ));
    }
    if h.user_version < SCHEMA_VERSION {
        return Err(Error::new(
            Status::ReadOnly,
            format!(
                "the database has schema version {}, older than this robotmem's ({SCHEMA_VERSION}): open it once \
                 read-write to upgrade it (the read-only open changed nothing)",
                h.user_version
            ),
        ));
    }
    Ok(())
}

/// Whether `tag_meta` holds exactly the tag tree of this build.
pub fn tag_meta_in_sync(conn: &Connection) -> Result<bool> {
    let n: i64 = conn.query_row("SELECT count(*) FROM tag_meta", [], |r| r.get(0))?;
    Ok(n == crate::classify::TAG_TREE.len() as i64)
}

/// Replaces `tag_meta` with the tag tree (tag, parent, display name). Runs in a
/// write transaction.
pub fn sync_tag_meta(conn: &Connection) -> Result<()> {
    conn.execute("DELETE FROM tag_meta", [])?;
    let mut st = conn.prepare("INSERT INTO tag_meta (tag, parent, display_name) VALUES (?1, ?2, ?3)")?;
    for (tag, parent, name) in crate::classify::TAG_TREE {
        st.execute(rusqlite::params![tag, parent, name])?;
    }
    Ok(())
}

/// The index a hybrid recall reads its candidates' conditions from (collection,
/// status, confidence, expiry, and the real-world flag it scores with) without
/// reading their rows: at 100k memories a row is one random page of a file of
/// hundreds of MB, an entry of this index one of a few MB, which stays cached.
/// Not part of the versioned schema: SQLite keeps it up to date for any writer,
/// so older robotmem versions open a file that has it; a file without it gets it
/// at its next read-write open ([`ensure_recall_index`]), and recalls read the
/// rows while it is missing (a read-only handle on such a file).
pub const RECALL_INDEX: &str = "idx_mem_recall";

/// Creates [`RECALL_INDEX`] if the file lacks it (in a write transaction).
pub fn ensure_recall_index(conn: &Connection) -> Result<()> {
    conn.execute_batch(
        "CREATE INDEX IF NOT EXISTS idx_mem_recall
             ON memories(id, collection, status, confidence, expires_at, is_real) WHERE status = 'active';",
    )?;
    Ok(())
}

/// Whether the file holds [`RECALL_INDEX`] (in the caller's transaction).
pub fn has_recall_index(conn: &Connection) -> Result<bool> {
    let n: i64 = conn
        .prepare_cached("SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = ?1")?
        .query_row([RECALL_INDEX], |r| r.get(0))?;
    Ok(n > 0)
}
