//! The command-line surface: one subcommand per library call, the same options
//! as the C API (`rm_open_options`, `rm_recall_request`, ...).

mod browse;
mod human;
mod retention;
mod transfer;

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use robotmem::{render, Db, Durability, Error, OpenOptions, Result, Status};
use serde_json::{json, Value};

use crate::request;

#[derive(Parser, Debug)]
#[command(name = "robotmem", version, about = "See, search and fix a robot's long-term memory (one SQLite file).")]
pub struct Args {
    /// Database file (default: ~/.robotmem/memory.db, as the library).
    #[arg(long, global = true, value_name = "PATH")]
    db: Option<PathBuf>,
    /// Embedding model directory (default: $ROBOTMEM_MODEL_DIR; unset too: BM25 only).
    #[arg(long, global = true, value_name = "DIR")]
    model_dir: Option<PathBuf>,
    /// ONNX Runtime library (default: $ROBOTMEM_ORT_LIBRARY).
    #[arg(long, global = true, value_name = "FILE")]
    ort_library: Option<PathBuf>,
    /// BM25 only: do not load an embedding model.
    #[arg(long, global = true)]
    no_embeddings: bool,
    /// Commit durability: full (fsync per write, the default) or normal.
    #[arg(long, global = true, value_enum, default_value_t = DurabilityArg::Full)]
    durability: DurabilityArg,
    /// Print the library's JSON renderings (one document) instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// Open the database read-only: nothing is written (recall records no access)
    /// and writes fail. get, list, stats, sessions, status, doctor, export and
    /// `web --read-only` always do; so does any command on a file this user may not write.
    #[arg(long, global = true)]
    read_only: bool,
    #[command(flatten)]
    budget: retention::BudgetArgs,
    /// Key file of an encrypted database (32 bytes or 64 hex digits, mode 0600;
    /// builds with encryption, docs/ENCRYPTION.md).
    #[arg(long, global = true, value_name = "FILE", env = "ROBOTMEM_KEY_FILE")]
    key_file: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum DurabilityArg {
    Full,
    Normal,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Store an experience (rm_learn).
    Learn(request::Learn),
    /// Store a perception: a description with sensor data (rm_save_perception).
    Perceive(request::SavePerception),
    /// The most relevant memories for a query (rm_recall).
    Recall(request::Recall),
    /// One memory by id, with its tags (rm_get).
    Get {
        id: i64,
        /// The memory as it was at this time (RFC 3339; not in the future).
        #[arg(long, value_name = "TIME")]
        as_of: Option<String>,
    },
    /// Every version of a memory: what it said and was, when, and what changed it (rm_memory_history).
    History(request::History),
    /// Forget a memory (soft delete, with a reason).
    Forget(request::Forget),
    /// Replace a memory's text (and optionally its context).
    Update(request::Update),
    /// Set when a memory expires (--ttl SECONDS or --expires-at TIME; neither: never).
    Expire(request::SetExpiry),
    /// Hard-delete what was forgotten, superseded or expired at least --older-than ago, and give the space back.
    Purge(request::Purge),
    /// Start or end a session (an episode).
    Session {
        #[command(subcommand)]
        action: SessionAction,
    },
    /// Embedding state: model, stored vectors, memories waiting for a vector.
    Status,
    /// List memories, newest first, with filters (paginated).
    List(request::List),
    /// Totals: memories by status, type, category and collection; learned per day; confidence.
    Stats,
    /// Sessions, newest first, with their memory counts and outcomes (or one session's timeline).
    Sessions(browse::SessionsArgs),
    /// Check the file: integrity, indexes, model, WAL; exits non-zero when something is wrong.
    Doctor {
        /// Also SQLite's full integrity_check and every memory's checksum (reads the whole file).
        #[arg(long)]
        full: bool,
    },
    /// Write every memory as JSON Lines (docs/EXPORT-FORMAT.md), streaming.
    Export(transfer::ExportArgs),
    /// Read JSON Lines written by `export`; duplicates are reported, not stored twice.
    Import(transfer::ImportArgs),
    /// Serve the web console and its REST API (loopback by default).
    Web(crate::web::WebArgs),
    /// Serve the memory to agents: an MCP server on stdin/stdout (tools learn, recall, ...).
    Mcp(crate::mcp::McpArgs),
    /// Share memories with a fleet through a PostgreSQL hub: push, pull, every --every (docs/FLEET.md).
    Sync(crate::sync::SyncArgs),
    /// The fleet hub's owner: create/upgrade its schema, register robots.
    Hub {
        #[command(subcommand)]
        action: crate::sync::HubAction,
    },
    /// Re-encrypt an encrypted database with a new key (the file must not be open elsewhere).
    Rekey {
        /// The new key file (32 bytes or 64 hex digits, mode 0600).
        #[arg(long, value_name = "FILE")]
        new_key_file: PathBuf,
    },
    /// Embed memories that have no vector of the loaded model (all, or --limit).
    Reembed {
        /// At most this many memories (0: all).
        #[arg(long, default_value_t = 0)]
        limit: usize,
    },
}

#[derive(Subcommand, Debug)]
enum SessionAction {
    /// Start a session; prints its id.
    Start(request::StartSession),
    /// End a session: outcome, decay, consolidation, related memories.
    End(request::EndSession),
}

impl Command {
    /// Commands that only read: they open the file read-only, so they never create
    /// a file at a mistyped path and never change one (not even access counts).
    fn only_reads(&self) -> bool {
        match self {
            Command::Get { .. }
            | Command::History(_)
            | Command::Status
            | Command::List(_)
            | Command::Stats
            | Command::Sessions(_)
            | Command::Doctor { .. }
            | Command::Export(_) => true,
            Command::Web(w) => w.read_only,
            _ => false,
        }
    }

