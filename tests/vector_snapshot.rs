//! Issue 29: the vector index is stored with the other index snapshots (a
//! header row and part rows of 1,024 vectors) and loaded at the next open
//! instead of being rebuilt from every vector in sqlite-vec. Like the other
//! snapshots it is used only by the rows, database, save and model it was made
//! for: swapped parts, rows from another file, a part left from an earlier save,
//! damaged or cut rows, and a snapshot of another model's vectors are rebuilt
//! (every hybrid recall equals what an index rebuilt from sqlite-vec returns) and
//! replaced at the next close.

mod model;

#[path = "common/scratch.rs"]
mod scratch;
use std::path::Path;

use robotmem::*;

type Hits = Vec<Vec<(i64, u64, Option<u64>)>>;

/// Enough memories for two part rows.
const MEMORIES: u64 = 1_300;

fn text(i: u64) -> String {
    let what = ["grasped the red mug", "pushed the blue box", "docked at the charger", "dropped the paper cup"];
    let place = ["kitchen", "lab", "loading bay", "hallway", "office"];
    format!("robot {} {} in the {} on shift {}", i % 17, what[(i % 4) as usize], place[(i % 5) as usize], i / 7)
}

fn learn(db: &Db, from: u64, count: u64) {
    let texts: Vec<String> = (from..from + count).map(text).collect();
    for chunk in texts.chunks(100) {
        let reqs: Vec<LearnRequest> = chunk.iter().map(|t| LearnRequest { insight: t, ..Default::default() }).collect();
        db.learn_batch(&reqs).unwrap();
    }
}

fn recalls(db: &Db) -> Hits {
    ["mug grasp", "charging the battery", "carton shoved across the floor", "coffee cup fell"]
        .iter()
        .map(|q| {
            let r = db.recall(&RecallRequest { query: q, n: 20, ..Default::default() }).unwrap();
            assert!(matches!(r.mode, SearchMode::Hybrid | SearchMode::VecOnly), "{q}: {:?}", r.mode);
            r.hits.iter().map(|h| (h.memory.id, h.score.to_bits(), h.cosine.map(f64::to_bits))).collect()
        })
        .collect()
}

fn open(m: &model::Model, p: &Path) -> Db {
    Db::open(m.options(p)).unwrap()
}

fn sql(p: &Path, statement: &str) {
    rusqlite::Connection::open(p).unwrap().execute_batch(statement).unwrap();
}

/// The stored vector rows: (name, rev, data), by name.
fn rows(p: &Path) -> Vec<(String, i64, Vec<u8>)> {
    let c = rusqlite::Connection::open(p).unwrap();
    let mut st =
        c.prepare("SELECT name, rev, data FROM index_snapshots WHERE name GLOB 'vector*' ORDER BY name").unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(|r| r.unwrap()).collect()
}

/// What an index rebuilt from sqlite-vec recalls.
fn rebuilt(m: &model::Model, p: &Path) -> Hits {
    let copy = p.with_extension("rebuilt.db");
    let _ = std::fs::remove_file(&copy);
    rusqlite::Connection::open(p).unwrap().execute("VACUUM INTO ?1", [copy.to_str().unwrap()]).unwrap();
    sql(&copy, "DELETE FROM index_snapshots");
    let db = open(m, &copy);
    let out = recalls(&db);
    std::mem::forget(db); // no snapshot of its own
    let _ = std::fs::remove_file(&copy);
    out
}

/// A closed file whose snapshots hold the vector index.
fn make(m: &model::Model, p: &Path, from: u64) {
    let db = open(m, p);
    learn(&db, from, MEMORIES);
    let _ = recalls(&db);
    db.close().unwrap();
}

/// The default model and a closed file made with it in a scratch directory
/// (`None`: no model, the test is skipped).
fn made(test: &str) -> Option<(model::Model, scratch::Scratch, std::path::PathBuf)> {
    let m = model::default_model(test)?;
    let d = scratch::Scratch::new("vsnap");
    let p = d.db();
    make(&m, &p, 0);
    Some((m, d, p))
}

/// A handle that opens `p`, recalls and closes: its recalls, and whether the
/// close rewrote the vector rows (it does when it did not trust them).
fn reopen(m: &model::Model, p: &Path) -> (Hits, bool) {
    let before = rows(p);
    let db = open(m, p);
    let out = recalls(&db);
    db.close().unwrap();
    (out, rows(p) != before)
}

