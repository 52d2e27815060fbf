//! The eight tools: their descriptions, input schemas (from [`super::params`])
//! and calls into the library. Results are the library's JSON renderings
//! (`robotmem::render`), as text and as structured content; bad input and
//! engine errors are tool errors (`isError: true`) naming the field.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use robotmem::{render, Db, Error, LearnRequest, PerceptionRequest, PerceptionType, RecallRequest};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::params as p;

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
Returns {\"memories\": [...], \"total\", \"mode\", \"query_ms\"}; each memory has id, content, category, confidence, context partitions.",
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
        name: "doctor",
        description: "Check the memory file: integrity, indexes, embedding model, WAL; returns the report (ok: false when something is wrong).",
        schema: schema::<p::Doctor>,
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
/// is an absent one (its default; for a required one, "missing field").
fn parse<T: DeserializeOwned>(mut args: Value) -> Result<T, Fail> {
    if let Value::Object(m) = &mut args {
        m.retain(|_, v| !v.is_null());
    }
    serde_path_to_error::deserialize(args).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        Fail::Input(if path == "." { inner } else { format!("{path}: {inner}") })
    })
}

/// "" and null mean "not given".
fn opt(s: &str) -> Option<&str> {
    Some(s).filter(|s| !s.is_empty())
}

fn learn(db: &Db, args: Value) -> Result<Value, Fail> {
    let a: p::Learn = parse(args)?;
    let o = db.learn(&LearnRequest {
        insight: &a.insight,
        context: opt(&a.context),
        collection: Some(&a.collection),
        session_id: a.session_id.as_deref(),
        tags: &[],
    })?;
    Ok(render::learn(&o))
}

fn recall(db: &Db, args: Value) -> Result<Value, Fail> {
    let a: p::Recall = parse(args)?;
    if !(1..=robotmem::limits::MAX_RESULTS).contains(&a.n) {
        return Err(Fail::Input(format!("n: {} is not between 1 and {}", a.n, robotmem::limits::MAX_RESULTS)));
    }
    let r = db.recall(&RecallRequest {
        query: &a.query,
        collection: Some(&a.collection),
        n: a.n,
        min_confidence: a.min_confidence,
        session_id: a.session_id.as_deref(),
        context_filter: a.context_filter.as_deref(),
        spatial_sort: a.spatial_sort.as_deref(),
        group_similar: a.group_similar,
    })?;
    Ok(render::recall(&r))
}

fn save_perception(db: &Db, args: Value) -> Result<Value, Fail> {
    let a: p::SavePerception = parse(args)?;
    let o = db.save_perception(&PerceptionRequest {
        description: &a.description,
        perception_type: PerceptionType::parse(&a.perception_type)?,
        data: a.data.as_deref().map(str::as_bytes),
        metadata: a.metadata.as_deref(),
        context: None,
        collection: Some(&a.collection),
        session_id: a.session_id.as_deref(),
        tags: &[],
    })?;
    Ok(render::perception(&o))
}

fn forget(db: &Db, args: Value) -> Result<Value, Fail> {
    let a: p::Forget = parse(args)?;
    Ok(render::forget(&db.forget(a.memory_id, &a.reason)?))
}

fn update(db: &Db, args: Value) -> Result<Value, Fail> {
    let a: p::Update = parse(args)?;
    Ok(render::update(&db.update(a.memory_id, &a.new_content, opt(&a.context))?))
}

fn start_session(db: &Db, args: Value) -> Result<Value, Fail> {
    let a: p::StartSession = parse(args)?;
    Ok(render::session_started(&db.start_session(Some(&a.collection), a.context.as_deref())?))
}

fn end_session(db: &Db, args: Value) -> Result<Value, Fail> {
    let a: p::EndSession = parse(args)?;
    Ok(render::session_ended(&db.end_session(&a.session_id, a.outcome_score)?))
}

fn doctor(db: &Db, args: Value) -> Result<Value, Fail> {
    let _: p::Doctor = parse(args)?;
    Ok(render::doctor(&db.doctor(false)?))
}
