//! L0 auto-classification: category, confidence, tags, scope and context
//! JSON of a memory, computed at write time with regular expressions only
//! (no LLM, deterministic, a few microseconds per memory).
//!
//! Trigger vocabularies and the tag tree follow the original Python
//! implementation (`robotmem/auto_classify.py`, `robotmem/tag_tree.py`), with
//! two deliberate changes: English triggers match whole words only, and
//! robot outcome reports with measurements classify as `observation`.

pub mod category;
pub mod confidence;
pub mod context;
pub mod robot;
pub mod scope;
pub mod tags;

#[cfg(test)]
mod tests;

use regex::Regex;

pub use category::{classify_category, is_protected, CATEGORIES, PROTECTED};
pub use confidence::estimate_confidence;
pub use context::{build_context_json_with_source, user_context, LEARN_SOURCE, PERCEPTION_SOURCE};
pub use scope::{extract_scope, normalize_scope_files, Scope};
pub use tags::{classify_tags, normalize_tag, TAG_TREE};

/// Everything the classifier infers about one memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Classification {
    /// First matching category in priority order (`"code"` when none).
    pub category: &'static str,
    /// Content-richness confidence in `[0.80, 0.95]`, rounded to 2 decimals.
    pub confidence: f64,
    /// All matching categories plus valid `scenario_tags` from the context.
    pub tags: Vec<String>,
    /// Files, entities and modules referenced by the text.
    pub scope: Scope,
}

/// Runs the whole L0 pipeline on one memory text and its user context
/// (a JSON object string, free text, or empty).
/// File paths are stored normalised (spec 001: `/abs/path.py` → `abs/path.py`,
/// deduplicated, sorted).
pub fn classify(text: &str, context: &str) -> Classification {
    let mut scope = extract_scope(text);
    scope.files = normalize_scope_files(&scope.files, None);
    Classification {
        category: classify_category(text),
        confidence: estimate_confidence(text, context),
        tags: classify_tags(text, Some(context)),
        scope,
    }
}

/// Confidence of a new perception (spec 000: the column default 0.9). Sensor data
/// is what was measured; the text-richness signals of facts do not apply.
pub const PERCEPTION_CONFIDENCE: f64 = 0.9;

/// [`classify`] for a perception's description: `observation` unless the text says
/// more (never the `code` fallback), confidence [`PERCEPTION_CONFIDENCE`].
pub fn classify_perception(text: &str, context: &str) -> Classification {
    let mut cls = classify(text, context);
    if cls.category == category::FALLBACK {
        cls.category = "observation";
    }
    cls.confidence = PERCEPTION_CONFIDENCE;
    cls
}

/// Compiles one of this module's patterns.
///
/// Convention: in these patterns `\b` means an ASCII word boundary, so
/// English triggers are whole words even when glued to CJK text
/// ("配置port 8080" still sees the word `port`). Panics on an invalid
/// pattern, which the unit tests exercise for every pattern.
pub(crate) fn compile(pattern: &str) -> Regex {
    let pattern = pattern.replace(r"\b", r"(?-u:\b)");
    Regex::new(&pattern).unwrap_or_else(|e| panic!("invalid classify pattern: {e}"))
}