    /// Commands whose purpose is a write (on a read-only file they only fail).
    fn writes(&self) -> bool {
        matches!(
            self,
            Command::Learn(_)
                | Command::Perceive(_)
                | Command::Forget(_)
                | Command::Update(_)
                | Command::Expire(_)
                | Command::Purge(_)
                | Command::Session { .. }
                | Command::Import(_)
                | Command::Reembed { .. }
                | Command::Sync(_)
                | Command::Rekey { .. }
        )
    }

    fn name(&self) -> &'static str {
        match self {
            Command::Learn(_) => "learn",
            Command::Perceive(_) => "perceive",
            Command::Forget(_) => "forget",
            Command::Update(_) => "update",
            Command::Expire(_) => "expire",
            Command::Purge(_) => "purge",
            Command::Session { .. } => "session",
            Command::Import(_) => "import",
            Command::Reembed { .. } => "reembed",
            Command::Rekey { .. } => "rekey",
            Command::Mcp(_) => "mcp",
            Command::Sync(_) => "sync",
            Command::Web(_) => "web",
            _ => "this command",
        }
    }
}

/// How the file at the chosen path was opened.
struct Opened {
    db: Db,
    /// Opened read-only because this user may not write the file (not asked for).
    unwritable: Option<String>,
}

fn db_path(a: &Args) -> Option<PathBuf> {
    match &a.db {
        Some(p) if p.as_os_str() == ":memory:" => None,
        Some(p) => Some(p.clone()),
        None => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".robotmem").join("memory.db")),
    }
}

/// Why this process may not write the existing database at `path` (file or
/// directory permissions, a read-only mount), or `None` when it may.
fn not_writable(path: &std::path::Path) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    let denied = |p: &std::path::Path, mode: libc::c_int| {
        let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else { return false };
        // SAFETY: a NUL-terminated path; access() only reads it.
        unsafe { libc::access(c.as_ptr(), mode) != 0 }
    };
    if !path.exists() {
        return None;
    }
    if denied(path, libc::W_OK) {
        return Some("this user may not write it".into());
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let wal = PathBuf::from(format!("{}-wal", path.display()));
    (!wal.exists() && denied(dir, libc::W_OK | libc::X_OK))
        .then(|| format!("this user may not create its -wal beside it in {}", dir.display()))
}

fn open(a: &Args) -> Result<Opened> {
    let path = db_path(a);
    let asked = a.read_only || a.command.only_reads();
    let unwritable = if asked { None } else { path.as_deref().and_then(not_writable) };
    let mut o = match &a.db {
        Some(p) => OpenOptions::path(p),
        None => OpenOptions::default(),
    };
    o.read_only = asked || unwritable.is_some();
    o.model_dir = a.model_dir.clone();
    o.ort_library = a.ort_library.clone();
    o.embeddings = !a.no_embeddings;
    o.key_file = a.key_file.clone();
    o.durability = match a.durability {
        DurabilityArg::Full => Durability::Full,
        DurabilityArg::Normal => Durability::Normal,
    };
    a.budget.apply(&mut o)?;
    match Db::open(o) {
        Ok(db) => Ok(Opened { db, unwritable }),
        Err(e) if asked && path.as_deref().is_some_and(|p| !p.exists()) => Err(Error::new(
            e.status,
            format!(
                "no database at {}: {} only reads and does not create one (check --db)",
                path.as_deref().map(|p| p.display().to_string()).unwrap_or_default(),
                if a.read_only { "--read-only" } else { "this command" }
            ),
        )),
        Err(e) => Err(e),
    }
}

/// Runs one subcommand.
pub fn run(a: Args) -> Result<()> {
    if let Command::Hub { action } = &a.command {
        return crate::sync::hub(action, a.json);
    }
    let Opened { db, unwritable } = open(&a)?;
    let path = db_path(&a).map(|p| p.display().to_string()).unwrap_or_default();
    if let Some(why) = &unwritable {
        if !a.json && !a.command.writes() {
            eprintln!(
                "robotmem: note: {path} is opened read-only ({why}): nothing is written, recall records no access"
            );
        }
    }
    // A write refused because the file is not writable says so, not "opened read-only".
    let explain = |e: Error| match &unwritable {
        Some(why) if e.status == Status::ReadOnly => {
            Error::new(e.status, format!("{path} is read-only ({why}): {} cannot write it", a.command.name()))
        }
        _ => e,
    };
    run_on(&a, db).map_err(explain)
}

