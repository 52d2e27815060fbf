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
pub use context::{build_context_json, build_context_json_with_source};
pub use robot::reports_measured_outcome;
pub use scope::{extract_scope, normalize_scope_files, Scope};
pub use tags::{classify_tags, dimension_prefix, is_valid_tag, normalize_tag, TAG_TREE};

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
pub fn classify(text: &str, context: &str) -> Classification {
    Classification {
        category: classify_category(text),
        confidence: estimate_confidence(text, context),
        tags: classify_tags(text, Some(context)),
        scope: extract_scope(text),
    }
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
