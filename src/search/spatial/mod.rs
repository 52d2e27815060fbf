//! The coordinates that spatial_sort reads, held in process: per dot path asked
//! for (at most [`MAX_FIELDS`]), each active memory's array of numbers at that
//! path in its context, kept in sync with the memories table by `rev` as the text
//! index is. A spatial recall then measures distances over these arrays (a few
//! hundred microseconds for 100k memories) and loads only the nearest rows,
//! nearest first, until its n are certain; before, it parsed the context of every
//! memory of the collection.
//!
//! Only an order: each row is still checked in SQL (collection, status,
//! confidence, session) and by the context filter, and its distance is computed
//! from its stored context as before, so results are those of the full scan.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::RwLock;
use rusqlite::Connection;
use serde_json::Value;

mod grid;

use crate::error::Result;
use crate::search::filter::DotPath;
use crate::search::text::ids::IdMap;
use crate::search::{paths, snapshot};
use grid::Grid;

/// Points in order of (distance, id) after a start, and whether the grid has no more.
pub type NearestBatch = (Vec<(f64, i64)>, bool);

/// Dot paths held at once; asking for another drops the least recently used.
const MAX_FIELDS: usize = 4;

/// The coordinates at one dot path, flat: slot i is memory `ids[i]` of
/// collection `collections[i]`, its numbers `coords[starts[i]..starts[i + 1]]`.
/// A changed or dropped memory leaves a dead slot (id 0) behind; the arrays are
/// compacted when half the slots are dead.
struct Field {
    rev: i64,
    /// When it was last asked for (the least recently used goes first).
    used: AtomicU64,
    ids: Vec<i64>,
    collections: Vec<u32>,
    starts: Vec<usize>,
    coords: Vec<f64>,
    /// Memory id → its live slot.
    slot: IdMap,
    /// Built once the field holds [`GRID_MIN`] points (see [`Grid`]).
    grid: Option<Grid>,
}

/// Points from which a field keeps a grid; below, measuring every point is cheap.
const GRID_MIN: usize = 1024;

impl Field {
    fn new() -> Field {
        Field {
            rev: -1,
            used: AtomicU64::new(0),
            ids: Vec::new(),
            collections: Vec::new(),
            starts: vec![0],
            coords: Vec::new(),
            slot: IdMap::default(),
            grid: None,
        }
    }

    fn coords(&self, i: usize) -> &[f64] {
        &self.coords[self.starts[i]..self.starts[i + 1]]
    }

    /// Builds the grid when the field has enough points, rebuilds it when it has
    /// grown fourfold since (so cells stay about the size they were made for).
    fn refresh_grid(&mut self) {
        let live = self.slot.len();
        if live < GRID_MIN || self.grid.as_ref().is_some_and(|g| live <= 4 * g.built_with.max(1)) {
            return;
        }
        let mut per_dims = [0usize; 4];
        for i in self.live_slots() {
            let d = self.starts[i + 1] - self.starts[i];
            if (1..=3).contains(&d) {
                per_dims[d] += 1;
            }
        }
        let dims = (1..=3).max_by_key(|&d| per_dims[d]).unwrap_or(3);
        let points = self.live_slots().map(|i| (i as u32, self.coords(i)));
        self.grid = Some(Grid::build(dims, points));
    }

    /// The slots of live points.
    fn live_slots(&self) -> impl Iterator<Item = usize> + Clone + '_ {
        (0..self.ids.len()).filter(|&i| self.ids[i] != 0)
    }

    fn remove(&mut self, id: i64) {
        if let Some(i) = self.slot.remove(id).map(|i| i as usize) {
            self.ids[i] = 0;
            if let Some(g) = &mut self.grid {
                g.remove(i as u32, &self.coords[self.starts[i]..self.starts[i + 1]]);
            }
        }
    }

    fn add(&mut self, id: i64, collection: u32, coords: &[f64]) {
        let i = self.ids.len();
        self.slot.insert(id, i as u32);
        self.ids.push(id);
        self.collections.push(collection);
        self.coords.extend_from_slice(coords);
        self.starts.push(self.coords.len());
        if let Some(g) = &mut self.grid {
            g.insert(i as u32, coords);
        }
    }

    fn compact(&mut self) {
        let mut live = Field::new();
        for i in 0..self.ids.len() {
            if self.ids[i] != 0 {
                live.add(self.ids[i], self.collections[i], &self.coords[self.starts[i]..self.starts[i + 1]]);
            }
        }
        (self.ids, self.collections, self.starts, self.coords, self.slot) =
            (live.ids, live.collections, live.starts, live.coords, live.slot);
        self.grid = None; // slots moved: rebuilt by refresh_grid
    }
}

