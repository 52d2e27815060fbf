//! Public request and result types of the Rust API (the C ABI mirrors them).

mod browse;

pub use browse::*;

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryKind {
    Fact,
    Perception,
}

impl MemoryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryKind::Fact => "fact",
            MemoryKind::Perception => "perception",
        }
    }
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "fact" => Ok(MemoryKind::Fact),
            "perception" => Ok(MemoryKind::Perception),
            _ => Err(Error::internal(format!("unknown memory type {s:?} in database"))),
        }
    }
}

/// The five perception types of the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PerceptionType {
    #[default]
    Visual,
    Tactile,
    Auditory,
    Proprioceptive,
    Procedural,
}

impl PerceptionType {
    pub const ALL: [PerceptionType; 5] = [
        PerceptionType::Visual,
        PerceptionType::Tactile,
        PerceptionType::Auditory,
        PerceptionType::Proprioceptive,
        PerceptionType::Procedural,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            PerceptionType::Visual => "visual",
            PerceptionType::Tactile => "tactile",
            PerceptionType::Auditory => "auditory",
            PerceptionType::Proprioceptive => "proprioceptive",
            PerceptionType::Procedural => "procedural",
        }
    }
    pub fn parse(s: &str) -> Result<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s).ok_or_else(|| {
            Error::invalid(format!(
                "perception_type {s:?} is not one of visual, tactile, auditory, proprioceptive, procedural"
            ))
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryStatus {
    Active,
    Superseded,
    Invalidated,
}

impl MemoryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryStatus::Active => "active",
            MemoryStatus::Superseded => "superseded",
            MemoryStatus::Invalidated => "invalidated",
        }
    }
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "active" => Ok(MemoryStatus::Active),
            "superseded" => Ok(MemoryStatus::Superseded),
            "invalidated" => Ok(MemoryStatus::Invalidated),
            _ => Err(Error::internal(format!("unknown memory status {s:?} in database"))),
        }
    }
}

/// One stored memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Memory {
    pub id: i64,
    pub collection: String,
    pub session_id: Option<String>,
    pub kind: MemoryKind,
    pub content: String,
    pub human_summary: String,
    pub category: String,
    pub confidence: f64,
    pub decay_rate: f64,
    pub status: MemoryStatus,
    pub superseded_by: Option<i64>,
    /// Context JSON object (always an object; at least `{"source": …}`).
    pub context: String,
    pub perception_type: Option<PerceptionType>,
    pub perception_data: Option<Vec<u8>>,
    pub perception_metadata: Option<String>,
    pub access_count: i64,
    pub return_count: i64,
    pub last_accessed: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// When it expires (`None`: never). An expired memory leaves recall, listings
    /// and dedup at that moment; it stays readable by id, its status unchanged.
    pub expires_at: Option<String>,
    /// Whether `expires_at` had passed when it was read.
    pub expired: bool,
}

/// One version of a memory ([`crate::Db::history`]): what it said and was from
/// `valid_from` until `valid_to`, and what made it.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryVersion {
    /// The memory's version counter (the fleet's: it grows with every change).
    pub version: i64,
    /// The robot that wrote this version (`""`: this database's robot).
    pub writer: String,
    pub content: String,
    pub context: String,
    pub category: String,
    /// Its confidence when it was replaced (the current one for the last version).
    pub confidence: f64,
    pub status: MemoryStatus,
    pub superseded_by: Option<i64>,
    /// Why it was forgotten, if it was.
    pub invalidated_reason: Option<String>,
    pub expires_at: Option<String>,
    /// When it became the memory's state (stored time).
    pub valid_from: String,
    /// When the next version replaced it; `None`: the current version.
    pub valid_to: Option<String>,
    /// What made it: `learn`, `fleet` (received, or changed by another robot),
    /// `import`, `update`, `forget`, `consolidation`, `expiry`, or `sql` (a
    /// change made outside robotmem).
    pub cause: String,
    /// The robot whose change made it (`""`: this database's robot).
    pub cause_writer: String,
}

/// How a duplicate was recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DupMethod {
    /// Same content hash (same text, or same perception description + data + metadata).
    Exact,
    /// Word-set Jaccard similarity above 0.70 with the same numbers.
    Jaccard,
    /// Embedding cosine similarity above 0.85 (when an embedder is loaded).
    Cosine,
}

impl DupMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            DupMethod::Exact => "exact",
            DupMethod::Jaccard => "jaccard",
            DupMethod::Cosine => "cosine",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Duplicate {
    pub existing_id: i64,
    pub method: DupMethod,
    pub similarity: f64,
}

