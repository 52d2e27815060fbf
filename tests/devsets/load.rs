//! Loader of the real-text development sets in `../shared/data` (beside the
//! repository; see the README.md there for provenance, licence, format and the
//! reference scorer `score.py`): gzip'd JSON Lines, a `meta` line, then every
//! `memory` and every `query` (a question with the ids of its gold memories).
//! - `squad`, `cmrc`: one sentence of a SQuAD v1.1 / CMRC 2018 dev context per
//!   memory, one store for the whole set.
//! - `locomo`: the dev half of LoCoMo, one dialogue turn (`"<speaker>: <text>"`)
//!   per memory, and **one store per conversation** (its questions are asked
//!   only there). A turn longer than robotmem's 300-character limit is split as
//!   a caller should split it (README, "Limits"): [`split_long`] cuts it at
//!   sentence ends, then clause ends, then spaces, into pieces of at most 300
//!   characters, each learned as a memory of its own; a hit on any piece is a
//!   hit on the turn. Nothing is dropped.
//! - `xquad`: XQuAD's English and Chinese sentences in one store (English from
//!   the even articles, Chinese from the odd ones), asked in both languages
//!   (kinds `zh->zh`, `en->zh`, `zh->en`); made by scripts/make-xquad-devset.py
//!   and kept in the repository (tests/data/xquad.md: provenance, licence).
//!
//! One loader for the quality test (tests/devsets.rs) and the real-text mode of
//! the workload bench (benches/workload/realtext/), both including this file with
//! `#[path]`. The directory is `$ROBOTMEM_DEVSETS`, else
//! `$CARGO_MANIFEST_DIR/../shared/data`.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use serde_json::Value;

/// (short name, file) of the sets.
pub const SETS: &[(&str, &str)] = &[
    ("squad", "squad-dev-sentences.jsonl.gz"),
    ("cmrc", "cmrc2018-dev-sentences.jsonl.gz"),
    ("locomo", "locomo-dev.jsonl.gz"),
    ("xquad", "xquad-mixed.jsonl.gz"),
];

/// robotmem's limit on a memory's text, in characters (`limits::MAX_CONTENT_CHARS`).
pub const MAX_CHARS: usize = 300;

pub struct Memory {
    /// The dataset's id, with `#<k>` appended for the k-th piece (from 1) of a
    /// text split by [`split_long`].
    pub id: String,
    pub text: String,
    /// The dataset id gold lists refer to (the id without `#<k>`).
    pub unit: String,
    /// The store it is learned into (`""`: the set has one store).
    pub store: String,
}

pub struct Query {
    pub id: String,
    pub question: String,
    /// Ids of the memories holding the answer (at least one).
    pub gold: Vec<String>,
    /// The store it is asked in.
    pub store: String,
    /// Its kind, where the set has kinds (LoCoMo's category: `multi-hop`,
    /// `temporal`, `open-domain`, `single-hop`), else `""`.
    pub kind: String,
}

pub struct Devset {
    pub name: &'static str,
    pub path: PathBuf,
    /// In file order (article order).
    pub memories: Vec<Memory>,
    pub queries: Vec<Query>,
}

/// Where the sets are: `$ROBOTMEM_DEVSETS`, else `../shared/data` beside the crate.
pub fn dir() -> PathBuf {
    std::env::var_os("ROBOTMEM_DEVSETS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data"))
}

/// The path of set `name` (`squad`, `cmrc`, `locomo` or `xquad`), whether or not it exists.
pub fn path(name: &str) -> Result<PathBuf, String> {
    let file = SETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| *f)
        .ok_or_else(|| format!("unknown set {name:?} (expected squad, cmrc, locomo or xquad)"))?;
    if name == "xquad" {
        return Ok(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(file));
    }
    Ok(dir().join(file))
}