#[derive(Default)]
struct Inner {
    fields: HashMap<DotPath, Field>,
    collections: HashMap<String, u32>,
}

/// See the module documentation. Thread-safe: a query takes a read lock, syncing
/// a short write lock.
#[derive(Default)]
pub struct PointIndex {
    inner: RwLock<Inner>,
    clock: AtomicU64,
}

/// The numbers of an array, if it is one holding only numbers.
fn numbers(v: &Value) -> Option<Box<[f64]>> {
    let Value::Array(a) = v else { return None };
    a.iter().map(Value::as_f64).collect::<Option<Vec<f64>>>().map(Vec::into_boxed_slice)
}

impl PointIndex {
    /// Brings the coordinates at `path` up to the snapshot of `conn` (built on
    /// first use: every memory's context is read once).
    fn sync(&self, conn: &Connection, path: &DotPath) -> Result<()> {
        let head = paths::head(conn)?;
        if paths::sync_from(self.inner.read().fields.get(path).map(|f| f.rev), head).is_none() {
            return Ok(());
        }
        let mut inner = self.inner.write();
        if paths::sync_from(inner.fields.get(path).map(|f| f.rev), head).is_none() {
            return Ok(());
        }
        paths::make_room(&mut inner.fields, &[path], MAX_FIELDS, |f| f.used.load(Ordering::Relaxed));
        if !inner.fields.contains_key(path) {
            // The copy the last handle stored, if any: then only the newer rows.
            let inner = &mut *inner;
            let decode = |data: &[u8]| Field::decode(data, |name| paths::intern(&mut inner.collections, name));
            if let Some((rev, mut field)) = snapshot::load_path(conn, KIND, path, head, decode)? {
                field.rev = rev;
                inner.fields.insert(path.clone(), field);
            }
        }
        let from = paths::sync_from(inner.fields.get(path).map(|f| f.rev), head).unwrap_or(head);
        // Applied as read (a first build reads every memory: no list of a million
        // changes held meanwhile). Out of the map until done: a failed read drops
        // it, and the next recall starts over.
        let mut field = inner.fields.remove(path).unwrap_or_else(Field::new);
        let collections = &mut inner.collections;
        paths::changed(conn, &[(path, from)], head, |_, id, value| {
            field.remove(id);
            if let Some((name, coords)) = value.and_then(|(name, v)| Some((name, numbers(&v)?))) {
                field.add(id, paths::intern(collections, name), &coords);
            }
        })?;
        if field.ids.len() > 1024 && field.slot.len() < field.ids.len() / 2 {
            field.compact();
        }
        field.refresh_grid();
        field.rev = head;
        inner.fields.insert(path.clone(), field);
        Ok(())
    }

    /// Drops what the index holds, for a handle that is closing once its copy
    /// is stored: the memory goes back before the next index is encoded. A later
    /// sync would build it again from the rows.
    pub fn release(&self) {
        *self.inner.write() = Inner::default();
    }

    /// Stores each field in the database (`conn` in a write transaction) whose
    /// stored copy is missing or `min_changes` revs behind (see `search::snapshot`).
    pub fn save(&self, conn: &Connection, min_changes: i64) -> Result<()> {
        let inner = self.inner.read();
        let names = paths::names(&inner.collections);
        for (path, field) in &inner.fields {
            snapshot::save_path(conn, KIND, path, field.rev, min_changes, || field.encode(&names))?;
        }
        Ok(())
    }

    /// (distance, id) of every memory of `collection` with coordinates at `path`
    /// of `target`'s dimension within `max_distance`, in no order. The distance is
    /// computed as `SpatialSort` computes it, so the two agree exactly.
    pub fn distances(
        &self,
        conn: &Connection,
        path: &DotPath,
        collection: &str,
        target: &[f64],
        within: impl Fn(f64) -> bool,
    ) -> Result<Vec<(f64, i64)>> {
        self.sync(conn, path)?;
        let inner = self.inner.read();
        let Some(&c) = inner.collections.get(collection) else { return Ok(Vec::new()) };
        let Some(field) = inner.fields.get(path) else { return Ok(Vec::new()) };
        field.used.store(self.clock.fetch_add(1, Ordering::Relaxed) + 1, Ordering::Relaxed);
        let mut out = Vec::new();
        for i in 0..field.ids.len() {
            let (id, coords) = (field.ids[i], field.coords(i));
            if id == 0 || field.collections[i] != c || coords.len() != target.len() {
                continue;
            }
            let d = distance(coords, target);
            if within(d) {
                out.push((d, id));
            }
        }
        Ok(out)
    }

