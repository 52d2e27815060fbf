//! The in-process vector index against sqlite-vec, with the real model: the
//! same neighbours as sqlite-vec's exact KNN (up to the int8 codes' error), loaded from sqlite-vec's chunk
//! tables, kept in sync with other handles' writes, and transactions' own
//! vectors visible to their dedup before commit.

mod model;

#[path = "common/scratch.rs"]
mod scratch;
use robotmem::internals::embed::{self, Embedder, TextKind};
use robotmem::internals::search::vector::VectorIndex;
use robotmem::internals::store::{vectors, Store};
use robotmem::*;

fn temp(name: &str) -> scratch::Scratch {
    scratch::Scratch::new(&format!("vindex-{name}"))
}

const SUBJECTS: [&str; 12] = [
    "the gripper",
    "the lidar",
    "the arm",
    "the base",
    "the camera",
    "the wrist torque sensor",
    "the vacuum cup",
    "the charging dock",
    "the conveyor",
    "the left wheel",
    "the depth sensor",
    "the e-stop",
];
const EVENTS: [&str; 10] = [
    "slipped on a wet mug",
    "lost track near the glass door",
    "overheated after a long shift",
    "needed recalibration after the bump",
    "worked well on the metal shelf",
    "stalled on the ramp",
    "misread the bin label",
    "drifted during the night",
    "got stuck under the table",
    "refused the heavy box",
];
const PLACES: [&str; 6] =
    ["in the kitchen", "at the loading bay", "in the lab", "near the stairs", "in the lobby", "by the sink"];

fn corpus() -> Vec<String> {
    let mut out = Vec::new();
    for (i, s) in SUBJECTS.iter().enumerate() {
        for (j, e) in EVENTS.iter().enumerate() {
            out.push(format!("{s} {e} {}", PLACES[(i + j) % PLACES.len()]));
        }
    }
    out
}

fn learn_all(db: &Db, texts: &[String]) -> Vec<i64> {
    let reqs: Vec<LearnRequest> = texts.iter().map(|t| LearnRequest { insight: t, ..Default::default() }).collect();
    db.learn_batch(&reqs).unwrap().into_iter().map(|o| o.memory_id).collect()
}

/// The index's and sqlite-vec's top `k`: the i-th of each scores the same, up to
/// the int8 codes' error (a re-scored cosine is within 2e-3 of the exact one, so
/// neighbours nearer to each other than that may trade places).
fn assert_same_neighbours(store: &Store, index: &VectorIndex, e: &dyn Embedder, queries: &[&str], k: usize) {
    for q in queries {
        let v = match e.embed(&[q], TextKind::Query).unwrap().pop().unwrap() {
            embed::Embedding::Vector(v) => v,
            embed::Embedding::Unrepresentable => panic!("{q} not representable"),
        };
        let near = index.nearest(e.stamp(), "default", &v, k).expect("index holds the model's vectors");
        let exact = store.read(|c| vectors::knn(c, "default", &v, k)).unwrap();
        assert_eq!(near.len(), exact.len(), "{q}");
        for (i, ((cos, _), (_, d))) in near.iter().zip(&exact).enumerate() {
            let want = vectors::cosine_from_l2(*d) as f32;
            assert!((cos - want).abs() < 2e-3, "{q}: rank {i}: index {cos} vs sqlite-vec {want}");
        }
    }
}

const QUERIES: [&str; 5] = [
    "slippery cups make the hand lose its grip",
    "laser scanner confused by transparent walls",
    "robot base cannot climb the slope",
    "battery station location",
    "camera needs a new calibration",
];

#[test]
fn index_ranks_as_sqlite_vec_and_follows_other_handles() {
    let Some(m) = model::default_model("vindex") else { return };
    let dir = temp("same");
    let path = dir.db();
    let opts = m.options(&path);
    let writer = Db::open(opts.clone()).unwrap();
    let ids = learn_all(&writer, &corpus());
    let e = embed::load(&opts.embed_settings()).unwrap();
    let store = Store::open(&opts).unwrap();
    let index = VectorIndex::default();
    assert!(index.nearest(e.stamp(), "default", &[0.0; 384], 1).is_none(), "nothing before the first sync");

    // First sync: loaded from sqlite-vec's chunk tables.
    store.read(|c| index.sync(c, e.stamp())).unwrap();
    let stored: i64 = store.read(|c| Ok(c.query_row("SELECT count(*) FROM memory_vec", [], |r| r.get(0))?)).unwrap();
    assert_eq!((index.len(), stored), (ids.len(), ids.len() as i64));
    for k in [1, 10, 40] {
        assert_same_neighbours(&store, &index, e.as_ref(), &QUERIES, k);
    }

    // Another handle's writes: a few are applied row by row (forget, update, learn).
    writer.forget(ids[0], "test").unwrap();
    writer.update(ids[1], "the lidar is blinded by sunlight through the skylight", None).unwrap();
    learn_all(&writer, &["the mop robot leaves streaks on the marble floor".to_string()]);
    store.read(|c| index.sync(c, e.stamp())).unwrap();
    assert_eq!(index.len(), ids.len());
    assert!(index.vector(ids[0]).is_none(), "forgotten");
    assert_same_neighbours(&store, &index, e.as_ref(), &QUERIES, 10);
    assert_same_neighbours(&store, &index, e.as_ref(), &["sun glare blinds the laser", "floor cleaning marks"], 3);

    // Many at once (more than RELOAD_AT = 128): reloaded in one pass.
    let more: Vec<String> =
        corpus().iter().flat_map(|t| [format!("yesterday {t}"), format!("last week {t}")]).collect();
    learn_all(&writer, &more);
    store.read(|c| index.sync(c, e.stamp())).unwrap();
    let stored: i64 = store.read(|c| Ok(c.query_row("SELECT count(*) FROM memory_vec", [], |r| r.get(0))?)).unwrap();
    assert_eq!(index.len() as i64, stored);
    assert_same_neighbours(&store, &index, e.as_ref(), &QUERIES, 40);
}

