//! Options for opening a database.

use std::path::PathBuf;

use crate::clock::Clock;
use crate::error::{Error, Result};
pub use crate::key::Key;
use crate::limits;

/// How hard a commit works to survive a power cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// `synchronous=NORMAL` in WAL mode: a commit is atomic and the database is
    /// never corrupted, but the last transactions before a power cut may be rolled
    /// back (a killed *process* loses nothing).
    Normal,
    /// `synchronous=FULL`: every acknowledged commit is on stable storage before
    /// the call returns (one fsync per write).
    Full,
}

/// Largest `busy_timeout_ms` (SQLite takes the timeout as a C `int`).
pub const MAX_BUSY_TIMEOUT_MS: u32 = i32::MAX as u32;

/// Where the database lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// `~/.robotmem/memory.db` (directory created 0700, file 0600).
    Default,
    /// A file path; its directory must exist. The file is created 0600 if missing.
    Path(PathBuf),
    /// A private in-memory database, gone when the handle closes.
    InMemory,
}

/// Options for [`crate::Db::open`]. `OpenOptions::default()` gives the documented defaults.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    pub location: Location,
    /// Collection used when a call names none (blank counts as none). Default `"default"`.
    pub default_collection: String,
    /// How long a call waits for another process's write lock, in ms, at most
    /// [`MAX_BUSY_TIMEOUT_MS`]. Default 5000.
    pub busy_timeout_ms: u32,
    /// Default [`Durability::Full`].
    pub durability: Durability,
    /// RRF constant k of BM25-only ranking (`1/(k + rank + 1)`, which the
    /// real-world boost multiplies). Default 60.
    pub rrf_k: f64,
    /// Hybrid fusion settings overriding the model's (`robotmem-model.json`
    /// "fusion"); `None`: the model's. See `search::recall::fusion`.
    pub fusion: Option<crate::embed::FusionConfig>,
    /// Per-day confidence decay rate given to new memories. Default 0.01.
    pub decay_rate: f64,
    /// Do the one-time work during open instead of at the first call that needs it:
    /// load the Chinese segmenter's dictionary (~100 ms, ~30 MB), load the
    /// in-process search index (from the snapshot the last close stored, ~0.5 µs
    /// per memory, plus the memories changed since; without one, built from every
    /// memory, a few µs each) and load the vector index (~5 µs per stored vector).
    /// With a model the indexes are loaded during open anyway, while the model
    /// loads on a thread of its own (open then takes the longer of the two).
    /// Default false.
    pub preload: bool,
    /// Largest database file, in bytes (`None`: no limit but the disk). A write that
    /// would grow the file past it fails with [`crate::Status::Full`] and changes
    /// nothing; the database stays usable. A ceiling, not an eviction budget
    /// (that is `max_memories`); `Db::purge` gives space back. Default `None`.
    pub max_db_bytes: Option<u64>,
    /// Run SQLite's `quick_check` during open (reads the whole file, ~10 ms per
    /// 10k memories, with the frames of its `-wal`) and refuse a damaged file with
    /// [`crate::Status::Corrupt`], leaving the file, its `-wal` and `-shm` byte for
    /// byte as they were (unless another process has it open: then the check runs
    /// on a shared connection, which may update the `-shm` index). Without it,
    /// damage inside the file is reported by the first call that reads it.
    /// Default false.
    pub verify: bool,
    /// Compute embeddings when a model is available (see `model_dir`). `false`:
    /// BM25 only, whatever the environment says. Default true.
    pub embeddings: bool,
    /// Embedding model directory (`model.onnx`, `tokenizer.json`,
    /// `robotmem-model.json`, and `model.data` for weights stored as ONNX external
    /// data). `None`: `$ROBOTMEM_MODEL_DIR`; unset too: BM25 only.
    pub model_dir: Option<PathBuf>,
    /// ONNX Runtime shared library. `None`: `$ROBOTMEM_ORT_LIBRARY`, else
    /// `libonnxruntime.so` next to librobotmem. Only the first library loaded in a
    /// process is used (ONNX Runtime allows one per process).
    pub ort_library: Option<PathBuf>,
    /// ONNX Runtime sessions of the handle: texts the model embeds at once.
    /// learn_batch, reembed and import spread their texts over them, one thread
    /// each; concurrent learns and recalls share them: a call that finds every
    /// session busy makes the next one or waits for one, and the texts waiting
    /// run together in one model run when the model batches (`max_batch` other
    /// than 1; see `embed::sessions`). Sessions beyond the first are made when
    /// first needed (~80 ms and ~15–30 MiB each: the weights are mapped once and
    /// shared). A session runs on one thread: a second intra-op thread that does
    /// not spin made one text slower, not faster. Default 2.
    pub embed_threads: u32,
    /// Texts per model run in batch learn and re-embed. Default 32; the model's
    /// `max_batch` (1 for the default model) caps it.
    pub embed_batch: u32,
    /// Cosine similarity above which a new fact with the same numbers and outcome
    /// as an existing one is reported as its duplicate. Default 0.85; a value
    /// above 1 turns the cosine layer off.
    pub cosine_dedup: f64,
    /// Open the file read-only: it must exist and hold a robotmem database of this
    /// schema version, and nothing is written to it — no schema upgrade, no access
    /// counts or recall statistics, no index snapshots, no lock file, no change of
    /// permissions. Every write returns [`crate::Status::ReadOnly`]. Works on a file
    /// this process may not write (mode 0444, a read-only mount). SQLite may still
    /// make its empty `-wal` and `-shm` beside a file left without them, when the
    /// directory is writable. Not for in-memory databases. Default false.
    pub read_only: bool,
    /// Time to live, in seconds, of the memories learned or perceived in a
    /// collection without `ttl_seconds` / `expires_at` of their own: collection
    /// name → seconds (> 0, at most 100 years); the key `"*"` applies to every
    /// collection not named. Empty (the default): no memory expires unless asked.
    pub default_ttl: std::collections::BTreeMap<String, f64>,
    /// Most memories the file holds, whatever their status (forgotten and expired
    /// ones take space too), at most [`MAX_BUDGET`]; 0: no limit. A learn or
    /// perception that would pass it first hard-deletes (evicts) others in the
    /// order of `store::retention::victims` (expired, then forgotten or superseded,
    /// then the active ones of lowest confidence × recency × access), in its own
    /// transaction, and reports their ids; see README "Retention". Default 0.
    pub max_memories: u64,
    /// The same per collection: collection name → most memories (1 to
    /// [`MAX_BUDGET`]); the key `"*"` applies to each collection not named.
    /// Empty (the default): no collection limit.
    pub collection_max_memories: std::collections::BTreeMap<String, u64>,
    /// Let eviction remove memories of the protected categories (constraint,
    /// gotcha, postmortem). Default false: they are never evicted, and a write
    /// whose budget only they could make room for fails with
    /// [`crate::Status::OverBudget`].
    pub evict_protected: bool,
    /// Encryption key of the file (builds with the `encryption` feature; another
    /// build refuses a key with [`crate::Status::InvalidArgument`]): a new file is
    /// created encrypted, an existing one must have been made with this key, else
    /// the open fails with [`crate::Status::Key`] and the file is not modified.
    /// At most one of `key` and `key_file`. Not for in-memory databases. Default none.
    pub key: Option<Key>,
    /// A file holding the key ([`Key::from_file`]: 32 bytes or 64 hex digits,
    /// readable by its owner only). Default none.
    pub key_file: Option<PathBuf>,
    /// Where the handle reads the time ([`Clock`]): every time it stores or
    /// compares (learned, updated, accessed, expiry, decay, eviction's recency,
    /// purge ages, history, "as of"). Default the system clock.
    pub clock: Clock,
    /// Query texts whose vectors the handle keeps, so that a recall of a text asked
    /// before does not run the model again (`embed::cache`; about 2 KiB each with
    /// the default model); 0 keeps none. At most [`MAX_QUERY_CACHE`]. Default 256.
    /// Rust only: the C and C++ APIs use the default.
    pub query_cache: usize,
}

