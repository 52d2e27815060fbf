//! The tools: their descriptions, input schemas (the request types of
//! [`crate::request`], shared with the CLI and the web API) and calls into them. Results are the library's JSON renderings
//! (`robotmem::render`), as text and as structured content; bad input and
//! engine errors are tool errors (`isError: true`) naming the field.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use robotmem::{Db, Error};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::request as p;

/// The doctor tool's arguments: none.
#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Doctor {}

/// Why a call failed, as the agent will read it.
pub enum Fail {
    /// The arguments do not match the schema.
    Input(String),
    /// The library refused or failed.
    Engine(Error),
}

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        Fail::Engine(e)
    }
}

type Call = fn(&Db, Value) -> Result<Value, Fail>;

struct Def {
    name: &'static str,
    description: &'static str,
    schema: fn() -> Arc<JsonObject>,
    call: Call,
    read_only: bool,
}

fn schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    use rmcp::handler::server::tool::{schema_for_input, schema_for_type};
    schema_for_input::<T>().unwrap_or_else(|_| schema_for_type::<T>())
}

const DEFS: &[Def] = &[
    Def {
        name: "learn",
        description: "Record a declarative experience (fact, strategy, lesson, observation) in long-term memory. \
The category (constraint, preference, root_cause, decision, pattern, gotcha, observation, ...) and tags are inferred. \
A near-duplicate of an existing memory is not stored twice: the result is then {\"status\": \"duplicate\", \"existing_id\": ...}. \
Put numbers in context (params/spatial/robot/task) so recall can filter on them.",
        schema: schema::<p::Learn>,
        call: learn,
        read_only: false,
    },
    Def {
        name: "recall",
        description: "Retrieve the memories most relevant to a natural-language query (BM25 + vector hybrid search, RRF merge). \
Filter with context_filter (dot-path conditions on the context JSON) and sort by distance with spatial_sort. \
Returns {\"memories\": [...], \"total\", \"mode\", \"query_ms\"}; each memory has id, content, category, confidence, context partitions. \
With as_of (RFC 3339) it answers as the memory was at that time: what the robot knew and believed then.",
        schema: schema::<p::Recall>,
        call: recall,
        read_only: true,
    },
    Def {
        name: "save_perception",
        description: "Store perception, trajectory or force data (procedural memory) with a human-readable description. \
data is JSON text (sensor readings, sampled trajectories), stored as its bytes; metadata is JSON (format, units, rate).",
        schema: schema::<p::SavePerception>,
        call: save_perception,
        read_only: false,
    },
    Def {
        name: "forget",
        description: "Soft-delete an erroneous memory (status becomes invalidated; kept for the audit trail) with the reason.",
        schema: schema::<p::Forget>,
        call: forget,
        read_only: false,
    },
    Def {
        name: "update",
        description: "Replace a memory's content (and optionally its context); re-classifies, re-tags and re-embeds it. \
Returns old and new content.",
        schema: schema::<p::Update>,
        call: update,
        read_only: false,
    },
    Def {
        name: "set_expiry",
        description: "Set when a memory expires: ttl_seconds from now or expires_at (RFC 3339); neither clears it. \
An expired memory leaves recall and dedup but stays readable by id (expired: true); a new expiry brings it back. \
learn and save_perception take ttl_seconds / expires_at too, for facts that go stale (an obstacle, a door left open).",
        schema: schema::<p::SetExpiry>,
        call: set_expiry,
        read_only: false,
    },
    Def {
        name: "purge",
        description: "Hard-delete the memories forgotten, superseded or expired at least older_than_seconds ago (0: all \
of them now) and give the space back; returns how many. They are out of recall already: this frees the file. Refused \
by a read-only server. The server's memory budget (robotmem --max-memories) evicts on its own when a learn needs room.",
        schema: schema::<p::Purge>,
        call: purge,
        read_only: false,
    },
    Def {
        name: "start_session",
        description: "Begin an episode; returns its session_id, to pass to learn, save_perception, recall and end_session.",
        schema: schema::<p::StartSession>,
        call: start_session,
        read_only: false,
    },
    Def {
        name: "end_session",
        description: "End an episode: records the outcome score, applies time decay, consolidates similar memories of the session \
and returns a summary with related memories from other sessions.",
        schema: schema::<p::EndSession>,
        call: end_session,
        read_only: false,
    },
    Def {
        name: "memory_history",
        description: "Every version of one memory, oldest first: its content, context, category and status from valid_from \
to valid_to, and the change that made each (learn, update, forget, consolidation, expiry, fleet, import) with the robot \
that made it (cause_writer; empty: this robot). Use it to see what a memory said when a decision was taken.",
        schema: schema::<p::History>,
        call: memory_history,
        read_only: true,
    },
    Def {
        name: "doctor",
        description: "Check the memory file: integrity, indexes, embedding model, WAL; returns the report (ok: false when something is wrong).",
        schema: schema::<Doctor>,
        call: doctor,
        read_only: true,
    },
];

