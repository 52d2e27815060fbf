//! Embed stage: sentence embeddings computed in-process on the CPU.
//!
//! [`Embedder`] is what the engine needs (a model stamp and `embed`); the
//! implementation is a sentence-transformer ONNX model run by ONNX Runtime
//! ([`onnx::OnnxEmbedder`]), loaded at run time from a file — nothing is
//! downloaded, ever. A model directory holds `model.onnx`, `tokenizer.json` and
//! `robotmem-model.json` ([`ModelConfig`]: dimension, pooling, normalisation,
//! token limit, query/passage prefixes), so other models (bge-small, e5 with its
//! prefixes, 768-d models) drop in by configuration; and, for a model whose
//! weights are ONNX external data (the default model), `model.data`, which ONNX
//! Runtime memory-maps (replace it by rename, never in place, while it is in use).
//!
//! When the runtime or the model is missing or broken, [`load`] says why and the
//! engine runs in `bm25_only` mode.

pub mod cache;
pub mod onnx;
pub mod runtime;
mod sessions;
pub mod unigram;

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{Error, Result, Status};

/// How token vectors become one sentence vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pooling {
    /// Average of the token vectors under the attention mask (sentence-transformers default).
    Mean,
    /// The first token's vector (`[CLS]`; bge models).
    Cls,
}

/// How the model takes its tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Inputs {
    /// `input_ids`, `attention_mask` (and `token_type_ids` if the model has it),
    /// `[batch, seq]` int64, padded to the longest text (sentence-transformers exports).
    #[default]
    Padded,
    /// Two inputs: all texts' token ids concatenated (int32) and the row
    /// boundaries (int64) — TensorFlow exports such as the multilingual Universal
    /// Sentence Encoder.
    Ragged,
}

/// `robotmem-model.json` of a model directory.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    pub name: String,
    pub dim: usize,
    pub pooling: Pooling,
    #[serde(default = "yes")]
    pub normalize: bool,
    /// Tokens per text including special tokens; longer texts are truncated.
    pub max_tokens: usize,
    /// Prepended to queries (e5: `"query: "`).
    #[serde(default)]
    pub query_prefix: String,
    /// Prepended to stored texts (e5: `"passage: "`).
    #[serde(default)]
    pub passage_prefix: String,
    /// Input convention; default `padded`.
    #[serde(default)]
    pub inputs: Inputs,
    /// Most texts per model run; 0: no limit. 1 for models whose output depends
    /// on what a text is batched with (the multilingual USE export quantises its
    /// activations over the whole batch), so a stored vector never depends on its
    /// neighbours in a batch learn.
    #[serde(default)]
    pub max_batch: usize,
    /// How hybrid recall weighs this model's cosines against BM25 (tuned per
    /// model on development data; not part of the model stamp, so changing it
    /// needs no re-embedding).
    #[serde(default)]
    pub fusion: FusionConfig,
}

/// Hybrid fusion settings of a model: `score = w·lexical + (1 − w)·semantic`,
/// where `lexical` is the share of the query's BM25 weight a memory holds and
/// `semantic = clamp((cosine − floor) / (ceiling − floor), 0, 1)`. A neighbour at
/// or below the floor is not relevant to the query by its vector.
///
/// Two refinements, both off unless the model's "fusion" entry sets them:
/// - `cross_script`: the factor on the lexical weight for a memory written in
///   another script than the query (one mostly Chinese, [`crate::text::cjk_share`]
///   0.5 or more, the other without any CJK character; a code-switched text is in
///   neither's other script). Such a memory can hardly share the query's words, so with
///   0 it is scored on its meaning alone instead of being capped at
///   `1 − lexical_weight`. 1 (the default) treats it like any other.
/// - `cross_script_z`: when set (to `z`), the semantic signal of a memory in
///   another script than the query is its cosine standardised among the
///   other-script memories of the query's nearest [`crate::search::recall::hybrid::MIN_FUSION_DEPTH`]
///   (`clamp((cos − mean) / (z · deviation), 0, 1)`, with at least 3 of them; else
///   the plain mapping): a model's cosines across languages sit on another scale
///   than within one, and what tells a cross-lingual answer is how far it stands
///   out from the other memories of its language.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FusionConfig {
    pub lexical_weight: f64,
    pub cosine_floor: f64,
    pub cosine_ceiling: f64,
    #[serde(default = "one")]
    pub cross_script: f64,
    #[serde(default)]
    pub cross_script_z: Option<f64>,
}