/// Largest [`OpenOptions::query_cache`].
pub const MAX_QUERY_CACHE: usize = 65_536;

/// Largest memory budget (2^53: exact in JSON and in a double).
pub const MAX_BUDGET: u64 = 9_007_199_254_740_992;

/// Parses a per-collection budget JSON object (`{"obstacles": 200, "*": 1000}`),
/// for [`OpenOptions::collection_max_memories`]; `field` names it in errors.
pub fn parse_collection_budgets(field: &str, json: &str) -> Result<std::collections::BTreeMap<String, u64>> {
    serde_json::from_str(json).map_err(|e| {
        Error::invalid(format!("{field} must be a JSON object of collection name -> whole number of memories: {e}"))
    })
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            location: Location::Default,
            default_collection: "default".into(),
            busy_timeout_ms: 5000,
            durability: Durability::Full,
            rrf_k: 60.0,
            fusion: None,
            decay_rate: 0.01,
            preload: false,
            max_db_bytes: None,
            verify: false,
            embeddings: true,
            model_dir: None,
            ort_library: None,
            embed_threads: 2,
            embed_batch: 32,
            cosine_dedup: 0.85,
            read_only: false,
            default_ttl: Default::default(),
            max_memories: 0,
            collection_max_memories: Default::default(),
            evict_protected: false,
            key: None,
            key_file: None,
            clock: Clock::system(),
            query_cache: 256,
        }
    }
}

impl OpenOptions {
    /// Options for a file at `path` (or `":memory:"`), other fields default.
    pub fn path(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let location = if path.as_os_str() == ":memory:" { Location::InMemory } else { Location::Path(path) };
        OpenOptions { location, ..Default::default() }
    }