    /// Up to `k` (distance, id) of the memories [`distances`](Self::distances)
    /// returns (`max_distance` as in spatial_sort), nearest first (ties: newest
    /// first), each strictly after `after` in that order, through the grid of the field;
    /// and whether no other follows them. `None` when the field has no grid of the
    /// target's dimension: then [`distances`](Self::distances) it is.
    #[allow(clippy::too_many_arguments)]
    pub fn nearest(
        &self,
        conn: &Connection,
        path: &DotPath,
        collection: &str,
        target: &[f64],
        max_distance: Option<f64>,
        k: usize,
        after: Option<(f64, i64)>,
    ) -> Result<Option<NearestBatch>> {
        self.sync(conn, path)?;
        let inner = self.inner.read();
        let Some(field) = inner.fields.get(path) else { return Ok(None) };
        let Some(grid) = field.grid.as_ref().filter(|g| g.dims == target.len()) else { return Ok(None) };
        let Some(&c) = inner.collections.get(collection) else { return Ok(Some((Vec::new(), true))) };
        field.used.store(self.clock.fetch_add(1, Ordering::Relaxed) + 1, Ordering::Relaxed);
        Ok(Some(field.nearest(grid, c, target, max_distance, k, after)))
    }
}

impl Field {
    /// [`PointIndex::nearest`] over this field's `grid`, for collection `c`.
    fn nearest(
        &self,
        grid: &Grid,
        c: u32,
        target: &[f64],
        max_distance: Option<f64>,
        k: usize,
        after: Option<(f64, i64)>,
    ) -> (Vec<(f64, i64)>, bool) {
        let mut found: Vec<(f64, i64)> = Vec::new();
        let mut complete = false;
        grid.rings(target, |slots, bound| {
            for &i in slots {
                let (i, id) = (i as usize, self.ids[i as usize]);
                if id == 0 || self.collections[i] != c {
                    continue;
                }
                let d = distance(self.coords(i), target);
                if max_distance.is_some_and(|m| d > m) || after.is_some_and(|a| !follows((d, id), a)) {
                    continue;
                }
                found.push((d, id));
            }
            let Some(bound) = bound else { return true };
            // Everything farther than the radius, or every point, was seen.
            complete = bound == f64::INFINITY || max_distance.is_some_and(|m| bound > m);
            !complete && found.iter().filter(|x| x.0 < bound).count() < k
        });
        found.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
        complete &= found.len() <= k;
        found.truncate(k);
        (found, complete)
    }
}

/// The snapshots of fields: rows `coordinates <path>` of `index_snapshots`.
const KIND: &str = "coordinates";
const MAGIC: &[u8; 4] = b"RMPT";

impl Field {
    /// The live points: collection names, then (id, collection, numbers) each.
    fn encode(&self, names: &[&str]) -> Vec<u8> {
        let mut out = snapshot::begin(MAGIC, names);
        snapshot::put(&mut out, self.slot.len() as u64);
        for i in self.live_slots() {
            snapshot::put(&mut out, snapshot::zigzag(self.ids[i]));
            snapshot::put(&mut out, self.collections[i] as u64);
            let c = self.coords(i);
            snapshot::put(&mut out, c.len() as u64);
            c.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
        }
        snapshot::seal(out)
    }

    /// A field from [`Field::encode`]'s bytes, collection names mapped by `intern`.
    fn decode(bytes: &[u8], intern: impl FnMut(&str) -> u32) -> std::result::Result<Field, snapshot::Damaged> {
        let mut r = snapshot::open(bytes, MAGIC)?;
        let colls = r.names(intern)?;
        let mut f = Field::new();
        // Sized up front, no copies while growing; a 3-d point takes at least 27
        // bytes, so a damaged count cannot reserve much more than the points need.
        let n = r.count()?;
        let likely = n.min(r.left() / 27);
        f.ids.reserve_exact(likely);
        f.collections.reserve_exact(likely);
        f.starts.reserve_exact(likely);
        f.coords.reserve_exact(3 * likely);
        let mut coords: Vec<f64> = Vec::new();
        for _ in 0..n {
            let id = snapshot::unzigzag(r.int()?);
            let c = colls[r.below(colls.len() as u64)? as usize];
            coords.clear();
            for _ in 0..r.count()? {
                coords.push(r.f64()?);
            }
            if id == 0 || f.slot.get(id).is_some() {
                return Err(snapshot::Damaged);
            }
            f.add(id, c, &coords);
        }
        if !r.done() {
            return Err(snapshot::Damaged);
        }
        Ok(f)
    }
}

/// Euclidean distance, computed as `SpatialSort` computes it (same order of
/// operations), so the two agree exactly.
fn distance(coords: &[f64], target: &[f64]) -> f64 {
    let mut sum = 0.0;
    for (x, t) in coords.iter().zip(target) {
        sum += (x - t) * (x - t);
    }
    sum.sqrt()
}

/// Whether `a` comes after `b` nearest first, ties newest first.
fn follows(a: (f64, i64), b: (f64, i64)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 < b.1)
}

