//! The database handle: `rm_db`, its open options, rm_open / rm_close / rm_flush,
//! and the library-level functions (version, status names, last error, string free).

use std::collections::HashMap;
use std::ffi::{c_char, c_void, CString};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use super::args::{opt_str, out_ptr};
use super::guard::{guard, guard_void, guard_with, last_error_ptr, rm_status};
use crate::error::{Error, Status};
use crate::{Db, Durability, Key, OpenOptions};

/// Opaque database handle. Thread-safe: one handle may be used by many threads
/// at once; calls are synchronised internally.
pub struct rm_db {
    _private: [u8; 0],
}

// ---------------------------------------------------------------------------
// Handle registry.

static NEXT_HANDLE: AtomicUsize = AtomicUsize::new(0x1000);

fn registry() -> &'static RwLock<HashMap<usize, Arc<Db>>> {
    static R: std::sync::OnceLock<RwLock<HashMap<usize, Arc<Db>>>> = std::sync::OnceLock::new();
    R.get_or_init(|| RwLock::new(HashMap::new()))
}

/// Resolves a handle to its database (kept alive for the duration of the call).
pub(crate) fn db(handle: *mut rm_db) -> Result<Arc<Db>, Error> {
    if handle.is_null() {
        return Err(Error::invalid("db is NULL"));
    }
    registry()
        .read()
        .get(&(handle as usize))
        .cloned()
        .ok_or_else(|| Error::new(Status::Closed, "db handle is closed or was not returned by rm_open()"))
}

// ---------------------------------------------------------------------------
// Opening and closing.

/// How hard a commit works to survive a power cut.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum rm_durability {
    /// fsync on every commit: an acknowledged write survives a power cut (default).
    RM_DURABILITY_FULL = 0,
    /// No fsync per commit (WAL, synchronous=NORMAL): never corrupt, but the last
    /// commits before a power cut may be lost; a killed process loses nothing.
    RM_DURABILITY_NORMAL = 1,
}

