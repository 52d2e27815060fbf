//! Shared by the command's benches: a memory file of N memories of real text
//! (every sentence of the SQuAD dev set in ../shared/data, repeated in passes
//! with a pass word, as the workload bench's real-text mode does; BM25 only, or
//! with the model of `--model-dir`; `Durability::Normal`), kept at `--db PATH` (default target/tmp/<bench>-bench-N.db)
//! to be reused.

#[path = "../../tests/devsets/load.rs"]
pub mod load;
#[path = "../../benches/workload/realtext/texts.rs"]
mod texts;

use std::path::PathBuf;
use std::time::Instant;

use robotmem::{Db, Durability, LearnRequest, OpenOptions};

/// The value after `name` on the command line.
pub fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

/// The p-quantile of sorted values.
pub fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// The SQuAD dev set and a file holding `n` memories of its text (learned now
/// if the file is empty); `Err` when the data set is missing.
pub fn filled(n: usize, bench: &str) -> Result<(load::Devset, PathBuf), String> {
    if std::env::var_os("ROBOTMEM_DEVSETS").is_none() {
        // The loader's default is relative to the library crate; this is cli/.
        std::env::set_var("ROBOTMEM_DEVSETS", concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data"));
    }
    let set = load::load("squad")?;
    let db_path = arg("--db").map(PathBuf::from).unwrap_or_else(|| {
        let kind = if model().is_some() { "-hybrid" } else { "" };
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../target/tmp/{bench}{kind}-bench-{n}.db"))
    });
    std::fs::create_dir_all(db_path.parent().unwrap()).unwrap();
    let corpus: Vec<String> = set.memories.iter().map(|m| m.text.clone()).collect();
    let db = Db::open(options(&db_path)).unwrap();
    if model().is_some() {
        let st = db.embedding_status().unwrap();
        if st.state != robotmem::EmbeddingState::Ready {
            return Err(format!(
                "--model-dir: the model is not usable ({}); cargo runs benches in cli/, give an absolute path",
                st.reason
            ));
        }
    }
    if db.stats().unwrap().memories == 0 {
        let started = Instant::now();
        let mut t = texts::Texts::new(&corpus, n);
        let all: Vec<String> = (0..n).map(|i| t.text(i)).collect();
        for chunk in all.chunks(500) {
            let reqs: Vec<LearnRequest> =
                chunk.iter().map(|x| LearnRequest { insight: x, ..Default::default() }).collect();
            db.learn_batch(&reqs).unwrap();
        }
        eprintln!("learned {n} memories in {:.1} s ({})", started.elapsed().as_secs_f64(), t.describe());
    }
    let s = db.stats().unwrap();
    eprintln!(
        "file {}: {} memories ({} active), {:.1} MiB",
        db_path.display(),
        s.memories,
        s.active,
        s.db_bytes as f64 / 1048576.0
    );
    db.close().unwrap();
    Ok((set, db_path))
}

/// `--model-dir DIR` (and `--ort-library FILE`, default the provisioned one): the
/// model the benches embed with; none: BM25 only.
pub fn model() -> Option<(PathBuf, PathBuf)> {
    let dir = PathBuf::from(arg("--model-dir")?);
    let ort = arg("--ort-library").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.cache/models/onnxruntime/libonnxruntime.so")
    });
    Some((dir, ort))
}

/// The command-line options that open the file as [`options`] does.
pub fn cli_args() -> Vec<String> {
    let mut a: Vec<String> = match model() {
        Some((dir, ort)) => {
            vec!["--model-dir".into(), dir.display().to_string(), "--ort-library".into(), ort.display().to_string()]
        }
        None => vec!["--no-embeddings".into()],
    };
    a.extend(["--durability".into(), "normal".into()]);
    a
}

/// How the benches open the file: the `--model-dir` model or BM25 only, normal durability.
pub fn options(path: &std::path::Path) -> OpenOptions {
    let mut o = OpenOptions::path(path);
    match model() {
        Some((dir, ort)) => {
            o.model_dir = Some(dir);
            o.ort_library = Some(ort);
        }
        None => o.embeddings = false,
    }
    o.durability = Durability::Normal;
    o
}