/// Recalls equal a rebuild; the close replaces the rows, which the next handle trusts.
fn assert_rebuilt(m: &model::Model, p: &Path, what: &str) {
    let want = rebuilt(m, p);
    let (got, rewritten) = reopen(m, p);
    assert_eq!(got, want, "{what}: a reopened handle");
    assert!(rewritten, "{what}: the rows are replaced at close");
    let (got, rewritten) = reopen(m, p);
    assert_eq!(got, want, "{what}: after the rows were saved again");
    assert!(!rewritten, "{what}: the rows saved again are trusted");
}

#[test]
fn reopened_file_loads_the_stored_vector_index() {
    let Some((m, _dir, p)) = made("reopened_file_loads_the_stored_vector_index") else { return };
    let names: Vec<String> = rows(&p).into_iter().map(|r| r.0).collect();
    assert_eq!(names, ["vector", "vector part 0", "vector part 1"]);
    let want = rebuilt(&m, &p);
    let (got, rewritten) = reopen(&m, &p);
    assert_eq!(got, want);
    assert!(!rewritten, "a loaded snapshot with nothing changed is not written again");
    // Behind the file: brought up to date, and stored again once enough changed.
    let db = open(&m, &p);
    learn(&db, 10_000, 300);
    db.forget(3, "test").unwrap();
    let want = recalls(&db);
    db.close().unwrap();
    let revs: Vec<i64> = rows(&p).into_iter().map(|r| r.1).collect();
    assert!(revs.windows(2).all(|w| w[0] == w[1]), "one save: {revs:?}");
    let (got, _) = reopen(&m, &p);
    assert_eq!(got, want);
    assert_eq!(rebuilt(&m, &p), want);
}

#[test]
fn swapped_damaged_and_cut_rows_are_rebuilt() {
    let Some((m, _dir, p)) = made("swapped_damaged_and_cut_rows_are_rebuilt") else { return };
    let swap = "UPDATE index_snapshots SET data = CASE name
            WHEN 'vector part 0' THEN (SELECT data FROM index_snapshots WHERE name = 'vector part 1')
            ELSE (SELECT data FROM index_snapshots WHERE name = 'vector part 0') END
         WHERE name IN ('vector part 0', 'vector part 1')";
    let cases = [
        ("two parts swapped", swap.to_string()),
        ("a part cut", "UPDATE index_snapshots SET data = substr(data, 1, 5000) WHERE name = 'vector part 1'".into()),
        ("the header cut", "UPDATE index_snapshots SET data = substr(data, 1, 20) WHERE name = 'vector'".into()),
        ("a part gone", "DELETE FROM index_snapshots WHERE name = 'vector part 0'".into()),
    ];
    for (what, statement) in cases {
        sql(&p, &statement);
        assert_rebuilt(&m, &p, what);
    }
    // One code flipped in a part (a recall would score that memory differently).
    let c = rusqlite::Connection::open(&p).unwrap();
    let mut data: Vec<u8> =
        c.query_row("SELECT data FROM index_snapshots WHERE name = 'vector part 1'", [], |r| r.get(0)).unwrap();
    let at = data.len() - 700;
    data[at] ^= 0x40;
    c.execute("UPDATE index_snapshots SET data = ?1 WHERE name = 'vector part 1'", [data]).unwrap();
    drop(c);
    assert_rebuilt(&m, &p, "a flipped byte");
}