fn one() -> f64 {
    1.0
}

impl Default for FusionConfig {
    /// The settings chosen for all-MiniLM-L6-v2 dq-int8 (the English option) by
    /// leave-one-set-out on the development sets (docs/QUALITY.md,
    /// scripts/loso-fusion.py); a model without a "fusion" entry gets them (the
    /// default USE model has its own).
    fn default() -> Self {
        FusionConfig::new(0.6, 0.3, 1.0)
    }
}

impl FusionConfig {
    /// The plain convex fusion: no cross-script factor, a fixed lexical weight.
    pub const fn new(lexical_weight: f64, cosine_floor: f64, cosine_ceiling: f64) -> FusionConfig {
        FusionConfig { lexical_weight, cosine_floor, cosine_ceiling, cross_script: 1.0, cross_script_z: None }
    }

    pub fn is_valid(&self) -> bool {
        (0.0..=1.0).contains(&self.lexical_weight)
            && (-1.0..1.0).contains(&self.cosine_floor)
            && self.cosine_ceiling > self.cosine_floor
            && self.cosine_ceiling <= 1.0
            && (0.0..=1.0).contains(&self.cross_script)
            && self.cross_script_z.is_none_or(|z| z > 0.0 && z <= 100.0)
    }
}

fn yes() -> bool {
    true
}

/// Largest accepted embedding dimension.
pub const MAX_DIM: usize = 4096;

impl ModelConfig {
    pub fn read(dir: &Path) -> Result<ModelConfig> {
        let path = dir.join("robotmem-model.json");
        let text =
            std::fs::read_to_string(&path).map_err(|e| unavailable(format!("cannot read {}: {e}", path.display())))?;
        let cfg: ModelConfig = serde_json::from_str(&text)
            .map_err(|e| unavailable(format!("{} is not a valid model description: {e}", path.display())))?;
        if cfg.dim == 0
            || cfg.dim > MAX_DIM
            || cfg.max_tokens < 3
            || cfg.name.trim().is_empty()
            || !cfg.fusion.is_valid()
        {
            return Err(unavailable(format!(
                "{}: name must be set, dim in 1..={MAX_DIM}, max_tokens >= 3, fusion: lexical_weight in 0..=1, \
                 -1 <= cosine_floor < cosine_ceiling <= 1",
                path.display()
            )));
        }
        Ok(cfg)
    }
}

/// Whether a text is a query or a stored memory (some models prefix them differently).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    Query,
    Passage,
}

/// What the database records about the model that made its vectors: vectors of
/// different stamps are never compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelStamp {
    pub name: String,
    pub dim: usize,
    /// SHA-256 (hex, first 128 bits) of the model and tokenizer files and the
    /// settings that change vectors (pooling, normalisation, token limit, prefixes).
    pub hash: String,
}

impl ModelStamp {
    /// The form stored in `robotmem_meta` (`name/dim/hash`).
    pub fn encode(&self) -> String {
        format!("{}/{}/{}", self.name, self.dim, self.hash)
    }

    /// The stamp [`Self::encode`] wrote (`None`: not of that form).
    pub fn decode(s: &str) -> Option<ModelStamp> {
        let mut it = s.rsplitn(3, '/');
        let hash = it.next()?.to_string();
        let dim = it.next()?.parse().ok().filter(|&d| d > 0)?;
        let name = it.next()?.to_string();
        Some(ModelStamp { name, dim, hash })
    }
}

/// The embedding of one text.
#[derive(Debug, Clone, PartialEq)]
pub enum Embedding {
    /// `dim` floats, L2-normalised if the model is configured so.
    Vector(Vec<f32>),
    /// The model cannot represent the text: more than [`MAX_UNKNOWN_FRACTION`] of
    /// its tokens are unknown to the model's vocabulary (e.g. Chinese for an
    /// English-only model, where ~80 % of characters map to `[UNK]` and every
    /// such text would look alike). Such texts are found by BM25 only.
    Unrepresentable,
}

impl Embedding {
    pub fn vector(&self) -> Option<&[f32]> {
        match self {
            Embedding::Vector(v) => Some(v),
            Embedding::Unrepresentable => None,
        }
    }
}

/// Largest share of unknown tokens in a text the model is trusted to embed.
pub const MAX_UNKNOWN_FRACTION: f32 = 0.25;

