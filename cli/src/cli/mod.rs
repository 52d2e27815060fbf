//! The command-line surface: one subcommand per library call, the same options
//! as the C API (`rm_open_options`, `rm_recall_request`, ...).

mod browse;
mod human;
mod transfer;

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use robotmem::{
    render, Db, Durability, Error, LearnRequest, OpenOptions, PerceptionRequest, PerceptionType, RecallRequest, Result,
    Status,
};
use serde_json::{json, Value};

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
    #[command(subcommand)]
    command: Command,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum DurabilityArg {
    Full,
    Normal,
}

/// What `learn` and `perceive` store a memory with, besides its text.
#[derive(clap::Args, Debug)]
struct Stored {
    /// Context: a JSON object (params, spatial, robot, task, env) or free text.
    #[arg(long)]
    context: Option<String>,
    #[arg(long)]
    collection: Option<String>,
    /// Session id (from `session start`).
    #[arg(long)]
    session: Option<String>,
    /// A user tag (repeatable).
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Store an experience (rm_learn).
    Learn {
        /// The experience, 1-300 characters.
        insight: String,
        #[command(flatten)]
        on: Stored,
    },
    /// Store a perception: a description with sensor data (rm_save_perception).
    Perceive {
        /// What was perceived, 5-300 characters.
        description: String,
        /// visual, tactile, auditory, proprioceptive or procedural.
        #[arg(long = "type", value_name = "TYPE")]
        kind: String,
        /// Sensor data file (JSON such as {"force": [...]} or binary); "-" reads stdin.
        #[arg(long, value_name = "FILE")]
        data: Option<PathBuf>,
        /// Metadata: a JSON object (format, units, rate).
        #[arg(long, value_name = "JSON")]
        metadata: Option<String>,
        #[command(flatten)]
        on: Stored,
    },
    /// The most relevant memories for a query (rm_recall).
    Recall {
        /// Natural-language query; "*" lists the newest memories that pass the filters.
        query: String,
        /// Number of results, 1-100.
        #[arg(short = 'n', long, default_value_t = 5)]
        n: i64,
        /// Lowest confidence, 0-1.
        #[arg(long, default_value_t = 0.3)]
        min_confidence: f64,
        #[arg(long)]
        collection: Option<String>,
        /// Only memories of this session.
        #[arg(long)]
        session: Option<String>,
        /// Context filter: a JSON object of dot-path conditions, e.g. '{"task.success": true}'.
        #[arg(long, value_name = "JSON")]
        filter: Option<String>,
        /// Spatial sort: '{"field": "spatial.pos", "target": [x, y, z], "max_distance": d}'.
        #[arg(long, value_name = "JSON")]
        spatial: Option<String>,
        /// Fold results that say the same thing into the best-ranked of them (each
        /// hit then lists the ids it stands for): n hits are n different facts.
        #[arg(long)]
        group_similar: bool,
    },
    /// One memory by id, with its tags (rm_get).
    Get { id: i64 },
    /// Forget a memory (soft delete, with a reason).
    Forget {
        id: i64,
        #[arg(long)]
        reason: String,
    },
    /// Replace a memory's text (and optionally its context).
    Update {
        id: i64,
        new_content: String,
        #[arg(long)]
        context: Option<String>,
    },
    /// Start or end a session (an episode).
    Session {
        #[command(subcommand)]
        action: SessionAction,
    },
    /// Embedding state: model, stored vectors, memories waiting for a vector.
    Status,
    /// List memories, newest first, with filters (paginated).
    List(browse::ListArgs),
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
    Start {
        #[arg(long)]
        collection: Option<String>,
        #[arg(long)]
        context: Option<String>,
    },
    /// End a session: outcome, decay, consolidation, related memories.
    End {
        session_id: String,
        /// Outcome score, 0-1.
        #[arg(long)]
        outcome: Option<f64>,
    },
}

