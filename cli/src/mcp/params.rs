//! The tools' inputs: one struct per tool, whose serde attributes are the
//! parsing rules and whose schemars attributes are the published JSON Schema
//! (names, defaults and limits of the API reference, docs/… "API Reference").
//! Unknown fields are refused so a misspelt name (`sesion_id`) is reported,
//! not silently ignored.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

fn default_collection() -> String {
    "default".into()
}
fn default_n() -> i64 {
    5
}
fn default_min_confidence() -> f64 {
    0.3
}
fn default_perception_type() -> String {
    "visual".into()
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Learn {
    /// Experience text, 1-300 characters after trimming (a fact, strategy, lesson or observation).
    #[schemars(length(min = 1, max = 300))]
    pub insight: String,
    /// Context JSON with params/spatial/robot/task partitions, e.g. {"params": {"grip_force": {"value": 12.5}}, "task": {"success": true}}; free text is kept too.
    #[serde(default)]
    pub context: String,
    /// Session id from start_session, to link the memory to an episode.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Logical namespace for grouping memories.
    #[serde(default = "default_collection")]
    pub collection: String,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Recall {
    /// Search query in natural language; "*" lists the newest memories that pass the filters.
    #[schemars(length(min = 1, max = 1000))]
    pub query: String,
    /// Number of results, 1-100.
    #[serde(default = "default_n")]
    #[schemars(range(min = 1, max = 100))]
    pub n: i64,
    /// Minimum confidence, 0.0-1.0.
    #[serde(default = "default_min_confidence")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub min_confidence: f64,
    /// Only memories of this session (episode replay).
    #[serde(default)]
    pub session_id: Option<String>,
    /// JSON object of dot-path conditions (AND, at most 10), e.g. {"task.success": true, "params.force.value": {"$lt": 15.0}}; operators $lt $lte $gt $gte $ne.
    #[serde(default)]
    pub context_filter: Option<String>,
    /// JSON spatial sort, e.g. {"field": "spatial.object_position", "target": [1.3, 0.7, 0.42], "max_distance": 0.1}.
    #[serde(default)]
    pub spatial_sort: Option<String>,
    /// Fold results that say the same thing (word sets alike, same outcome; numbers may differ) into the best-ranked of them, which lists the others' ids in _similar: n results are then n different facts. Default false.
    #[serde(default)]
    pub group_similar: bool,
    /// Collection to search in.
    #[serde(default = "default_collection")]
    pub collection: String,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SavePerception {
    /// Human-readable description, 5-300 characters.
    #[schemars(length(min = 5, max = 300))]
    pub description: String,
    /// One of: visual, tactile, auditory, proprioceptive, procedural.
    #[serde(default = "default_perception_type")]
    #[schemars(extend("enum" = ["visual", "tactile", "auditory", "proprioceptive", "procedural"]))]
    pub perception_type: String,
    /// Sensor data as JSON text (actions, trajectories, readings), stored as its UTF-8 bytes; at most 4 MiB.
    #[serde(default)]
    pub data: Option<String>,
    /// JSON metadata (format, sample rate, units).
    #[serde(default)]
    pub metadata: Option<String>,
    /// Collection namespace.
    #[serde(default = "default_collection")]
    pub collection: String,
    /// Session id from start_session.
    #[serde(default)]
    pub session_id: Option<String>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Forget {
    /// Id of the memory to forget (> 0).
    #[schemars(range(min = 1))]
    pub memory_id: i64,
    /// Why it is wrong (kept for the audit trail).
    #[schemars(length(min = 1, max = 500))]
    pub reason: String,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Update {
    /// Id of the memory to change (> 0).
    #[schemars(range(min = 1))]
    pub memory_id: i64,
    /// Updated content, 1-300 characters.
    #[schemars(length(min = 1, max = 300))]
    pub new_content: String,
    /// Updated context JSON ("" keeps the current context).
    #[serde(default)]
    pub context: String,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartSession {
    /// Collection namespace.
    #[serde(default = "default_collection")]
    pub collection: String,
    /// Episode context JSON (robot, environment, task).
    #[serde(default)]
    pub context: Option<String>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EndSession {
    /// Session id from start_session.
    pub session_id: String,
    /// Episode success score, 0.0-1.0.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub outcome_score: Option<f64>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Doctor {}