/// The tools as listed by `tools/list`.
pub fn list() -> Vec<Tool> {
    DEFS.iter()
        .map(|d| {
            Tool::new(d.name, d.description, (d.schema)())
                .with_annotations(rmcp::model::ToolAnnotations::new().read_only(d.read_only).open_world(false))
        })
        .collect()
}

/// The tools' names.
pub fn names() -> Vec<&'static str> {
    DEFS.iter().map(|d| d.name).collect()
}

/// Whether `name` is one of the tools.
pub fn exists(name: &str) -> bool {
    DEFS.iter().any(|d| d.name == name)
}

/// Runs tool `name` (blocking: call it off the async threads).
pub fn call(db: &Db, name: &str, args: Option<JsonObject>) -> CallToolResult {
    let Some(d) = DEFS.iter().find(|d| d.name == name) else {
        return error(format!("unknown tool {name:?}"), None);
    };
    match (d.call)(db, Value::Object(args.unwrap_or_default())) {
        Ok(v) => CallToolResult::structured(v),
        Err(Fail::Input(m)) => error(format!("invalid arguments for {name}: {m}"), Some("RM_INVALID_ARGUMENT")),
        Err(Fail::Engine(e)) => error(format!("{}: {}", e.status.name(), e.message), Some(e.status.name())),
    }
}

fn error(message: String, status: Option<&str>) -> CallToolResult {
    let mut r = CallToolResult::error(vec![ContentBlock::text(message.clone())]);
    r.structured_content = Some(json!({"error": {"status": status, "message": message}}));
    r
}

/// The arguments as `T`; an error names the field at fault. A null parameter
/// is an absent one (its default; for a required one, "missing field"); a name
/// the tool's schema does not list is refused, so a misspelt one (`sesion_id`) is
/// reported, not silently ignored.
fn parse<T: DeserializeOwned + JsonSchema + 'static>(args: Value) -> Result<T, Fail> {
    let schema = schema::<T>();
    let known = schema.get("properties").and_then(Value::as_object);
    if let Value::Object(m) = &args {
        if let Some(k) = m.keys().find(|k| !known.is_some_and(|p| p.contains_key(*k))) {
            let names: Vec<String> = known.into_iter().flat_map(|p| p.keys()).map(|n| format!("`{n}`")).collect();
            return Err(Fail::Input(match names.is_empty() {
                true => format!("unknown field `{k}`, there are no fields"),
                false => format!("unknown field `{k}`, expected one of {}", names.join(", ")),
            }));
        }
    }
    p::from_json(args).map_err(Fail::Input)
}

fn learn(db: &Db, args: Value) -> Result<Value, Fail> {
    Ok(p::learn(db, &parse(args)?)?.json)
}

fn recall(db: &Db, args: Value) -> Result<Value, Fail> {
    Ok(p::recall(db, &parse(args)?)?.json)
}

fn save_perception(db: &Db, args: Value) -> Result<Value, Fail> {
    Ok(p::save_perception(db, &parse(args)?)?.json)
}

fn forget(db: &Db, args: Value) -> Result<Value, Fail> {
    Ok(p::forget(db, &parse(args)?)?.json)
}

fn update(db: &Db, args: Value) -> Result<Value, Fail> {
    Ok(p::update(db, &parse(args)?)?.json)
}

fn set_expiry(db: &Db, args: Value) -> Result<Value, Fail> {
    Ok(p::set_expiry(db, &parse(args)?)?.json)
}

fn purge(db: &Db, args: Value) -> Result<Value, Fail> {
    Ok(p::purge(db, &parse(args)?)?.json)
}

fn start_session(db: &Db, args: Value) -> Result<Value, Fail> {
    Ok(p::start_session(db, &parse(args)?)?.json)
}

fn end_session(db: &Db, args: Value) -> Result<Value, Fail> {
    Ok(p::end_session(db, &parse(args)?)?.json)
}

fn memory_history(db: &Db, args: Value) -> Result<Value, Fail> {
    Ok(p::history(db, &parse(args)?)?.json)
}

fn doctor(db: &Db, args: Value) -> Result<Value, Fail> {
    let _: Doctor = parse(args)?;
    Ok(p::doctor(db, false)?.json)
}