/// Options for rm_open(). Initialise with rm_open_options_init(), then set fields.
/// While the major version is 0, option structs may grow in a minor release; the
/// SONAME (librobotmem.so.0.<minor>) changes with it, so a program always runs
/// against the layout it was compiled with.
#[repr(C)]
pub struct rm_open_options {
    /// Database file (UTF-8), always a plain path: "file:x.db?mode=ro" is the file of
    /// that name, never an SQLite URI. NULL: ~/.robotmem/memory.db (directory made
    /// 0700 and the file 0600, also when they existed with wider permissions).
    /// ":memory:": a private in-memory database. A new file is created with mode 0600.
    pub path: *const c_char,
    /// Collection used when a call passes NULL or a blank collection. NULL: "default".
    pub default_collection: *const c_char,
    /// Milliseconds to wait for another process's write lock, 0–2147483647
    /// (INT32_MAX, about 24.8 days). Default 5000.
    pub busy_timeout_ms: u32,
    /// Default RM_DURABILITY_FULL.
    pub durability: rm_durability,
    /// RRF constant k of BM25-only ranking (1/(k + rank + 1), which the real-world
    /// boost multiplies); hybrid recall fuses by score (README). Default 60.
    pub rrf_k: f64,
    /// Per-day confidence decay given to new memories, 0–1. Default 0.01.
    pub decay_rate: f64,
    /// Do the one-time work in rm_open() instead of at the first call that needs it:
    /// load the Chinese segmenter (~100 ms), load the in-memory search index (from
    /// the copy rm_close() stored in the file, ~0.5 µs per memory plus the memories
    /// changed since; without one, built at a few µs per stored memory) and load the
    /// vector index (~5 µs per stored vector). With a model the indexes are loaded
    /// during rm_open anyway, while the model loads on a thread of its own. Default
    /// false.
    pub preload: bool,
    /// Largest database file in bytes; 0: no limit but the disk. A write past it
    /// returns RM_FULL and changes nothing. Default 0.
    pub max_db_bytes: u64,
    /// Check the whole file during rm_open() (SQLite quick_check, ~10 ms per 10k
    /// memories, with the frames of its -wal) and refuse a damaged one with
    /// RM_CORRUPT, leaving the file, its -wal and -shm byte for byte as they were
    /// (unless another process has it open). Without it, damage is reported as
    /// RM_CORRUPT by the first call that reads it. Default false.
    pub verify: bool,
    /// Use an embedding model when one is available. false: BM25 only whatever the
    /// environment says. Default true.
    pub embeddings: bool,
    /// Embedding model directory (model.onnx, tokenizer.json, robotmem-model.json).
    /// NULL: $ROBOTMEM_MODEL_DIR; unset too: BM25 only. A missing or broken model
    /// does not fail rm_open(): the handle runs BM25 only and rm_embedding_status()
    /// says why.
    pub model_dir: *const c_char,
    /// ONNX Runtime shared library (libonnxruntime.so.1.x). NULL:
    /// $ROBOTMEM_ORT_LIBRARY, else libonnxruntime.so next to librobotmem. The first
    /// library loaded in a process serves every handle (one runtime per process).
    pub ort_library: *const c_char,
    /// ONNX Runtime sessions of the handle, 1–64: texts the model embeds at once.
    /// rm_learn_batch and rm_reembed spread their texts over them, one thread each;
    /// concurrent rm_learn / rm_recall calls share them: a call finding every session
    /// busy makes the next one (once per session: ~80 ms, ~15–30 MiB) or waits, and
    /// waiting texts run together in one model run when the model batches (max_batch
    /// other than 1). Default 2.
    pub embed_threads: u32,
    /// Texts per model run in rm_learn_batch() and rm_reembed(), 1–1024. Default 32.
    /// A model whose robotmem-model.json sets max_batch runs at most that many at
    /// once (the default model: 1, its vectors must not depend on batch neighbours).
    pub embed_batch: u32,
    /// Cosine similarity above which a new fact that has the same numbers, outcome
    /// and words (up to inflection) as a stored one is its duplicate. Default 0.85;
    /// above 1 turns the cosine layer off.
    pub cosine_dedup: f64,
    /// Open the file read-only: it must exist and hold a robotmem database of this
    /// version, and nothing is written to it (no schema upgrade, no access counts,
    /// no index copies at rm_close(), no lock file); every write returns
    /// RM_READ_ONLY and rm_recall() records no access. Works on a file this process
    /// may not write. Not with ":memory:". Default false.
    pub read_only: bool,
    /// Time to live, in seconds, of new memories per collection when they give no
    /// ttl_seconds / expires_at: a JSON object {"obstacles": 600, "*": 86400}
    /// ("*": every collection not named). NULL: none expire unless asked.
    pub default_ttl_json: *const c_char,
    /// Most memories the file holds, whatever their status, 0 to RM_MAX_BUDGET (2^53); 0: no limit.
    /// A write that would pass it first hard-deletes (evicts) other memories in its
    /// own transaction, in this order: expired, then forgotten or superseded, then
    /// the active ones of lowest confidence x recency x (1 + access count); never
    /// the protected categories (constraint, gotcha, postmortem) unless
    /// evict_protected. The result lists them (evicted_ids). When only protected
    /// memories could make room the write returns RM_OVER_BUDGET and changes
    /// nothing. Default 0.
    pub max_memories: u64,
    /// The same per collection: a JSON object {"obstacles": 200, "*": 1000} of
    /// whole numbers 1 to 2^53 ("*": each collection not named). NULL: none.
    pub max_memories_json: *const c_char,
    /// Let eviction remove protected memories too (lowest value first). Default false.
    pub evict_protected: bool,
    /// Encryption key of the file, `key_len` bytes (32: a 256-bit key), for a
    /// library built with encryption (CMake -DROBOTMEM_ENCRYPTION=ON; see
    /// rm_encryption_available()); another build returns RM_INVALID_ARGUMENT. A new
    /// file is created encrypted; an existing one must have this key, else
    /// rm_open() returns RM_KEY and the file is not modified. The bytes are copied.
    /// At most one of key and key_file. NULL: no key.
    pub key: *const u8,
    /// Length of `key` in bytes (32).
    pub key_len: usize,
    /// A file holding the key instead: 32 bytes, or 64 hex digits and an optional
    /// newline; it must be readable by its owner only (mode 0600 or 0400), else
    /// RM_INVALID_ARGUMENT. NULL: no key file.
    pub key_file: *const c_char,
    /// The handle's clock instead of the system's (a simulation's, ROS 2 /clock):
    /// returns the current time in milliseconds since 1970-01-01T00:00:00Z, given
    /// `clock_context`. Every time robotmem stores or compares is read from it
    /// (learned, updated, accessed, forgotten, expiry and ttl, decay, eviction's
    /// recency, purge ages, history, rm_open_as_of's "not in the future"). Called
    /// on the threads that call robotmem with this handle, concurrently: it must
    /// be thread-safe, return at once, not call robotmem and not throw (a C++
    /// exception must not leave it). It may go backwards. A value below 0 or after
    /// 9999-12-31 (253402300799999) is not a time: the system clock is read for
    /// that call instead. It and `clock_context` must stay valid until the handle
    /// is closed (or `clock_free` is called); a view from rm_open_as_of() does
    /// not call it. NULL: the system clock.
    pub clock: Option<unsafe extern "C" fn(clock_context: *mut c_void) -> i64>,
    /// Passed to `clock` on every call (not read by robotmem). Default NULL.
    pub clock_context: *mut c_void,
    /// With `clock` set: called once with `clock_context` when robotmem no
    /// longer needs the clock: after rm_close() and the calls still running on
    /// the handle, or when rm_open() fails (also on a failure it reports for
    /// another option). It hands the context's ownership to robotmem (the C++
    /// wrapper frees its std::function this way). NULL: the caller keeps it.
    pub clock_free: Option<unsafe extern "C" fn(clock_context: *mut c_void)>,
}

