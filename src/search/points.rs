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

use super::filter::DotPath;
use super::paths;
use crate::error::Result;

/// A memory changed since the last sync: its collection and coordinates, if any.
type Change = (i64, Option<(u32, Box<[f64]>)>);

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
    slot: HashMap<i64, usize>,
}

impl Field {
    fn new() -> Field {
        Field {
            rev: -1,
            used: AtomicU64::new(0),
            ids: Vec::new(),
            collections: Vec::new(),
            starts: vec![0],
            coords: Vec::new(),
            slot: HashMap::new(),
        }
    }

    fn remove(&mut self, id: i64) {
        if let Some(i) = self.slot.remove(&id) {
            self.ids[i] = 0;
        }
    }

    fn add(&mut self, id: i64, collection: u32, coords: &[f64]) {
        self.slot.insert(id, self.ids.len());
        self.ids.push(id);
        self.collections.push(collection);
        self.coords.extend_from_slice(coords);
        self.starts.push(self.coords.len());
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
        let Some(from) = paths::sync_from(inner.fields.get(path).map(|f| f.rev), head) else { return Ok(()) };
        paths::make_room(&mut inner.fields, &[path], MAX_FIELDS, |f| f.used.load(Ordering::Relaxed));
        let mut changed: Vec<Change> = Vec::new();
        let collections = &mut inner.collections;
        paths::changed(conn, &[(path, from)], head, |_, id, value| {
            let point = value.and_then(|(name, v)| Some((name, numbers(&v)?)));
            changed.push((id, point.map(|(name, coords)| (paths::intern(collections, name), coords))));
        })?;
        let field = inner.fields.entry(path.clone()).or_insert_with(Field::new);
        for (id, point) in changed {
            field.remove(id);
            if let Some((collection, coords)) = point {
                field.add(id, collection, &coords);
            }
        }
        if field.ids.len() > 1024 && field.slot.len() < field.ids.len() / 2 {
            field.compact();
        }
        field.rev = head;
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
            let (id, coords) = (field.ids[i], &field.coords[field.starts[i]..field.starts[i + 1]]);
            if id == 0 || field.collections[i] != c || coords.len() != target.len() {
                continue;
            }
            let mut sum = 0.0;
            for (x, t) in coords.iter().zip(target) {
                sum += (x - t) * (x - t);
            }
            let d = sum.sqrt();
            if within(d) {
                out.push((d, id));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::Field;

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
            assert_eq!(f.slot[&id], i);
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
