//! One memory: learn, save_perception, get, forget, update (`robotmem learn`,
//! `perceive`, `get`, `forget`, `update`; `GET/PUT/DELETE /api/memory/{id}`; the
//! MCP tools of the same names).

use std::path::{Path, PathBuf};

use robotmem::{
    limits, render, Db, Error, ForgetOutcome, LearnOutcome, LearnRequest, Memory, PerceptionOutcome, PerceptionRequest,
    PerceptionType, Result, Status, UpdateOutcome,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{given, given_text, Reply};

fn default_perception_type() -> String {
    PerceptionType::default().as_str().into()
}

#[derive(clap::Args, Deserialize, JsonSchema, Debug, Clone)]
#[schemars(deny_unknown_fields)]
pub struct Learn {
    /// Experience text, 1-300 characters after trimming (a fact, strategy, lesson or observation).
    #[schemars(length(min = 1, max = limits::MAX_CONTENT_CHARS))]
    pub insight: String,
    /// Context JSON with params/spatial/robot/task partitions, e.g. {"params": {"grip_force": {"value": 12.5}}, "task": {"success": true}}; free text is kept too.
    #[arg(long, default_value = "", hide_default_value = true)]
    #[serde(default)]
    pub context: String,
    /// Session id from start_session, to link the memory to an episode.
    #[arg(long = "session", value_name = "ID")]
    #[serde(default)]
    pub session_id: Option<String>,
    /// Logical namespace for grouping memories (default: the database's default collection).
    #[arg(long)]
    #[serde(default)]
    pub collection: Option<String>,
    /// A user tag (repeatable; the command line only).
    #[arg(long = "tag", value_name = "TAG")]
    #[serde(skip)]
    pub tags: Vec<String>,
    #[command(flatten)]
    #[serde(flatten)]
    pub expiry: Expiry,
}

/// When a new memory expires: it then leaves recall, listings and dedup, and
/// stays readable by id as expired.
#[derive(clap::Args, Deserialize, JsonSchema, Debug, Clone, Default)]
pub struct Expiry {
    /// Time to live in seconds (> 0, at most 100 years), e.g. 600 for an obstacle that moves on.
    #[arg(long = "ttl", value_name = "SECONDS")]
    #[serde(default)]
    pub ttl_seconds: Option<f64>,
    /// Or when it expires, RFC 3339 (e.g. "2026-12-01T18:00:00Z"). Neither: a new memory gets the collection's
    /// default, else never expires; set_expiry clears the expiry (never).
    #[arg(long, value_name = "TIME")]
    #[serde(default)]
    pub expires_at: Option<String>,
}

pub fn learn(db: &Db, r: &Learn) -> Result<Reply<LearnOutcome>> {
    let tags: Vec<&str> = r.tags.iter().map(String::as_str).collect();
    let data = db.learn(&LearnRequest {
        insight: &r.insight,
        context: given_text(&r.context),
        collection: given(&r.collection),
        session_id: given(&r.session_id),
        tags: &tags,
        ttl_seconds: r.expiry.ttl_seconds,
        expires_at: given(&r.expiry.expires_at),
    })?;
    Ok(Reply { json: render::learn(&data), data })
}

#[derive(clap::Args, Deserialize, JsonSchema, Debug, Clone)]
#[schemars(deny_unknown_fields)]
pub struct SavePerception {
    /// Human-readable description, 5-300 characters.
    #[schemars(length(min = limits::MIN_DESCRIPTION_CHARS, max = limits::MAX_CONTENT_CHARS))]
    pub description: String,
    /// One of: visual, tactile, auditory, proprioceptive, procedural.
    #[arg(long = "type", value_name = "TYPE", default_value_t = default_perception_type())]
    #[serde(default = "default_perception_type")]
    #[schemars(extend("enum" = ["visual", "tactile", "auditory", "proprioceptive", "procedural"]))]
    pub perception_type: String,
    /// Sensor data as JSON text (actions, trajectories, readings), stored as its UTF-8 bytes; at most 4 MiB.
    #[arg(skip)]
    #[serde(default)]
    pub data: Option<String>,
    /// Sensor data file (JSON such as {"force": [...]} or binary); "-" reads stdin.
    #[arg(long = "data", value_name = "FILE")]
    #[serde(skip)]
    pub data_file: Option<PathBuf>,
    /// JSON metadata (format, sample rate, units).
    #[arg(long, value_name = "JSON")]
    #[serde(default)]
    pub metadata: Option<String>,
    /// Collection namespace (default: the database's default collection).
    #[arg(long)]
    #[serde(default)]
    pub collection: Option<String>,
    /// Session id from start_session.
    #[arg(long = "session", value_name = "ID")]
    #[serde(default)]
    pub session_id: Option<String>,
    /// Context: a JSON object (params, spatial, robot, task, env) or free text (the command line only).
    #[arg(long)]
    #[serde(skip)]
    pub context: Option<String>,
    /// A user tag (repeatable; the command line only).
    #[arg(long = "tag", value_name = "TAG")]
    #[serde(skip)]
    pub tags: Vec<String>,
    #[command(flatten)]
    #[serde(flatten)]
    pub expiry: Expiry,
}

pub fn save_perception(db: &Db, r: &SavePerception) -> Result<Reply<PerceptionOutcome>> {
    let bytes = match &r.data_file {
        Some(path) => Some(read_data(path)?),
        None => r.data.as_ref().map(|d| d.as_bytes().to_vec()),
    };
    let tags: Vec<&str> = r.tags.iter().map(String::as_str).collect();
    let data = db.save_perception(&PerceptionRequest {
        description: &r.description,
        perception_type: PerceptionType::parse(&r.perception_type)?,
        data: bytes.as_deref(),
        metadata: r.metadata.as_deref(),
        context: given(&r.context),
        collection: given(&r.collection),
        session_id: given(&r.session_id),
        tags: &tags,
        ttl_seconds: r.expiry.ttl_seconds,
        expires_at: given(&r.expiry.expires_at),
    })?;
    Ok(Reply { json: render::perception(&data), data })
}

/// A data file's bytes ("-": stdin), at most the library's limit plus one byte
/// (so an oversize file is refused by the library with its message).
fn read_data(path: &Path) -> Result<Vec<u8>> {
    use std::io::Read;
    let limit = limits::MAX_PERCEPTION_DATA as u64 + 1;
    let mut buf = Vec::new();
    let read = if path.as_os_str() == "-" {
        std::io::stdin().take(limit).read_to_end(&mut buf)
    } else {
        std::fs::File::open(path).and_then(|f| f.take(limit).read_to_end(&mut buf))
    };
    read.map_err(|e| Error::new(Status::Io, format!("data: cannot read {}: {e}", path.display())))?;
    Ok(buf)
}

/// One memory with its user tags (`"tags"` in the JSON).
/// One memory with its tags; with `as_of` (RFC 3339) as it was then.
pub fn get(db: &Db, id: i64, as_of: &Option<String>) -> Result<Reply<(Memory, Vec<String>)>> {
    super::history::at(db, as_of, |db| {
        let m = db.get(id)?;
        let tags = db.tags(id)?;
        let mut json = render::memory(&m);
        json["tags"] = json!(tags);
        Ok(Reply { json, data: (m, tags) })
    })
}

#[derive(clap::Args, Deserialize, JsonSchema, Debug, Clone)]
#[schemars(deny_unknown_fields)]
pub struct Forget {
    /// Id of the memory to forget (> 0).
    #[arg(value_name = "ID")]
    #[schemars(range(min = 1))]
    pub memory_id: i64,
    /// Why it is wrong (kept for the audit trail).
    #[arg(long)]
    #[schemars(length(min = 1, max = limits::MAX_REASON_CHARS))]
    pub reason: String,
}

pub fn forget(db: &Db, r: &Forget) -> Result<Reply<ForgetOutcome>> {
    let data = db.forget(r.memory_id, &r.reason)?;
    Ok(Reply { json: render::forget(&data), data })
}

#[derive(clap::Args, Deserialize, JsonSchema, Debug, Clone)]
#[schemars(deny_unknown_fields)]
pub struct Update {
    /// Id of the memory to change (> 0).
    #[arg(value_name = "ID")]
    #[schemars(range(min = 1))]
    pub memory_id: i64,
    /// Updated content, 1-300 characters.
    #[serde(alias = "content")]
    #[schemars(length(min = 1, max = limits::MAX_CONTENT_CHARS))]
    pub new_content: String,
    /// Updated context JSON ("" keeps the current context).
    #[arg(long, default_value = "", hide_default_value = true)]
    #[serde(default)]
    pub context: String,
}

pub fn update(db: &Db, r: &Update) -> Result<Reply<UpdateOutcome>> {
    let data = db.update(r.memory_id, &r.new_content, given_text(&r.context))?;
    Ok(Reply { json: render::update(&data), data })
}

#[derive(clap::Args, Deserialize, JsonSchema, Debug, Clone)]
#[schemars(deny_unknown_fields)]
pub struct SetExpiry {
    /// Id of the memory (> 0).
    #[arg(value_name = "ID")]
    #[schemars(range(min = 1))]
    pub memory_id: i64,
    /// Time to live from now in seconds, or `expires_at`; neither: the memory never expires.
    #[command(flatten)]
    #[serde(flatten)]
    pub expiry: Expiry,
}

/// Sets, moves or clears a memory's expiry; the memory as stored.
pub fn set_expiry(db: &Db, r: &SetExpiry) -> Result<Reply<Memory>> {
    let data = db.set_expiry(r.memory_id, r.expiry.ttl_seconds, given(&r.expiry.expires_at))?;
    Ok(Reply { json: render::memory(&data), data })
}