/// A C clock and its context, callable from any thread (the caller promises
/// that `clock` is thread-safe; see rm_open_options.clock).
struct CClock {
    read: unsafe extern "C" fn(*mut c_void) -> i64,
    context: *mut c_void,
    free: Option<unsafe extern "C" fn(*mut c_void)>,
}

impl Drop for CClock {
    fn drop(&mut self) {
        if let Some(free) = self.free {
            // SAFETY: the caller handed the context over with `clock_free` (documented).
            unsafe { free(self.context) }
        }
    }
}
// SAFETY: rm_open_options.clock documents that it is called from any thread,
// concurrently, and that the function and its context stay valid until rm_close().
unsafe impl Send for CClock {}
unsafe impl Sync for CClock {}

impl CClock {
    fn read(&self) -> i64 {
        // SAFETY: the caller's clock, valid until rm_close (documented).
        unsafe { (self.read)(self.context) }
    }
}

/// Fills `opts` with the defaults.
///
/// Errors: RM_INVALID_ARGUMENT if `opts` is NULL. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rm_open_options_init(opts: *mut rm_open_options) -> rm_status {
    guard(|| {
        out_ptr(opts, "opts")?;
        let d = OpenOptions::default();
        // SAFETY: checked non-NULL; the caller owns a writable rm_open_options.
        unsafe {
            opts.write(rm_open_options {
                path: std::ptr::null(),
                default_collection: std::ptr::null(),
                busy_timeout_ms: d.busy_timeout_ms,
                durability: rm_durability::RM_DURABILITY_FULL,
                rrf_k: d.rrf_k,
                decay_rate: d.decay_rate,
                preload: d.preload,
                max_db_bytes: 0,
                verify: d.verify,
                embeddings: d.embeddings,
                model_dir: std::ptr::null(),
                ort_library: std::ptr::null(),
                embed_threads: d.embed_threads,
                embed_batch: d.embed_batch,
                cosine_dedup: d.cosine_dedup,
                read_only: d.read_only,
                default_ttl_json: std::ptr::null(),
                max_memories: d.max_memories,
                max_memories_json: std::ptr::null(),
                evict_protected: d.evict_protected,
                key: std::ptr::null(),
                key_len: 0,
                key_file: std::ptr::null(),
                clock: None,
                clock_context: std::ptr::null_mut(),
                clock_free: None,
            })
        };
        Ok(())
    })
}

