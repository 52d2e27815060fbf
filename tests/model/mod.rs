//! Locates the provisioned embedding model and ONNX Runtime for the tests that
//! need them (`scripts/fetch-model.sh` lays them out under `.cache/models`).
//! Missing: the test is skipped with a loud SKIPPED line on stderr, unless
//! ROBOTMEM_REQUIRE_MODEL=1 (set by scripts/test.sh, so CI fails instead).

#![allow(dead_code)]

use std::path::PathBuf;

use robotmem::OpenOptions;

pub struct Model {
    pub dir: PathBuf,
    pub runtime: PathBuf,
    pub root: PathBuf,
}

/// The default model: Universal Sentence Encoder multilingual v3, int8 (16
/// languages, Chinese and cross-lingual queries; docs/QUALITY.md).
pub fn default_model(test: &str) -> Option<Model> {
    named(test, "use-multilingual-v3-int8")
}

/// The English option: all-MiniLM-L6-v2 int8. Chinese texts are mostly unknown
/// tokens to it, so the tests of texts a model cannot represent use it.
pub fn english(test: &str) -> Option<Model> {
    named(test, "all-MiniLM-L6-v2-int8")
}

pub fn named(test: &str, name: &str) -> Option<Model> {
    let root = std::env::var_os("ROBOTMEM_TEST_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".cache/models"));
    let m = Model { dir: root.join(name), runtime: root.join("onnxruntime/libonnxruntime.so"), root: root.clone() };
    if m.dir.join("model.onnx").is_file() && m.runtime.is_file() {
        return Some(m);
    }
    let why = format!("no model under {} (run scripts/fetch-model.sh)", root.display());
    if std::env::var("ROBOTMEM_REQUIRE_MODEL").as_deref() == Ok("1") {
        panic!("{test}: {why}, and ROBOTMEM_REQUIRE_MODEL=1");
    }
    eprintln!("SKIPPED {test}: {why}");
    None
}

impl Model {
    /// Options for a database at `path` with this model.
    pub fn options(&self, path: impl Into<PathBuf>) -> OpenOptions {
        let mut o = OpenOptions::path(path);
        o.model_dir = Some(self.dir.clone());
        o.ort_library = Some(self.runtime.clone());
        o.durability = robotmem::Durability::Normal;
        o
    }
}

/// A handle without a working model still learns (no vector) and recalls by BM25:
/// one memory learned into `db` (empty before) and found again; what learn said.
pub fn assert_learns_and_recalls_bm25_only(db: &robotmem::Db) -> robotmem::LearnOutcome {
    use robotmem::{LearnRequest, RecallRequest, SearchMode};
    let learned = db
        .learn(&LearnRequest { insight: "lidar gets confused by glass walls in the lobby", ..Default::default() })
        .unwrap();
    assert!(!learned.has_embedding);
    let r = db.recall(&RecallRequest { query: "lidar glass", ..Default::default() }).unwrap();
    assert_eq!((r.mode, r.hits.len()), (SearchMode::Bm25Only, 1));
    learned
}