/// Reads set `name`; checks the counts against its meta line and that every gold
/// id names a memory.
pub fn load(name: &str) -> Result<Devset, String> {
    let path = path(name)?;
    let file = std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let reader = BufReader::new(flate2::read::GzDecoder::new(file));
    let mut set = Devset {
        name: SETS.iter().find(|(n, _)| *n == name).unwrap().0,
        path: path.clone(),
        memories: Vec::new(),
        queries: Vec::new(),
    };
    let mut counts: Option<(u64, u64)> = None;
    let mut units = 0u64;
    for (i, line) in reader.lines().enumerate() {
        let at = |e: String| format!("{}:{}: {e}", path.display(), i + 1);
        let line = line.map_err(|e| at(e.to_string()))?;
        if line.trim().is_empty() {
            continue;
        }
        let r: Value = serde_json::from_str(&line).map_err(|e| at(e.to_string()))?;
        let s = |k: &str| r[k].as_str().map(str::to_string).ok_or_else(|| at(format!("no string {k:?}")));
        match r["type"].as_str() {
            Some("meta") => {
                let c = &r["counts"];
                counts = Some((c["memories"].as_u64().unwrap_or(0), c["queries"].as_u64().unwrap_or(0)));
            }
            Some("memory") => {
                let (id, text) = (s("id")?, s("text")?);
                let store = r["conversation"].as_str().unwrap_or("").to_string();
                let pieces = split_long(&text, MAX_CHARS);
                let many = pieces.len() > 1;
                for (k, piece) in pieces.into_iter().enumerate() {
                    let pid = if many { format!("{id}#{}", k + 1) } else { id.clone() };
                    set.memories.push(Memory { id: pid, text: piece, unit: id.clone(), store: store.clone() });
                }
                units += 1;
            }
            Some("query") => {
                let gold: Vec<String> = r["gold"]
                    .as_array()
                    .map(|g| g.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
                    .unwrap_or_default();
                if gold.is_empty() {
                    return Err(at("a query without gold".into()));
                }
                let store = r["conversation"].as_str().unwrap_or("").to_string();
                let kind = match (r["category"].as_u64(), r["kind"].as_str()) {
                    (Some(1), _) => "multi-hop",
                    (Some(2), _) => "temporal",
                    (Some(3), _) => "open-domain",
                    (Some(4), _) => "single-hop",
                    (Some(c), _) => return Err(at(format!("unknown category {c}"))),
                    (None, Some(k)) => k,
                    (None, None) => "",
                };
                set.queries.push(Query { id: s("id")?, question: s("question")?, gold, store, kind: kind.into() });
            }
            other => return Err(at(format!("unknown type {other:?}"))),
        }
    }
    let want = counts.ok_or_else(|| format!("{}: no meta line", path.display()))?;
    let got = (units, set.queries.len() as u64);
    if got != want {
        return Err(format!("{}: {got:?} (memories, queries), meta says {want:?}", path.display()));
    }
    let units: HashMap<(&str, &str), ()> =
        set.memories.iter().map(|m| ((m.unit.as_str(), m.store.as_str()), ())).collect();
    if let Some(q) =
        set.queries.iter().find(|q| q.gold.iter().any(|g| !units.contains_key(&(g.as_str(), q.store.as_str()))))
    {
        return Err(format!("{}: query {} has a gold id that is not a memory of its store", path.display(), q.id));
    }
    Ok(set)
}

impl Devset {
    /// Per query, the indexes (into `memories`) that count as gold, as score.py
    /// counts them by default: the pieces of the gold units and every memory of
    /// the same store whose text equals a gold memory's text.
    pub fn gold_indexes(&self) -> Vec<Vec<usize>> {
        let mut by_unit: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
        let mut by_text: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
        for (i, m) in self.memories.iter().enumerate() {
            by_unit.entry((&m.unit, &m.store)).or_default().push(i);
            by_text.entry((&m.text, &m.store)).or_default().push(i);
        }
        self.queries
            .iter()
            .map(|q| {
                let mut g: Vec<usize> = q
                    .gold
                    .iter()
                    .flat_map(|id| &by_unit[&(id.as_str(), q.store.as_str())])
                    .flat_map(|&i| &by_text[&(self.memories[i].text.as_str(), q.store.as_str())])
                    .copied()
                    .collect();
                g.sort_unstable();
                g.dedup();
                g
            })
            .collect()
    }

    /// The stores, in order of first appearance: (store, indexes of its memories,
    /// indexes of its queries).
    pub fn stores(&self) -> Vec<(String, Vec<usize>, Vec<usize>)> {
        let mut out: Vec<(String, Vec<usize>, Vec<usize>)> = Vec::new();
        let mut at: HashMap<&str, usize> = HashMap::new();
        let stores =
            self.memories.iter().map(|m| (&m.store, true)).chain(self.queries.iter().map(|q| (&q.store, false)));
        for (i, (store, is_memory)) in stores.enumerate() {
            let s = *at.entry(store).or_insert_with(|| {
                out.push((store.clone(), Vec::new(), Vec::new()));
                out.len() - 1
            });
            if is_memory {
                out[s].1.push(i);
            } else {
                out[s].2.push(i - self.memories.len());
            }
        }
        out
    }
}

/// A text cut into pieces of at most `max` characters, as a caller should cut a
/// text over robotmem's limit: greedily packed whole sentences (ending in `.`,
/// `!`, `?`, `。`, `！`, `？` or a closing `]` before a space), a sentence still
/// too long by clauses (after `,` `;` `:` `，` `；`), then by words, then by
/// characters. Whitespace at the cuts is trimmed; a text within the limit is
/// returned whole.
pub fn split_long(text: &str, max: usize) -> Vec<String> {
    let text = text.trim();
    if text.chars().count() <= max {
        return vec![text.to_string()];
    }
    let ends: [&[char]; 3] = [&['.', '!', '?', '。', '！', '？', ']'], &[',', ';', ':', '，', '；'], &[' ']];
    let mut out = Vec::new();
    for part in cut_after(text, ends[0]) {
        pack(&part, max, &ends[1..], &mut out);
    }
    // Pieces of consecutive short parts packed together where they fit.
    let mut packed: Vec<String> = Vec::new();
    for p in out {
        match packed.last_mut() {
            Some(last) if last.chars().count() + 1 + p.chars().count() <= max => {
                last.push(' ');
                last.push_str(&p);
            }
            _ => packed.push(p),
        }
    }
    packed
}

/// `text` cut after each character of `ends` that a space or the end follows
/// (for CJK marks: after every one), each part trimmed, empty parts left out.
fn cut_after(text: &str, ends: &[char]) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        cur.push(c);
        let cjk = matches!(c, '。' | '！' | '？' | '，' | '；');
        if ends.contains(&c) && (cjk || chars.peek().is_none_or(|n| n.is_whitespace())) {
            parts.push(std::mem::take(&mut cur));
        }
    }
    parts.push(cur);
    parts.into_iter().map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect()
}

/// Pushes `part` to `out` whole if it fits, else cut by the first of `finer`
/// that cuts it (packing the pieces greedily), else by characters.
fn pack(part: &str, max: usize, finer: &[&[char]], out: &mut Vec<String>) {
    if part.chars().count() <= max {
        out.push(part.to_string());
        return;
    }
    let Some((ends, rest)) = finer.split_first() else {
        let chars: Vec<char> = part.chars().collect();
        out.extend(chars.chunks(max).map(|c| c.iter().collect::<String>().trim().to_string()));
        return;
    };
    let mut cur = String::new();
    for piece in cut_after(part, ends) {
        if !cur.is_empty() && cur.chars().count() + 1 + piece.chars().count() > max {
            out.push(std::mem::take(&mut cur));
        }
        if piece.chars().count() > max {
            pack(&piece, max, rest, out);
            continue;
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(&piece);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
}