#[test]
fn handles_on_one_file_recall_each_others_memories() {
    let Some(m) = model::default_model("vindex-handles") else { return };
    let dir = temp("handles");
    let path = dir.db();
    let a = Db::open(m.options(&path)).unwrap();
    let b = Db::open(m.options(&path)).unwrap();
    let ask = |db: &Db, q: &str| db.recall(&RecallRequest { query: q, n: 3, ..Default::default() }).unwrap();
    learn_all(&a, &corpus());
    assert!(ask(&b, "slippery cups make the hand lose its grip").hits[0].memory.content.contains("wet mug"));
    let id = b
        .learn(&LearnRequest { insight: "the elevator door closes too fast for the robot", ..Default::default() })
        .unwrap()
        .memory_id;
    let r = ask(&a, "lift doors shut before the machine gets in");
    assert_eq!((r.hits[0].memory.id, r.mode), (id, SearchMode::Hybrid));
    b.update(id, "the freight lift is out of service on weekends", None).unwrap();
    assert_eq!(ask(&a, "cargo elevator unavailable saturday").hits[0].memory.id, id);
    b.forget(id, "test").unwrap();
    assert!(ask(&a, "cargo elevator unavailable saturday").hits.iter().all(|h| h.memory.id != id));
}

#[test]
fn a_batch_dedups_against_its_own_earlier_items() {
    let Some(m) = model::default_model("vindex-batch") else { return };
    let dir = temp("batch");
    let db = Db::open(m.options(dir.db())).unwrap();
    learn_all(&db, &corpus());
    let items = ["Gripper slipped on wet cups in the dish room", "the gripper slipped on a wet cup in dish room"];
    let reqs: Vec<LearnRequest> = items.iter().map(|t| LearnRequest { insight: t, ..Default::default() }).collect();
    let out = db.learn_batch(&reqs).unwrap();
    let dup = out[1].duplicate.as_ref().expect("the second item rewords the first (not yet committed)");
    assert_eq!((dup.existing_id, dup.method), (out[0].memory_id, DupMethod::Cosine));
    // After commit the same rewording is found through the index.
    let again = db
        .learn(&LearnRequest { insight: "gripper slips on wet cups in the dish room", ..Default::default() })
        .unwrap();
    assert_eq!(again.duplicate.map(|d| d.existing_id), Some(out[0].memory_id));
}

/// A batch that fails after some items were stored rolls back, and the index
/// must not keep their vectors: the next memories reuse the same ids and revs.
#[test]
fn a_rolled_back_batch_leaves_no_vectors_behind() {
    let Some(m) = model::default_model("vindex-rollback") else { return };
    let dir = temp("rollback");
    let path = dir.db();
    let a = Db::open(m.options(&path)).unwrap();
    learn_all(&a, &corpus());
    let ended = a.start_session(None, None).unwrap().session_id;
    a.end_session(&ended, None).unwrap();
    let reqs = [
        LearnRequest { insight: "the forklift battery must be swapped every four hours", ..Default::default() },
        LearnRequest {
            insight: "the pallet wrapper jams on torn film",
            session_id: Some(&ended),
            ..Default::default()
        },
    ];
    assert!(a.learn_batch(&reqs).is_err(), "the second item's session has ended");
    // Another handle's next memory reuses the rolled-back item's id and revs.
    let other = Db::open(m.options(&path)).unwrap();
    let c = other
        .learn(&LearnRequest { insight: "the coffee machine needs descaling monthly", ..Default::default() })
        .unwrap();
    // A third handle builds its index from the file alone: all must rank alike.
    let b = Db::open(m.options(&path)).unwrap();
    for q in
        ["replace the forklift power pack", "coffee maker maintenance", "slippery cups make the hand lose its grip"]
    {
        let ask = |db: &Db| -> Vec<i64> {
            db.recall(&RecallRequest { query: q, n: 5, ..Default::default() })
                .unwrap()
                .hits
                .iter()
                .map(|h| h.memory.id)
                .collect()
        };
        assert_eq!(ask(&a), ask(&b), "{q}");
    }
    let top = a.recall(&RecallRequest { query: "coffee maker maintenance", n: 1, ..Default::default() }).unwrap();
    assert_eq!(top.hits[0].memory.id, c.memory_id);
}