/// Parameters of [`crate::Db::learn`].
#[derive(Debug, Clone, Copy, Default)]
pub struct LearnRequest<'a> {
    /// Experience text, 1–300 characters after trimming.
    pub insight: &'a str,
    /// Context: a JSON object (params/spatial/robot/task/env …) or free text, ≤ 64 KiB.
    pub context: Option<&'a str>,
    pub collection: Option<&'a str>,
    pub session_id: Option<&'a str>,
    /// User tags (normalised: "Robot Arm" → "robot_arm"; at most 20), kept across updates.
    pub tags: &'a [&'a str],
    /// Time to live in seconds (> 0, at most 100 years): the memory expires then.
    pub ttl_seconds: Option<f64>,
    /// Or when it expires (RFC 3339; a past time: expired at once). Neither: the
    /// collection's default (`OpenOptions::default_ttl`), else never.
    pub expires_at: Option<&'a str>,
}

/// What [`crate::Db::learn`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct LearnOutcome {
    /// The new memory's id, or the existing memory's id for a duplicate.
    pub memory_id: i64,
    /// `Some` when nothing was stored because an equivalent memory exists.
    pub duplicate: Option<Duplicate>,
    pub category: String,
    pub confidence: f64,
    /// Automatic tags followed by the user tags.
    pub tags: Vec<String>,
    pub scope_files: Vec<String>,
    /// Whether the memory got its vector now (false without a usable model, or
    /// for a duplicate; `Db::reembed` embeds it later).
    pub has_embedding: bool,
    /// Memories hard-deleted to keep the memory budget (`OpenOptions::max_memories`,
    /// `collection_max_memories`), in eviction order; empty almost always.
    pub evicted: Vec<i64>,
}

/// Parameters of [`crate::Db::save_perception`].
#[derive(Debug, Clone, Copy, Default)]
pub struct PerceptionRequest<'a> {
    /// 5–300 characters after trimming.
    pub description: &'a str,
    pub perception_type: PerceptionType,
    /// Raw sensor data (JSON text or binary), ≤ [`crate::limits::MAX_PERCEPTION_DATA`] bytes.
    pub data: Option<&'a [u8]>,
    /// JSON metadata (format, units, rate), ≤ 64 KiB.
    pub metadata: Option<&'a str>,
    /// Optional context JSON object, as for learn.
    pub context: Option<&'a str>,
    pub collection: Option<&'a str>,
    pub session_id: Option<&'a str>,
    /// User tags, as for learn.
    pub tags: &'a [&'a str],
    /// Expiry, as for learn.
    pub ttl_seconds: Option<f64>,
    pub expires_at: Option<&'a str>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PerceptionOutcome {
    pub memory_id: i64,
    pub duplicate: Option<Duplicate>,
    pub perception_type: PerceptionType,
    pub collection: String,
    pub has_embedding: bool,
    /// Memories evicted to keep the memory budget, as for a learn.
    pub evicted: Vec<i64>,
}

/// What [`crate::Db::purge`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PurgeOutcome {
    /// Memories hard-deleted (expired, forgotten or superseded long enough ago).
    pub purged: u64,
    /// Transactions it took (each at most 100 memories).
    pub batches: u64,
    /// Bytes of pages given back to the file system (0 for a file made before
    /// robotmem 0.6, which keeps freed pages for its own reuse).
    pub reclaimed_bytes: u64,
    /// The file's live pages (page count − free pages) × page size, after.
    pub live_bytes: u64,
}

/// Parameters of [`crate::Db::recall`].
#[derive(Debug, Clone, Copy)]
pub struct RecallRequest<'a> {
    /// Natural-language query. A query with no searchable word (e.g. `"*"`) lists
    /// the newest memories that pass the filters (mode `Scan`).
    pub query: &'a str,
    pub collection: Option<&'a str>,
    /// Number of results, clamped to 1–100. Default [`crate::limits::DEFAULT_RESULTS`] (5).
    pub n: i64,
    /// 0–1. Default [`crate::limits::DEFAULT_MIN_CONFIDENCE`] (0.3).
    pub min_confidence: f64,
    /// Only memories of this session (episode replay).
    pub session_id: Option<&'a str>,
    /// JSON object of dot-path conditions (≤ 10), e.g. `{"task.success": true}`.
    pub context_filter: Option<&'a str>,
    /// JSON `{"field": "spatial.pos", "target": [x, y, z], "max_distance": d}`.
    pub spatial_sort: Option<&'a str>,
    /// Fold results that say the same thing into the best-ranked of them
    /// ([`Hit::similar`]): n hits are then n different facts. Default false.
    pub group_similar: bool,
}

impl Default for RecallRequest<'_> {
    fn default() -> Self {
        RecallRequest {
            query: "",
            collection: None,
            n: crate::limits::DEFAULT_RESULTS,
            min_confidence: crate::limits::DEFAULT_MIN_CONFIDENCE,
            session_id: None,
            context_filter: None,
            spatial_sort: None,
            group_similar: false,
        }
    }
}

/// Which retrieval lists produced the ranking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchMode {
    Hybrid,
    Bm25Only,
    VecOnly,
    /// The query had no searchable word: newest memories passing the filters.
    Scan,
}

