//! The memory texts of the real-text mode: the corpus sentences in file order,
//! repeated in passes when more memories are asked for than the corpus has.
//!
//! A repeated sentence with a word added would be a near-duplicate of the original
//! (its words contain the original's, Jaccard > 0.70 for five words or more) and
//! not be stored. So when the corpus is repeated, *every* pass (the first too)
//! appends its own word — " (copy alpha)", " (copy bravo)", … " (copy zulu)",
//! then " (copy alphabravo)" … — made of letters only: no pass's words contain
//! another's, so the passes are stored as separate memories, and a sentence
//! without digits stays without digits (the near-duplicate check of texts without
//! numbers is the part of learn under test). A sentence that would exceed 300
//! characters with its suffix is cut at a character boundary to fit.

use robotmem::limits::MAX_CONTENT_CHARS;

const WORDS: &[&str] = &[
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliett", "kilo", "lima",
    "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey", "xray",
    "yankee", "zulu",
];

/// Most passes (distinct pass words).
pub const MAX_PASSES: usize = 26 * 27;

/// The pass word of pass `p` (0-based): one word of letters, unique per pass.
pub fn pass_word(p: usize) -> String {
    assert!(p < MAX_PASSES, "at most {MAX_PASSES} passes");
    let mut w = WORDS[p % 26].to_string();
    if p >= 26 {
        w.push_str(WORDS[p / 26 - 1]);
    }
    w
}

pub struct Texts<'a> {
    corpus: &'a [String],
    /// How many passes over the corpus `n` memories take (1: no suffix).
    pub passes: usize,
    /// Texts cut to make room for their suffix.
    pub cut: usize,
}

impl<'a> Texts<'a> {
    pub fn new(corpus: &'a [String], n: usize) -> Texts<'a> {
        Texts { corpus, passes: n.div_ceil(corpus.len().max(1)).max(1), cut: 0 }
    }

    /// The text of memory `i` (0-based).
    pub fn text(&mut self, i: usize) -> String {
        let base = &self.corpus[i % self.corpus.len()];
        if self.passes == 1 {
            return base.clone();
        }
        let suffix = format!(" (copy {})", pass_word(i / self.corpus.len()));
        let room = MAX_CONTENT_CHARS - suffix.chars().count();
        let mut t: String = base.trim().chars().take(room).collect();
        if t.chars().count() < base.trim().chars().count() {
            self.cut += 1;
            t.truncate(t.trim_end().len());
        }
        t + &suffix
    }

    /// How the corpus was repeated, for the report.
    pub fn describe(&self) -> String {
        if self.passes == 1 {
            return "corpus not repeated".into();
        }
        format!(
            "corpus repeated in {} passes; every text (the first pass's too) ends with \" (copy WORD)\", \
             WORD a letters-only word per pass ({} .. {}), so passes are not near-duplicates of each other and \
             texts without digits stay without digits",
            self.passes,
            pass_word(0),
            pass_word(self.passes - 1)
        )
    }
}
