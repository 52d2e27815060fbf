//! Fusion tuning dumps: for each query, the candidates hybrid fusion would see
//! at n = 10 (the top `DEPTH` memories by BM25 share and the top `DEPTH` by
//! cosine), each with both signals, so `scripts/loso-fusion.py` can score any
//! fusion setting offline without re-running recall. The two lists come from two
//! handles on the learned file whose fusion is overridden to rank by one signal
//! alone (cosine floor −1: every neighbour counts).

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;

use robotmem::{Db, FusionConfig, OpenOptions, RecallRequest};

/// A candidate's lexical share, cosine, rank by lexical share, rank by cosine and
/// the share of CJK characters in its text.
type Signals = (Option<f64>, Option<f64>, Option<usize>, Option<usize>, f64);

/// The share of CJK ideographs among a text's letters, as hybrid fusion counts it.
pub use robotmem::internals::text::cjk_share;

/// Entries per list of a recall with n = 10 (`search::recall::hybrid::fusion_depth(10)`).
pub const DEPTH: usize = 40;

/// Where to write dumps (`ROBOTMEM_FUSION_DUMP=DIR`), if asked.
pub fn dir() -> Option<PathBuf> {
    std::env::var_os("ROBOTMEM_FUSION_DUMP").map(PathBuf::from)
}

/// The two single-signal handles on the file `opts` opens.
pub struct Tuner {
    lexical: Db,
    cosine: Db,
    out: std::fs::File,
}

impl Tuner {
    /// Opens the dump `file` (appended to when `append`: a set of several stores).
    pub fn open(opts: &OpenOptions, file: &str, append: bool) -> Tuner {
        let by = |w| Db::open(OpenOptions { fusion: Some(FusionConfig::new(w, -1.0, 1.0)), ..opts.clone() }).unwrap();
        let d = dir().expect("ROBOTMEM_FUSION_DUMP");
        std::fs::create_dir_all(&d).unwrap();
        let path = d.join(file);
        eprintln!("fusion dump: {}", path.display());
        let out = if append {
            std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap()
        } else {
            std::fs::File::create(path).unwrap()
        };
        Tuner { lexical: by(1.0), cosine: by(0.0), out }
    }

    /// Writes one line: `{"q": id, "kind": kind, "qcjk": CJK share of the query,
    /// "c": [[memory id, lexical, cosine, lexical rank, cosine rank, gold, CJK
    /// share of the memory], ...]}` (null for a missing signal or rank).
    pub fn dump(&mut self, id: &str, kind: &str, query: &str, gold: impl Fn(i64) -> bool) {
        let mut c: HashMap<i64, Signals> = HashMap::new();
        for (db, by_lexical) in [(&self.lexical, true), (&self.cosine, false)] {
            let r = db.recall(&RecallRequest { query, n: DEPTH as i64, ..Default::default() }).unwrap();
            let mut rank = 0;
            for h in &r.hits {
                let e = c.entry(h.memory.id).or_insert((h.lexical, h.cosine, None, None, cjk_share(&h.memory.content)));
                // A memory without the ranking signal only fills the list.
                if by_lexical && h.lexical.is_some() {
                    e.2 = Some(rank);
                    rank += 1;
                } else if !by_lexical && h.cosine.is_some() {
                    e.3 = Some(rank);
                    rank += 1;
                }
            }
        }
        let mut rows: Vec<_> = c.into_iter().collect();
        rows.sort_by_key(|(id, _)| *id);
        let rows: Vec<_> = rows
            .into_iter()
            .map(|(m, (l, cos, lr, cr, cjk))| serde_json::json!([m, l, cos, lr, cr, gold(m) as u8, cjk]))
            .collect();
        let line = serde_json::json!({"q": id, "kind": kind, "qcjk": cjk_share(query), "c": rows});
        writeln!(self.out, "{line}").unwrap();
    }
}
