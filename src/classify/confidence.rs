//! Confidence estimation from content-richness signals.

use std::sync::LazyLock;

use regex::Regex;

use super::{compile, scope};

const BASE: f64 = 0.80;
const PER_SIGNAL: f64 = 0.05;
const CAP: f64 = 0.95;
/// A trimmed context longer than this many characters counts as a signal.
const RICH_CONTEXT_CHARS: usize = 20;

/// A call such as `embed_one()` (backticks are checked separately).
static CALL: LazyLock<Regex> = LazyLock::new(|| compile(r"\w+\(\)"));

/// Causal language.
static CAUSAL: LazyLock<Regex> = LazyLock::new(|| {
    compile(concat!(r"(?i)\bbecause\b|\bcaused?\s*by\b|\bsince\b|\bdue\s+to\b", r"|原因|根因|导致|之所以|因为|由于",))
});

/// Confidence of a memory: 0.80, plus 0.05 for each of a file path, a code
/// reference (backticks or `name()`), causal language, and a context whose
/// trimmed length exceeds 20 characters; capped at 0.95 and rounded to two
/// decimals (so one signal gives exactly 0.85).
pub fn estimate_confidence(text: &str, context: &str) -> f64 {
    let signals = [
        scope::has_file_path(text),
        text.contains('`') || CALL.is_match(text),
        CAUSAL.is_match(text),
        context.trim().chars().count() > RICH_CONTEXT_CHARS,
    ];
    let hits = signals.iter().filter(|&&hit| hit).count() as f64;
    let confidence = (BASE + PER_SIGNAL * hits).min(CAP);
    (confidence * 100.0).round() / 100.0
}