fn run_on(a: &Args, db: Db) -> Result<()> {
    let out = |v: Value, text: String| {
        if a.json {
            println!("{v}");
        } else {
            print!("{text}");
        }
    };
    match &a.command {
        // The servers take the handle and keep it until they stop.
        Command::Web(w) => return crate::web::serve(db, w),
        Command::Mcp(m) => return crate::mcp::serve(db, m),
        Command::Sync(s) => return crate::sync::sync(&db, s),
        Command::Hub { .. } => unreachable!("handled before the database is opened"),
        Command::Learn(r) => {
            let o = request::learn(&db, r)?;
            out(o.json, human::learn(&o.data));
        }
        Command::Perceive(r) => {
            let o = request::save_perception(&db, r)?;
            out(o.json, human::perception(&o.data));
        }
        Command::Recall(r) => {
            let o = request::recall(&db, r)?;
            if !a.json {
                for w in o.json["warnings"].as_array().into_iter().flatten() {
                    eprintln!("robotmem: warning: {}", w.as_str().unwrap_or_default());
                }
            }
            out(o.json, human::recall(&o.data));
        }
        Command::Get { id, as_of } => {
            let o = request::get(&db, *id, as_of)?;
            out(o.json, human::memory(&o.data.0, &o.data.1));
        }
        Command::History(r) => {
            let o = request::history(&db, r)?;
            out(o.json, human::history(r.memory_id, &o.data));
        }
        Command::Forget(r) => {
            let o = request::forget(&db, r)?;
            let f = &o.data;
            out(o.json, format!("forgot #{}: {}\n  reason: {}\n", f.memory_id, f.content, f.reason));
        }
        Command::Rekey { new_key_file } => {
            db.rekey(&robotmem::Key::from_file(new_key_file)?)?;
            let text = format!("rekeyed: open it with {} from now on\n", new_key_file.display());
            out(serde_json::json!({"rekeyed": true}), text);
        }
        Command::Expire(r) => {
            let o = request::set_expiry(&db, r)?;
            let m = &o.data;
            let when = match (&m.expires_at, m.expired) {
                (None, _) => "never expires".to_string(),
                (Some(t), false) => format!("expires at {t}"),
                (Some(t), true) => format!("expired at {t}"),
            };
            out(o.json, format!("#{}: {when}\n", m.id));
        }
        Command::Purge(p) => {
            let (v, text) = retention::purge(&db, p)?;
            out(v, text);
        }
        Command::Update(r) => {
            let o = request::update(&db, r)?;
            let u = &o.data;
            out(o.json, format!("updated #{}: {}\n  was: {}\n", u.memory_id, u.new_content, u.old_content));
        }
        Command::Session { action: SessionAction::Start(r) } => {
            let o = request::start_session(&db, r)?;
            let text = format!("{}\n", o.data.session_id);
            out(o.json, text);
        }
        Command::Session { action: SessionAction::End(r) } => {
            let o = request::end_session(&db, r)?;
            out(o.json, human::session_ended(&o.data));
        }
        Command::Status => {
            let s = db.embedding_status()?;
            out(render::embedding_status(&s), human::status(&s));
        }
        Command::List(l) => browse::list(&db, l, a.json)?,
        Command::Stats => browse::stats(&db, a.json)?,
        Command::Sessions(s) => browse::sessions(&db, s, a.json)?,
        Command::Doctor { full } => browse::doctor(&db, *full, a.json)?,
        Command::Export(e) => transfer::export(&db, e, a.json)?,
        Command::Import(i) => transfer::import(&db, i, a.json)?,
        Command::Reembed { limit } => {
            let r = db.reembed(*limit)?;
            let v = json!({"embedded": r.embedded, "remaining": r.remaining, "rebuilt": r.rebuilt});
            out(
                v,
                format!(
                    "embedded {}, {} still without a vector{}\n",
                    r.embedded,
                    r.remaining,
                    if r.rebuilt { " (another model's vectors were dropped)" } else { "" }
                ),
            );
        }
    }
    db.close()
}

/// The error of a failed call, on stderr (stdout keeps only results): one JSON
/// document with `--json`, a line otherwise.
pub fn print_error(e: &Error, json: bool) {
    if json {
        eprintln!("{}", json!({"error": {"status": e.status.name(), "code": e.status as i32, "message": e.message}}));
    } else {
        eprintln!("robotmem: {} ({})", e.message, status_word(e.status));
    }
}

fn status_word(s: Status) -> String {
    s.name().trim_start_matches("RM_").to_lowercase().replace('_', " ")
}