fn open(a: &Args) -> Result<Db> {
    let mut o = match &a.db {
        Some(p) => OpenOptions::path(p),
        None => OpenOptions::default(),
    };
    o.model_dir = a.model_dir.clone();
    o.ort_library = a.ort_library.clone();
    o.embeddings = !a.no_embeddings;
    o.durability = match a.durability {
        DurabilityArg::Full => Durability::Full,
        DurabilityArg::Normal => Durability::Normal,
    };
    Db::open(o)
}

/// Runs one subcommand.
pub fn run(a: Args) -> Result<()> {
    if let Command::Hub { action } = &a.command {
        return crate::sync::hub(action, a.json);
    }
    let db = open(&a)?;
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
        Command::Learn { insight, on } => {
            let tags: Vec<&str> = on.tags.iter().map(String::as_str).collect();
            let o = db.learn(&LearnRequest {
                insight,
                context: on.context.as_deref(),
                collection: on.collection.as_deref(),
                session_id: on.session.as_deref(),
                tags: &tags,
            })?;
            out(render::learn(&o), human::learn(&o));
        }
        Command::Perceive { description, kind, data, metadata, on } => {
            let bytes = data.as_deref().map(read_data).transpose()?;
            let tags: Vec<&str> = on.tags.iter().map(String::as_str).collect();
            let o = db.save_perception(&PerceptionRequest {
                description,
                perception_type: PerceptionType::parse(kind)?,
                data: bytes.as_deref(),
                metadata: metadata.as_deref(),
                context: on.context.as_deref(),
                collection: on.collection.as_deref(),
                session_id: on.session.as_deref(),
                tags: &tags,
            })?;
            out(render::perception(&o), human::perception(&o));
        }
        Command::Recall { query, n, min_confidence, collection, session, filter, spatial, group_similar } => {
            let r = db.recall(&RecallRequest {
                query,
                collection: collection.as_deref(),
                n: *n,
                min_confidence: *min_confidence,
                session_id: session.as_deref(),
                context_filter: filter.as_deref(),
                spatial_sort: spatial.as_deref(),
                group_similar: *group_similar,
            })?;
            out(render::recall(&r), human::recall(&r));
        }
        Command::Get { id } => {
            let m = db.get(*id)?;
            let tags = db.tags(*id)?;
            let mut v = render::memory(&m);
            v["tags"] = json!(tags);
            out(v, human::memory(&m, &tags));
        }
        Command::Forget { id, reason } => {
            let o = db.forget(*id, reason)?;
            out(render::forget(&o), format!("forgot #{}: {}\n  reason: {}\n", o.memory_id, o.content, o.reason));
        }
        Command::Update { id, new_content, context } => {
            let o = db.update(*id, new_content, context.as_deref())?;
            out(render::update(&o), format!("updated #{}: {}\n  was: {}\n", o.memory_id, o.new_content, o.old_content));
        }
        Command::Session { action: SessionAction::Start { collection, context } } => {
            let s = db.start_session(collection.as_deref(), context.as_deref())?;
            out(render::session_started(&s), format!("{}\n", s.session_id));
        }
        Command::Session { action: SessionAction::End { session_id, outcome } } => {
            let s = db.end_session(session_id, *outcome)?;
            out(render::session_ended(&s), human::session_ended(&s));
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

/// A data file's bytes ("-": stdin), at most the library's limit plus one byte
/// (so an oversize file is refused by the library with its message).
fn read_data(path: &std::path::Path) -> Result<Vec<u8>> {
    use std::io::Read;
    let limit = robotmem::limits::MAX_PERCEPTION_DATA as u64 + 1;
    let mut buf = Vec::new();
    let read = if path.as_os_str() == "-" {
        std::io::stdin().take(limit).read_to_end(&mut buf)
    } else {
        std::fs::File::open(path).and_then(|f| f.take(limit).read_to_end(&mut buf))
    };
    read.map_err(|e| Error::new(Status::Io, format!("data: cannot read {}: {e}", path.display())))?;
    Ok(buf)
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