    /// The embedding settings of these options.
    pub fn embed_settings(&self) -> crate::embed::EmbedSettings {
        crate::embed::EmbedSettings {
            model_dir: self.model_dir.clone(),
            runtime_path: self.ort_library.clone(),
            threads: self.embed_threads.max(1) as usize,
            batch_size: self.embed_batch.max(1) as usize,
        }
    }

    /// The key of these options: `key`, or the key in `key_file`.
    pub fn resolved_key(&self) -> Result<Option<Key>> {
        match (&self.key, &self.key_file) {
            (Some(k), _) => Ok(Some(k.clone())),
            (None, Some(p)) => Key::from_file(p).map(Some),
            (None, None) => Ok(None),
        }
    }

    /// In-memory database, other fields default.
    pub fn in_memory() -> Self {
        OpenOptions { location: Location::InMemory, ..Default::default() }
    }

    /// The default time to live of new memories in `collection` (see `default_ttl`).
    pub fn ttl_for(&self, collection: &str) -> Option<f64> {
        self.default_ttl.get(collection).or_else(|| self.default_ttl.get("*")).copied()
    }

    /// The memory budget of `collection` (see `collection_max_memories`), if any.
    pub fn budget_for(&self, collection: &str) -> Option<u64> {
        self.collection_max_memories.get(collection).or_else(|| self.collection_max_memories.get("*")).copied()
    }

    /// Checks every field; the error names the field, its value and the range.
    pub fn validate(&self) -> Result<()> {
        if self.query_cache > MAX_QUERY_CACHE {
            return Err(Error::invalid(format!(
                "query_cache {} is out of range 0-{MAX_QUERY_CACHE} (query texts)",
                self.query_cache
            )));
        }
        if self.busy_timeout_ms > MAX_BUSY_TIMEOUT_MS {
            return Err(Error::invalid(format!(
                "busy_timeout_ms {} is out of range 0-{MAX_BUSY_TIMEOUT_MS} (milliseconds)",
                self.busy_timeout_ms
            )));
        }
        let non_negative = |field: &str, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(Error::invalid(format!("{field} must be a finite number >= 0 (got {})", limits::show_f64(v))))
            }
        };
        non_negative("rrf_k", self.rrf_k)?;
        if self.fusion.is_some_and(|f| !f.is_valid()) {
            return Err(Error::invalid(
                "fusion: lexical_weight must be in 0..=1 and -1 <= cosine_floor < cosine_ceiling <= 1",
            ));
        }
        non_negative("cosine_dedup", self.cosine_dedup)?;
        limits::unit_range("decay_rate", self.decay_rate, 0.0, 1.0)?;
        for (field, v, max) in [("embed_threads", self.embed_threads, 64), ("embed_batch", self.embed_batch, 1024)] {
            if !(1..=max).contains(&v) {
                return Err(Error::invalid(format!("{field} {v} is out of range 1-{max}")));
            }
        }
        for (c, &s) in &self.default_ttl {
            if !(s.is_finite() && s > 0.0 && s <= limits::MAX_TTL_SECONDS) {
                return Err(Error::invalid(format!(
                    "default_ttl[{c:?}] must be a number of seconds > 0 and at most 100 years (got {})",
                    limits::show_f64(s)
                )));
            }
        }
        if self.max_memories > MAX_BUDGET {
            return Err(Error::invalid(format!(
                "max_memories {} is out of range 0-{MAX_BUDGET} (0: no limit)",
                self.max_memories
            )));
        }
        for (c, &n) in &self.collection_max_memories {
            if !(1..=MAX_BUDGET).contains(&n) {
                return Err(Error::invalid(format!(
                    "collection_max_memories[{c:?}] {n} is out of range 1-{MAX_BUDGET}"
                )));
            }
            if c != "*" && (c.trim() != c || limits::collection(Some(c), "").is_err() || c.is_empty()) {
                return Err(Error::invalid(format!(
                    "collection_max_memories: {c:?} is not a collection name (or \"*\" for every other collection)"
                )));
            }
        }
        if self.key.is_some() && self.key_file.is_some() {
            return Err(Error::invalid("key and key_file: give one of them, not both"));
        }
        if (self.key.is_some() || self.key_file.is_some()) && self.location == Location::InMemory {
            return Err(Error::invalid("key: an in-memory database is not stored, so it cannot be encrypted"));
        }
        if self.read_only && self.location == Location::InMemory {
            return Err(Error::invalid("read_only: an in-memory database cannot be opened read-only"));
        }
        if self.default_collection.trim().is_empty() {
            return Err(Error::invalid("default_collection must not be blank"));
        }
        limits::collection(Some(&self.default_collection), "")
            .map_err(|e| Error::invalid(format!("default_{}", e.message)))?;
        Ok(())
    }
}