#[cfg(test)]
mod tests {
    use super::{distance, Field};

    /// Everything `Field::nearest` may return, nearest first (ties newest first).
    fn brute(f: &Field, c: u32, target: &[f64], max: Option<f64>) -> Vec<(f64, i64)> {
        let mut all: Vec<(f64, i64)> = (0..f.ids.len())
            .filter(|&i| f.ids[i] != 0 && f.collections[i] == c && f.coords(i).len() == target.len())
            .map(|i| (distance(f.coords(i), target), f.ids[i]))
            .filter(|&(d, _)| max.is_none_or(|m| d <= m))
            .collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
        all
    }

    #[test]
    fn snapshot_round_trip_and_damage() {
        let mut f = Field::new();
        for id in 1..=300i64 {
            f.add(id, (id % 2) as u32, &[id as f64 / 3.0, -(id as f64), 1e300]);
        }
        f.remove(17);
        let bytes = f.encode(&["a", "b"]);
        let g = Field::decode(&bytes, |n| if n == "a" { 0 } else { 1 }).unwrap();
        assert_eq!(g.encode(&["a", "b"]), bytes);
        assert_eq!(g.slot.len(), 299);
        for cut in (0..bytes.len()).step_by(7) {
            assert!(Field::decode(&bytes[..cut], |_| 0).is_err());
        }
        for at in (0..bytes.len()).step_by(3) {
            let mut b = bytes.clone();
            b[at] ^= 0x10;
            assert!(Field::decode(&b, |_| 0).is_err(), "byte {at}");
        }
    }

    #[test]
    fn grid_batches_are_the_brute_force_order() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        for round in 0..6 {
            let dims = 1 + round % 3;
            let mut f = Field::new();
            let n = 3000 + (rnd() * 3000.0) as i64;
            for id in 1..=n {
                // Mostly the field's dimension, on a coarse lattice (equal distances),
                // some of another dimension, a few too large to quantize.
                let d = if rnd() < 0.1 { 1 + (dims % 3) } else { dims };
                let mut p: Vec<f64> = (0..d).map(|_| (rnd() * 40.0).floor() / 4.0).collect();
                if rnd() < 0.01 {
                    p[0] = 1e300;
                }
                f.add(id, (rnd() < 0.2) as u32, &p);
                if id == 1500 {
                    f.refresh_grid(); // built part way: the rest go in one by one
                }
            }
            for _ in 0..n / 5 {
                f.remove(1 + (rnd() * n as f64) as i64);
            }
            f.refresh_grid();
            let grid = f.grid.as_ref().expect("a grid");
            assert_eq!(grid.dims, dims);
            for q in 0..60 {
                let mut target: Vec<f64> = (0..dims).map(|_| rnd() * 12.0 - 1.0).collect();
                if q == 0 {
                    target[0] = -1e300; // too far out to quantize
                }
                let max = [None, Some(0.5), Some(2.0), Some(100.0)][q % 4];
                let want = brute(&f, 0, &target, max);
                let mut got = Vec::new();
                let (mut k, mut after) = (1 + (rnd() * 70.0) as usize, None);
                loop {
                    let (batch, complete) = f.nearest(grid, 0, &target, max, k, after);
                    assert!(batch.len() <= k);
                    got.extend_from_slice(&batch);
                    if complete || batch.len() < k {
                        break;
                    }
                    after = batch.last().copied();
                    k *= 3;
                }
                assert_eq!(got, want, "round {round} query {q} target {target:?} max {max:?}");
            }
        }
    }

    #[test]
    fn compaction_keeps_every_live_point() {
        let mut f = Field::new();
        for id in 1..=2000i64 {
            let coords: Vec<f64> = (0..(id % 3 + 1)).map(|k| (id * 10 + k) as f64).collect();
            f.add(id, (id % 2) as u32, &coords);
        }
        for id in (1..=2000i64).filter(|id| id % 4 != 0) {
            f.remove(id);
        }
        f.add(7, 1, &[1.5, 2.5]); // re-added after removal
        f.compact();
        assert_eq!(f.ids.len(), 501);
        for (i, &id) in f.ids.iter().enumerate() {
            assert_eq!(f.slot.get(id), Some(i as u32));
            let coords = &f.coords[f.starts[i]..f.starts[i + 1]];
            if id == 7 {
                assert_eq!((coords, f.collections[i]), (&[1.5, 2.5][..], 1));
            } else {
                assert_eq!(id % 4, 0);
                let want: Vec<f64> = (0..(id % 3 + 1)).map(|k| (id * 10 + k) as f64).collect();
                assert_eq!((coords, f.collections[i]), (&want[..], (id % 2) as u32));
            }
        }
    }
}