/// A sentence embedding model. Implementations are thread-safe.
pub trait Embedder: Send + Sync {
    fn stamp(&self) -> &ModelStamp;
    /// How hybrid recall fuses this model's cosines with BM25.
    fn fusion(&self) -> FusionConfig {
        FusionConfig::default()
    }
    /// One embedding per text, in order.
    fn embed(&self, texts: &[&str], kind: TextKind) -> Result<Vec<Embedding>>;
}

/// Where to find the runtime and the model; see [`crate::OpenOptions`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EmbedSettings {
    pub model_dir: Option<PathBuf>,
    pub runtime_path: Option<PathBuf>,
    /// ONNX Runtime intra-op threads. Default 2.
    pub threads: usize,
    /// Texts per model run when embedding many (batch learn, re-embed).
    pub batch_size: usize,
}

/// Environment variables consulted when the options leave a path unset.
pub const ENV_MODEL_DIR: &str = "ROBOTMEM_MODEL_DIR";
pub const ENV_RUNTIME: &str = "ROBOTMEM_ORT_LIBRARY";

/// Loads the configured embedder, or says why there is none.
pub fn load(s: &EmbedSettings) -> Result<Box<dyn Embedder>> {
    let dir = s
        .model_dir
        .clone()
        .or_else(|| std::env::var_os(ENV_MODEL_DIR).filter(|v| !v.is_empty()).map(PathBuf::from))
        .ok_or_else(|| {
            unavailable(format!("no embedding model configured (set model_dir or {ENV_MODEL_DIR}); BM25 only"))
        })?;
    let env = runtime::environment(s.runtime_path.as_deref())?;
    Ok(Box::new(onnx::OnnxEmbedder::open(env, &dir, s.threads.max(1))?))
}

pub(crate) fn unavailable(msg: impl Into<String>) -> Error {
    Error::new(Status::EmbeddingUnavailable, msg)
}

/// Pools token vectors (models whose output is already one vector per text,
/// `[batch, dim]`, are not pooled) (`hidden`: `seq × dim`, row-major) under `mask`.
pub fn pool(hidden: &[f32], mask: &[i64], dim: usize, pooling: Pooling) -> Vec<f32> {
    match pooling {
        Pooling::Cls => hidden[..dim].to_vec(),
        Pooling::Mean => {
            let mut out = vec![0f32; dim];
            let mut n = 0f32;
            for (t, &m) in mask.iter().enumerate() {
                if m != 0 {
                    n += 1.0;
                    for (o, h) in out.iter_mut().zip(&hidden[t * dim..(t + 1) * dim]) {
                        *o += h;
                    }
                }
            }
            let n = n.max(1e-9);
            out.iter_mut().for_each(|o| *o /= n);
            out
        }
    }
}

/// Scales `v` to unit length (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 1e-12 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Cosine similarity of two vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na < 1e-12 || nb < 1e-12 {
        0.0
    } else {
        dot / (na * nb)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_pooling_respects_the_mask() {
        let hidden = [1.0, 2.0, 3.0, 4.0, 100.0, 100.0];
        assert_eq!(pool(&hidden, &[1, 1, 0], 2, Pooling::Mean), vec![2.0, 3.0]);
        assert_eq!(pool(&hidden, &[1, 1, 0], 2, Pooling::Cls), vec![1.0, 2.0]);
        let mut v = vec![3.0, 4.0];
        normalize(&mut v);
        assert_eq!(v, vec![0.6, 0.8]);
        assert!((cosine(&[1.0, 0.0], &[1.0, 1.0]) - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
    }

    #[test]
    fn model_config_is_strict() {
        let ok: ModelConfig = serde_json::from_str(
            r#"{"name":"m","dim":384,"pooling":"mean","normalize":true,"max_tokens":256,"query_prefix":"","passage_prefix":""}"#,
        )
        .unwrap();
        assert_eq!((ok.pooling, ok.inputs), (Pooling::Mean, Inputs::Padded));
        let ragged: ModelConfig =
            serde_json::from_str(r#"{"name":"u","dim":512,"pooling":"cls","max_tokens":512,"inputs":"ragged"}"#)
                .unwrap();
        assert_eq!(ragged.inputs, Inputs::Ragged);
        assert!(serde_json::from_str::<ModelConfig>(r#"{"name":"m","dim":3,"pooling":"max","max_tokens":8}"#).is_err());
        assert!(serde_json::from_str::<ModelConfig>(r#"{"name":"m","dim":3,"pooling":"cls","max_tokens":8,"x":1}"#)
            .is_err());
    }
}