/// Opens (creating if needed, unless read_only) a database and writes a new handle to `*out_db`.
///
/// `opts` may be NULL for all defaults. Several handles, in one or several
/// processes, may open the same file. The strings in `opts` are copied.
///
/// With a model, the first open of the process that loads ONNX Runtime sets
/// ORT_DISABLE_TELEMETRY=1 in the environment first (the runtime's own telemetry
/// would otherwise reach the network); set it yourself before starting threads to
/// avoid that setenv.
///
/// Errors: RM_INVALID_ARGUMENT (NULL out_db, an option outside its range, named with
/// its value), RM_IO (cannot create or open the file, a directory at the path, a
/// directory robotmem cannot write its -wal/-shm files into), RM_CORRUPT (not a
/// robotmem database, or not an SQLite file; the file is not modified), RM_KEY
/// (an encrypted file opened without its key or with another one, a key given for
/// a plain file; the file is not modified), RM_SCHEMA_TOO_NEW, RM_BUSY; with read_only: RM_IO when the file does not exist,
/// RM_READ_ONLY when its schema is older than this version (open it read-write
/// once to upgrade it).
/// Thread-safe.
/// Ownership: the caller owns the handle and must pass it to rm_close().
#[no_mangle]
pub unsafe extern "C" fn rm_open(opts: *const rm_open_options, out_db: *mut *mut rm_db) -> rm_status {
    guard(|| {
        // First: from here on the clock's context is robotmem's (`clock_free`),
        // whatever fails after.
        let clock = opts
            .as_ref()
            .and_then(|c| c.clock.map(|read| CClock { read, context: c.clock_context, free: c.clock_free }));
        out_ptr(out_db, "out_db")?;
        let mut o = OpenOptions::default();
        if let Some(c) = clock {
            o.clock = crate::clock::Clock::new(move || c.read());
        }
        if let Some(c) = opts.as_ref() {
            if let Some(p) = opt_str(c.path, "opts.path")? {
                o = OpenOptions { clock: o.clock, ..OpenOptions::path(p) };
            }
            if let Some(dc) = opt_str(c.default_collection, "opts.default_collection")? {
                o.default_collection = dc.trim().to_string();
            }
            o.busy_timeout_ms = c.busy_timeout_ms;
            // Read as a raw integer: an out-of-range enum value must not be UB.
            let durability = *(std::ptr::addr_of!(c.durability) as *const i32);
            o.durability = match durability {
                0 => Durability::Full,
                1 => Durability::Normal,
                v => return Err(Error::invalid(format!("opts.durability {v} is not a rm_durability value"))),
            };
            o.rrf_k = c.rrf_k;
            o.decay_rate = c.decay_rate;
            o.preload = c.preload;
            o.max_db_bytes = Some(c.max_db_bytes).filter(|&b| b > 0);
            o.verify = c.verify;
            o.embeddings = c.embeddings;
            o.model_dir = opt_str(c.model_dir, "opts.model_dir")?.map(Into::into);
            o.ort_library = opt_str(c.ort_library, "opts.ort_library")?.map(Into::into);
            o.embed_threads = c.embed_threads;
            o.embed_batch = c.embed_batch;
            o.cosine_dedup = c.cosine_dedup;
            o.read_only = c.read_only;
            if let Some(j) = opt_str(c.default_ttl_json, "opts.default_ttl_json")? {
                o.default_ttl = serde_json::from_str(j).map_err(|e| {
                    Error::invalid(format!("opts.default_ttl_json must be a JSON object of seconds: {e}"))
                })?;
            }
            o.max_memories = c.max_memories;
            if let Some(j) = opt_str(c.max_memories_json, "opts.max_memories_json")? {
                o.collection_max_memories = crate::options::parse_collection_budgets("opts.max_memories_json", j)?;
            }
            o.evict_protected = c.evict_protected;
            if !c.key.is_null() {
                // SAFETY: the caller passes `key_len` readable bytes at `key`.
                let bytes = unsafe { std::slice::from_raw_parts(c.key, c.key_len) };
                o.key = Some(Key::from_bytes(bytes).map_err(|e| Error::invalid(format!("opts.key: {}", e.message)))?);
            }
            o.key_file = opt_str(c.key_file, "opts.key_file")?.map(Into::into);
        }
        *out_db = register(Db::open(o)?);
        Ok(())
    })
}

/// A new handle for `db` (closed by rm_close()).
pub(crate) fn register(db: Db) -> *mut rm_db {
    let handle = NEXT_HANDLE.fetch_add(0x10, Ordering::Relaxed);
    registry().write().insert(handle, Arc::new(db));
    handle as *mut rm_db
}

/// Whether this library opens encrypted files (built with encryption: CMake
/// -DROBOTMEM_ENCRYPTION=ON, cargo feature `encryption`). Thread-safe.
#[no_mangle]
pub extern "C" fn rm_encryption_available() -> bool {
    guard_with(false, || crate::ENCRYPTION)
}