impl SearchMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::Hybrid => "hybrid",
            SearchMode::Bm25Only => "bm25_only",
            SearchMode::VecOnly => "vec_only",
            SearchMode::Scan => "scan",
        }
    }
}

/// What became of the query's embedding in a recall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryVector {
    /// No vector search: the handle has no model, the stored vectors are another
    /// model's, or the query has no letter or digit.
    None,
    /// The query was embedded and searched.
    Embedded,
    /// The model cannot represent the query (too many unknown tokens, e.g. Chinese
    /// for an English-vocabulary model): the ranking is BM25's alone.
    Unrepresentable,
}

impl QueryVector {
    pub fn as_str(self) -> &'static str {
        match self {
            QueryVector::None => "none",
            QueryVector::Embedded => "embedded",
            QueryVector::Unrepresentable => "unrepresentable",
        }
    }
}

/// One recall result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub memory: Memory,
    /// Fused score normalised so the best hit is 1.0; 0 for a memory that
    /// satisfies the recall's filters but not its query (`matched` false).
    pub score: f64,
    /// Euclidean distance to the spatial_sort target, when one was given.
    pub distance: Option<f64>,
    /// Whether the memory matched the query (shares a word with it, or its vector
    /// is above the model's cosine floor). A recall with context_filter, session
    /// or spatial_sort also returns memories that satisfy them without matching.
    pub matched: bool,
    /// Share of the query's BM25 weight the memory holds (0–1), when it shares a word.
    pub lexical: Option<f64>,
    /// Cosine of the memory's vector to the query's, when both exist and it was computed.
    pub cosine: Option<f64>,
    /// With `group_similar`: the ids of the ranked memories that say the same thing
    /// as this one (word sets alike, same outcome; numbers may differ), best first.
    /// Empty otherwise.
    pub similar: Vec<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RecallResult {
    pub hits: Vec<Hit>,
    pub mode: SearchMode,
    /// Whether the query was embedded (and if not, whether the model could not represent it).
    pub query_vector: QueryVector,
    pub query_ms: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ForgetOutcome {
    pub memory_id: i64,
    pub content: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct UpdateOutcome {
    pub memory_id: i64,
    pub old_content: String,
    pub new_content: String,
    pub category: String,
    pub confidence: f64,
    pub tags: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SessionStarted {
    pub session_id: String,
    pub collection: String,
    pub active_memories_count: i64,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionSummary {
    pub memory_count: i64,
    /// (type, count), sorted by type.
    pub by_type: Vec<(String, i64)>,
    /// (category, count), sorted by category.
    pub by_category: Vec<(String, i64)>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Consolidation {
    pub merged_groups: i64,
    pub superseded_count: i64,
    pub compression_ratio: f64,
    pub avg_similarity: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SessionEnded {
    pub session_id: String,
    pub collection: String,
    pub outcome_score: Option<f64>,
    pub summary: SessionSummary,
    pub decayed_count: i64,
    pub consolidated: Consolidation,
    /// Related memories from other sessions (proactive recall), best first.
    pub related: Vec<Hit>,
}

/// Whether vector search is usable on a handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbeddingState {
    /// Model loaded and the stored vectors are its own: recall is hybrid.
    Ready,
    /// No model or runtime (not configured, missing, or failed to load): BM25 only.
    Unavailable,
    /// The database's vectors were made by another model: BM25 only until
    /// `Db::reembed` rebuilds them with this handle's model.
    ModelMismatch,
}

impl EmbeddingState {
    pub fn as_str(self) -> &'static str {
        match self {
            EmbeddingState::Ready => "ready",
            EmbeddingState::Unavailable => "unavailable",
            EmbeddingState::ModelMismatch => "model_mismatch",
        }
    }
}

/// [`crate::Db::embedding_status`].
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingStatus {
    pub state: EmbeddingState,
    /// This handle's model stamp (`name/dim/hash`), if a model is loaded.
    pub model: Option<String>,
    pub dim: usize,
    /// The stamp of the stored vectors, if any.
    pub stored_model: Option<String>,
    /// Active memories without a vector of the stored model.
    pub pending: i64,
    /// sqlite-vec kernel in use: "avx", "neon" or "portable".
    pub kernel: &'static str,
    /// Why the state is not `Ready` (empty when it is).
    pub reason: String,
    /// The vector index's scan kernel, chosen for this CPU: "avx512-vnni",
    /// "avx2", "neon-dotprod", "neon" or "portable".
    pub index_kernel: &'static str,
}

/// [`crate::Db::reembed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReembedOutcome {
    /// Memories embedded by this call.
    pub embedded: i64,
    /// Active memories still without a vector.
    pub remaining: i64,
    /// Whether this call replaced another model's vectors (all were dropped).
    pub rebuilt: bool,
}
