//! Loader of the real-text development sets in `../shared/data` (beside the
//! repository; see the README.md there for provenance, licence, format and the
//! reference scorer `score.py`): gzip'd JSON Lines, a `meta` line, then every
//! `memory` (one sentence of a SQuAD v1.1 / CMRC 2018 dev context) and every
//! `query` (a question with the ids of its gold sentences).
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
pub const SETS: &[(&str, &str)] =
    &[("squad", "squad-dev-sentences.jsonl.gz"), ("cmrc", "cmrc2018-dev-sentences.jsonl.gz")];

pub struct Memory {
    pub id: String,
    pub text: String,
}

pub struct Query {
    pub id: String,
    pub question: String,
    /// Ids of the memories holding the answer (at least one).
    pub gold: Vec<String>,
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

/// The path of set `name` (`squad` or `cmrc`), whether or not it exists.
pub fn path(name: &str) -> Result<PathBuf, String> {
    let file = SETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| *f)
        .ok_or_else(|| format!("unknown set {name:?} (expected squad or cmrc)"))?;
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
            Some("memory") => set.memories.push(Memory { id: s("id")?, text: s("text")? }),
            Some("query") => {
                let gold: Vec<String> = r["gold"]
                    .as_array()
                    .map(|g| g.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
                    .unwrap_or_default();
                if gold.is_empty() {
                    return Err(at("a query without gold".into()));
                }
                set.queries.push(Query { id: s("id")?, question: s("question")?, gold });
            }
            other => return Err(at(format!("unknown type {other:?}"))),
        }
    }
    let want = counts.ok_or_else(|| format!("{}: no meta line", path.display()))?;
    let got = (set.memories.len() as u64, set.queries.len() as u64);
    if got != want {
        return Err(format!("{}: {got:?} (memories, queries), meta says {want:?}", path.display()));
    }
    let ids: HashMap<&str, ()> = set.memories.iter().map(|m| (m.id.as_str(), ())).collect();
    if let Some(q) = set.queries.iter().find(|q| q.gold.iter().any(|g| !ids.contains_key(g.as_str()))) {
        return Err(format!("{}: query {} has an unknown gold id", path.display(), q.id));
    }
    Ok(set)
}

impl Devset {
    /// Per query, the indexes (into `memories`) that count as gold, as score.py
    /// counts them by default: the gold ids and every memory whose text equals a
    /// gold memory's text.
    pub fn gold_indexes(&self) -> Vec<Vec<usize>> {
        let mut index: HashMap<&str, usize> = HashMap::new();
        let mut by_text: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, m) in self.memories.iter().enumerate() {
            index.insert(&m.id, i);
            by_text.entry(&m.text).or_default().push(i);
        }
        self.queries
            .iter()
            .map(|q| {
                let mut g: Vec<usize> = q
                    .gold
                    .iter()
                    .flat_map(|id| by_text[self.memories[index[id.as_str()]].text.as_str()].iter().copied())
                    .collect();
                g.sort_unstable();
                g.dedup();
                g
            })
            .collect()
    }
}