#[test]
fn parts_of_an_earlier_save_or_another_file_are_rebuilt() {
    let Some((m, d, p)) = made("parts_of_an_earlier_save_or_another_file_are_rebuilt") else { return };
    let earlier = rows(&p);
    let db = open(&m, &p);
    learn(&db, 20_000, 300);
    db.close().unwrap();
    let (name, rev, data) = &earlier[2];
    let c = rusqlite::Connection::open(&p).unwrap();
    // The earlier part with its own rev, then with the header's rev.
    c.execute("UPDATE index_snapshots SET data = ?2, rev = ?3 WHERE name = ?1", rusqlite::params![name, data, rev])
        .unwrap();
    drop(c);
    assert_rebuilt(&m, &p, "a part of an earlier save");
    let header_rev = rows(&p)[0].1;
    sql(&p, &format!("UPDATE index_snapshots SET rev = {header_rev} WHERE name = '{name}'"));
    let c = rusqlite::Connection::open(&p).unwrap();
    c.execute("UPDATE index_snapshots SET data = ?2 WHERE name = ?1", rusqlite::params![name, data]).unwrap();
    drop(c);
    assert_rebuilt(&m, &p, "a part of an earlier save at the header's rev");
    // Every vector row from another database of the same model.
    let other = d.join("other.db");
    make(&m, &other, 50_000);
    let c = rusqlite::Connection::open(&p).unwrap();
    c.execute("ATTACH ?1 AS src", [other.to_str().unwrap()]).unwrap();
    c.execute_batch(
        "UPDATE index_snapshots SET data = (SELECT s.data FROM src.index_snapshots s WHERE s.name = index_snapshots.name)
         WHERE name IN (SELECT name FROM src.index_snapshots WHERE name GLOB 'vector*')",
    )
    .unwrap();
    drop(c);
    assert_rebuilt(&m, &p, "rows of another database");
}

#[test]
fn a_snapshot_of_another_model_is_not_used() {
    let name = "a_snapshot_of_another_model_is_not_used";
    let (Some(use_), Some(minilm)) = (model::default_model(name), model::english(name)) else { return };
    let d = scratch::Scratch::new("vsnap-model");
    let p = d.db();
    make(&use_, &p, 0);
    let db = open(&minilm, &p);
    db.reembed(0).unwrap();
    db.close().unwrap(); // no recall: the rows stored are still the first model's
    let formats = |p: &Path| -> Vec<String> {
        let c = rusqlite::Connection::open(p).unwrap();
        let mut st = c.prepare("SELECT format FROM index_snapshots WHERE name GLOB 'vector*'").unwrap();
        st.query_map([], |r| r.get(0)).unwrap().map(|r| r.unwrap()).collect()
    };
    assert!(formats(&p).iter().all(|f| f.contains("use-multilingual")), "{:?}", formats(&p));
    let want = rebuilt(&minilm, &p);
    let (got, rewritten) = reopen(&minilm, &p);
    assert_eq!(got, want, "the other model's snapshot is not used");
    assert!(rewritten);
    assert!(formats(&p).iter().all(|f| f.contains("all-MiniLM")), "{:?}", formats(&p));
    assert_eq!(reopen(&minilm, &p), (want, false));
    // Back to the first model: its vectors are made again, none from its old snapshot.
    let db = open(&use_, &p);
    db.reembed(0).unwrap();
    db.close().unwrap();
    assert_eq!(reopen(&use_, &p).0, rebuilt(&use_, &p));
}

#[test]
fn open_loads_the_indexes_while_the_model_loads() {
    let Some((m, _dir, p)) = made("open_loads_the_indexes_while_the_model_loads") else { return };
    let want = rebuilt(&m, &p);
    let count = |sql: &str| -> usize {
        rusqlite::Connection::open(&p).unwrap().query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap() as usize
    };
    let (active, vectors) = (
        count("SELECT count(*) FROM memories WHERE status = 'active'"),
        count("SELECT count(*) FROM memories WHERE embedded = 1"),
    );
    assert!(active > MEMORIES as usize / 2 && vectors >= active, "{active} active, {vectors} vectors");
    // With the model: both indexes are in memory when open returns, before any call.
    let db = open(&m, &p);
    assert_eq!(db.loaded_indexes(), (active, vectors));
    assert_eq!(recalls(&db), want);
    db.close().unwrap();
    // Without it nothing is loaded ahead (the first call that needs an index does it).
    let mut o = m.options(&p);
    o.embeddings = false;
    let db = Db::open(o).unwrap();
    assert_eq!(db.loaded_indexes(), (0, 0));
    db.close().unwrap();
    // A file whose vectors are another model's: the text index is loaded, the vector
    // index of the stamped model too, and the handle's own model then reloads it.
    sql(&p, "UPDATE robotmem_meta SET value = 'other-model/512/00' WHERE key = 'embed_model'");
    let db = open(&m, &p);
    assert_eq!(db.loaded_indexes().0, active);
    assert_eq!(db.embedding_status().unwrap().state, EmbeddingState::ModelMismatch);
    db.close().unwrap();
}
