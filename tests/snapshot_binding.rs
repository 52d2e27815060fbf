//! Issue 26, F6: a stored index snapshot is used only by the row, database and
//! save it was made for. Swapping the data of two rows of one kind (two
//! context_filter columns), copying a row from a diverged copy of the file or
//! from another database, cutting a row or flipping a bit in it: every recall
//! still equals what indexes rebuilt from the memories return, and the next close
//! stores a correct snapshot again. Before: a swapped column snapshot was trusted
//! (a filter returned other memories) and saved again.

#[path = "common/scratch.rs"]
mod scratch;
use std::path::Path;

use robotmem::*;

type Hits = Vec<Vec<(i64, u64, Option<u64>)>>;

use scratch::open_lexical as open;

fn context(i: u64) -> String {
    let name = ["grasp", "push", "place"][(i % 3) as usize];
    let (x, y) = ((i * 7 % 23) as f64 / 4.0, (i * 11 % 19) as f64 / 4.0);
    format!(
        r#"{{"task": {{"name": "{name}", "success": {}}}, "robot": {{"id": "r{}"}}, "spatial": {{"p": [{x}, {y}]}}}}"#,
        !i.is_multiple_of(4),
        i % 5
    )
}

fn learn(db: &Db, from: u64, count: u64) {
    for i in from..from + count {
        let t = format!("grasp attempt {i} with the red mug on shelf {}", i % 13);
        db.learn(&LearnRequest { insight: &t, context: Some(&context(i)), ..Default::default() }).unwrap();
    }
}

fn recalls(db: &Db) -> Hits {
    let filters = [r#"{"task.success": true}"#, r#"{"robot.id": "r3"}"#, r#"{"task.name": "push"}"#];
    let mut reqs: Vec<RecallRequest> = filters
        .iter()
        .map(|f| RecallRequest { query: "*", n: 100, context_filter: Some(f), ..Default::default() })
        .collect();
    reqs.push(RecallRequest { query: "red mug shelf", n: 50, ..Default::default() });
    let sp = r#"{"field": "spatial.p", "target": [1.0, 2.0]}"#;
    reqs.push(RecallRequest { query: "*", n: 30, spatial_sort: Some(sp), ..Default::default() });
    reqs.iter()
        .map(|req| {
            let r = db.recall(req).unwrap();
            r.hits.iter().map(|h| (h.memory.id, h.score.to_bits(), h.distance.map(f64::to_bits))).collect()
        })
        .collect()
}

fn sql(p: &Path, statement: &str) {
    rusqlite::Connection::open(p).unwrap().execute_batch(statement).unwrap();
}

/// What indexes built from the rows alone recall.
fn rebuilt(p: &Path) -> Hits {
    let copy = p.with_extension("rebuilt.db");
    let _ = std::fs::remove_file(&copy);
    rusqlite::Connection::open(p).unwrap().execute("VACUUM INTO ?1", [copy.to_str().unwrap()]).unwrap();
    sql(&copy, "DELETE FROM index_snapshots");
    let db = open(&copy);
    let out = recalls(&db);
    std::mem::forget(db); // no snapshot of its own
    out
}

/// A closed file of 600 memories whose snapshots hold every index `recalls` uses.
fn make(p: &Path, from: u64) {
    let db = open(p);
    learn(&db, from, 600);
    let _ = recalls(&db);
    db.close().unwrap();
}

/// Recalls after reopening equal a rebuild, and so do they after the next close.
fn assert_rebuilt(p: &Path, what: &str) {
    let want = rebuilt(p);
    let db = open(p);
    assert_eq!(recalls(&db), want, "{what}: a reopened handle");
    learn(&db, 50_000, 300); // enough changes that close stores snapshots again
    let want = recalls(&db);
    db.close().unwrap();
    let db = open(p);
    assert_eq!(recalls(&db), want, "{what}: after the snapshots were saved again");
    drop(db);
    assert_eq!(rebuilt(p), want, "{what}: the saved snapshots hold the rows");
}

#[test]
fn swapped_rows_of_one_kind_are_rebuilt() {
    let d = scratch::Scratch::new("bind-swap");
    let p = d.db();
    make(&p, 0);
    let a = r#"column ["task","success"]"#;
    let b = r#"column ["robot","id"]"#;
    sql(
        &p,
        &format!(
            "UPDATE index_snapshots SET data = CASE name
                WHEN '{a}' THEN (SELECT data FROM index_snapshots WHERE name = '{b}')
                ELSE (SELECT data FROM index_snapshots WHERE name = '{a}') END
             WHERE name IN ('{a}', '{b}')"
        ),
    );
    assert_rebuilt(&p, "two columns swapped");
}

#[test]
fn rows_from_a_diverged_copy_or_another_database_are_rebuilt() {
    let d = scratch::Scratch::new("bind-copy");
    let p = d.db();
    make(&p, 0);
    // A copy of this very file that then went its own way.
    let twin = d.join("twin.db");
    std::fs::copy(&p, &twin).unwrap();
    for (file, forget) in [(&p, 3), (&twin, 2)] {
        let db = open(file);
        for id in (1..=600).step_by(forget) {
            db.forget(id, "test").unwrap();
        }
        let _ = recalls(&db);
        db.close().unwrap();
    }
    // Another database with other memories.
    let other = d.join("other.db");
    make(&other, 9_000);
    for (from, what) in [(&twin, "rows of a diverged copy"), (&other, "rows of another database")] {
        let victim = d.join("victim.db");
        std::fs::copy(&p, &victim).unwrap();
        let c = rusqlite::Connection::open(&victim).unwrap();
        c.execute("ATTACH ?1 AS src", [from.to_str().unwrap()]).unwrap();
        c.execute_batch(
            "UPDATE index_snapshots SET data = (SELECT s.data FROM src.index_snapshots s WHERE s.name = index_snapshots.name),
                 rev = min(rev, (SELECT s.rev FROM src.index_snapshots s WHERE s.name = index_snapshots.name))
             WHERE name IN (SELECT name FROM src.index_snapshots)",
        )
        .unwrap();
        drop(c);
        assert_rebuilt(&victim, what);
        std::fs::remove_file(&victim).unwrap();
    }
}

#[test]
fn cut_and_flipped_rows_are_rebuilt() {
    let d = scratch::Scratch::new("bind-damage");
    let p = d.db();
    make(&p, 0);
    let c = rusqlite::Connection::open(&p).unwrap();
    let name = r#"column ["task","success"]"#;
    let data: Vec<u8> = c.query_row("SELECT data FROM index_snapshots WHERE name = ?1", [name], |r| r.get(0)).unwrap();
    drop(c);
    let want = rebuilt(&p);
    let step = (data.len() / 40).max(1);
    let mut damaged: Vec<Vec<u8>> = (0..data.len()).step_by(step).map(|cut| data[..cut].to_vec()).collect();
    for at in (0..data.len()).step_by(step) {
        let mut b = data.clone();
        b[at] ^= 0x04;
        damaged.push(b);
    }
    for b in damaged {
        let c = rusqlite::Connection::open(&p).unwrap();
        c.execute("UPDATE index_snapshots SET data = ?2 WHERE name = ?1", rusqlite::params![name, b]).unwrap();
        drop(c);
        let db = open(&p);
        assert_eq!(recalls(&db), want, "{} bytes", b.len());
        std::mem::forget(db);
    }
}