/// Re-encrypts the file of `db` with a new key of `key_len` (32) bytes. The
/// handle was opened with a key, and must be the only user of the file: another
/// handle or process having it open makes this return RM_BUSY and nothing
/// changes. Every page is rewritten in one transaction (a crash leaves the old
/// key valid); calls on other threads wait meanwhile. Later rm_open() calls need
/// the new key.
///
/// Errors: RM_INVALID_ARGUMENT (NULL key, key_len not 32, a file not opened with
/// a key, a build without encryption), RM_BUSY, RM_READ_ONLY, RM_CLOSED, RM_IO,
/// RM_FULL. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rm_rekey(db: *mut rm_db, key: *const u8, key_len: usize) -> rm_status {
    guard(|| {
        if key.is_null() {
            return Err(Error::invalid("key is NULL"));
        }
        // SAFETY: the caller passes `key_len` readable bytes at `key`.
        let key = Key::from_bytes(unsafe { std::slice::from_raw_parts(key, key_len) })?;
        self::db(db)?.rekey(&key)
    })
}

/// Closes a handle: pending access counters are written and the file is closed
/// once no other thread is inside a call on it. NULL is accepted (RM_OK).
///
/// Each in-process index the handle built (the text index, the context_filter
/// columns, the spatial_sort coordinates) that changed by 256 or more memories
/// since the copy stored in the file is stored in the file (about 40 bytes per
/// memory for the text index; 46 ms at 100,000 memories), so the next handle
/// loads it instead of rebuilding it from every memory. Best effort: if that write
/// fails the next handle rebuilds; nothing is reported.
///
/// The handle is closed whatever this returns. An error reports what could not be
/// finished: RM_FULL or RM_IO when the write-ahead log could not be copied into the
/// database file (disk full): no acknowledged write is lost, they stay in the
/// "-wal" file beside it and are applied at the next open, but free space before
/// writing again. (When another thread is still inside a call on the handle, that
/// call's end closes it and nothing is reported.)
///
/// Errors: RM_CLOSED if the handle was already closed (nothing happens), RM_FULL,
/// RM_IO, RM_BUSY.
#[no_mangle]
pub extern "C" fn rm_close(db: *mut rm_db) -> rm_status {
    guard(|| {
        if db.is_null() {
            return Ok(());
        }
        let removed = registry().write().remove(&(db as usize));
        match removed {
            // The last user closes and reports; if other threads are still inside a
            // call, the last of them drops it when its call returns.
            Some(d) => match Arc::try_unwrap(d) {
                Ok(d) => d.close(),
                Err(_) => Ok(()),
            },
            None => Err(Error::new(Status::Closed, "db handle is already closed or was not returned by rm_open()")),
        }
    })
}

/// Writes pending access counters (recall hits) to the file now.
///
/// Errors: RM_INVALID_ARGUMENT, RM_CLOSED, RM_BUSY, RM_IO, RM_FULL. Thread-safe.
#[no_mangle]
pub extern "C" fn rm_flush(db: *mut rm_db) -> rm_status {
    guard(|| self::db(db)?.flush())
}

// ---------------------------------------------------------------------------
// Library-level functions.

/// The library version, e.g. "0.1.0" (equal to RM_VERSION_STRING of the header it
/// was built with). Static storage; never NULL.
#[no_mangle]
pub extern "C" fn rm_version() -> *const c_char {
    guard_with(c"".as_ptr(), || concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr() as *const c_char)
}

/// Static name of a status code ("RM_OK", "RM_NOT_FOUND", …; "RM_UNKNOWN" for
/// values outside the enum). Never NULL.
#[no_mangle]
pub extern "C" fn rm_status_str(status: i32) -> *const c_char {
    guard_with(c"RM_UNKNOWN".as_ptr(), || Status::from_code(status).map_or(c"RM_UNKNOWN", Status::c_name).as_ptr())
}

/// Message of the most recent rm_ call on the calling thread: "" after success,
/// else a description naming the failing field or resource. Never NULL; valid
/// until the next rm_ call on this thread (copy it to keep it).
#[no_mangle]
pub extern "C" fn rm_last_error() -> *const c_char {
    guard_with(c"internal panic (please report)".as_ptr(), last_error_ptr)
}

/// Frees a string returned by a rm_*_json() function. NULL is accepted.
#[no_mangle]
pub unsafe extern "C" fn rm_string_free(s: *mut c_char) {
    guard_void(|| {
        if !s.is_null() {
            drop(CString::from_raw(s));
        }
    })
}
