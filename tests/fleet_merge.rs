//! Property test of the fleet merge (`Db::fleet_apply`): whatever order batches
//! arrive in, however they are cut, and however often one arrives again, a robot
//! ends in the same state: per global id, the last writer's version (version, then
//! writer id), a forget final, and each live fact held by exactly one active memory
//! (the same fact from several robots is one memory with several sources).

#[path = "common/fleet_change.rs"]
mod fleet_change;
#[path = "common/scratch.rs"]
mod scratch;

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use robotmem::fleet::Change;
use robotmem::*;

/// Facts no two of which are duplicates of each other.
const FACTS: &[&str] = &[
    "the left gripper slips on wet cardboard",
    "charging dock three needs a slow final approach",
    "lidar sees ghosts near the glass wall of aisle nine",
    "pallet jack handles stick in cold storage",
    "forklift horn is required at blind corners",
    "floor scrubber leaves the aisle wet for ten minutes",
];
const WRITERS: &[&str] = &["alpha", "bravo", "charlie"];

fn gid(i: usize) -> String {
    format!("01890000-0000-7000-8000-{i:012}")
}

#[derive(Clone, Debug)]
struct Step {
    gid: usize,
    writer: usize,
    version: i64,
    fact: usize,
    deleted: bool,
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        (0..5usize, 0..3usize, 1..4i64, 0..FACTS.len(), prop::bool::weighted(0.15))
            .prop_map(|(gid, writer, version, fact, deleted)| Step { gid, writer, version, fact, deleted }),
        1..24,
    )
}

/// The changes, with per-writer change numbers in list order; a global id keeps
/// its first writer as origin. A writer writes a version of a memory once (the hub
/// holds (writer, global id, version) unique), so later steps repeating one are dropped.
fn changes(steps: &[Step]) -> Vec<Change> {
    let mut seq: BTreeMap<usize, i64> = BTreeMap::new();
    let mut origin: BTreeMap<usize, usize> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    steps
        .iter()
        .filter(|s| seen.insert((s.gid, s.writer, s.version)))
        .map(|s| {
            let n = seq.entry(s.writer).or_default();
            *n += 1;
            let o = *origin.entry(s.gid).or_insert(s.writer);
            let mut c = fleet_change::change(&gid(s.gid), WRITERS[s.writer], *n, s.version, FACTS[s.fact]);
            c.origin = WRITERS[o].into();
            c.deleted = s.deleted;
            c
        })
        .collect()
}

/// What the fleet agreed on: per global id, forgotten or the winning content.
fn expected(all: &[Change]) -> BTreeMap<String, Option<String>> {
    let mut out: BTreeMap<String, (bool, i64, String, String)> = BTreeMap::new();
    for c in all {
        let e = out.entry(c.global_id.clone()).or_insert((false, 0, String::new(), String::new()));
        if c.deleted {
            e.0 = true;
        } else if (c.version, c.writer.as_str()) > (e.1, e.2.as_str()) {
            *e = (e.0, c.version, c.writer.clone(), c.content.clone());
        }
    }
    out.into_iter().map(|(g, (d, _, _, content))| (g, if d { None } else { Some(content) })).collect()
}

/// The robot's state: per global id received, forgotten or the content of the
/// active memory holding it; and the active memories' contents.
fn state(db: &Db, p: &std::path::Path) -> (BTreeMap<String, Option<String>>, Vec<String>) {
    db.flush().unwrap();
    let c = rusqlite::Connection::open(p).unwrap();
    let mut st = c
        .prepare(
            "SELECT r.global_id, r.deleted, m.status, m.content FROM sync_remote r LEFT JOIN memories m ON m.id = r.memory_id",
        )
        .unwrap();
    let held = st
        .query_map([], |r| {
            let deleted: bool = r.get(1)?;
            let status: Option<String> = r.get(2)?;
            let content: Option<String> = r.get(3)?;
            Ok((r.get::<_, String>(0)?, deleted, status, content))
        })
        .unwrap()
        .map(|r| r.unwrap())
        .map(|(g, deleted, status, content)| {
            if deleted {
                (g, None)
            } else {
                assert_eq!(status.as_deref(), Some("active"), "{g} is held by an active memory");
                (g, content)
            }
        })
        .collect();
    let mut st = c.prepare("SELECT content FROM memories WHERE status = 'active' ORDER BY content").unwrap();
    let active = st.query_map([], |r| r.get(0)).unwrap().map(|r| r.unwrap()).collect();
    (held, active)
}

fn open(dir: &scratch::Scratch, name: &str) -> (Db, std::path::PathBuf) {
    let p = dir.join(name);
    let mut o = OpenOptions::path(&p);
    o.embeddings = false;
    o.durability = Durability::Normal;
    let db = Db::open(o).unwrap();
    db.fleet_claim("robot-z").unwrap();
    (db, p)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn any_order_any_cut_any_repeat_gives_the_same_state(
        s in steps(),
        order in prop::collection::vec(any::<prop::sample::Index>(), 0..40),
        cuts in prop::collection::vec(1..6usize, 1..12),
    ) {
        let all = changes(&s);
        let want = expected(&all);
        let dir = scratch::Scratch::new("fleet-merge");

        // In order, one batch.
        let (a, pa) = open(&dir, "a.db");
        a.fleet_apply(&all).unwrap();
        let (held_a, active_a) = state(&a, &pa);

        // Shuffled, cut into batches, some repeated.
        let mut shuffled = all.clone();
        for (i, ix) in order.iter().enumerate() {
            let n = shuffled.len();
            shuffled.swap(i % n, ix.index(n));
        }
        let mut extra: Vec<Change> = order.iter().take(5).map(|ix| all[ix.index(all.len())].clone()).collect();
        shuffled.append(&mut extra);
        let (b, pb) = open(&dir, "b.db");
        let mut at = 0;
        for cut in cuts.iter().cycle() {
            if at >= shuffled.len() { break; }
            let end = (at + cut).min(shuffled.len());
            b.fleet_apply(&shuffled[at..end]).unwrap();
            at = end;
        }
        b.fleet_apply(&all).unwrap(); // a whole repeat changes nothing
        let (held_b, active_b) = state(&b, &pb);

        prop_assert_eq!(&held_a, &want);
        prop_assert_eq!(&held_b, &want);
        prop_assert_eq!(&active_a, &active_b);
        // Each live fact is one memory, however many robots hold it.
        let live: BTreeSet<&String> = want.values().flatten().collect();
        prop_assert_eq!(active_a.len(), live.len(), "{:?}", active_a);
        let marks = b.fleet_marks().unwrap();
        for (w, n) in marks {
            let top = all.iter().filter(|c| c.writer == w).map(|c| c.seq).max().unwrap();
            prop_assert_eq!(n, top);
        }
    }
}
