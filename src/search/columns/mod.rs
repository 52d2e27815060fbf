//! The values that context_filter reads, held in process: per dot path asked for
//! (at most [`MAX_COLUMNS`]), the value at that path in each active memory's
//! context that has one, kept in sync with the memories table by `rev` as the
//! text index and the coordinates ([`super::spatial`]) are. A recall with a filter
//! evaluates its conditions over these columns (a compare per memory holding the
//! path, no JSON parsed; [`Checker`], in `checker`) and gets the ids that
//! satisfy them; only those rows are loaded. Before, a selective filter parsed the context of nearly every memory
//! of the collection.
//!
//! Only a pre-selection: every row loaded is still checked in SQL and by the
//! filter on its stored context, so results are those of the full scan. The
//! columns agree with the stored contexts exactly (same lookup, same comparison,
//! same snapshot), so no memory that satisfies the filter is left out.
//!
//! Layout: ids ascending (a new memory has the largest id so far; a changed one
//! keeps its slot), so the ids that pass come out sorted, newest last, and a
//! slot is found by binary search. Strings are interned per column; a value
//! that is neither number, string, bool nor null is kept whole.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;
use rusqlite::Connection;
use serde_json::Value;

mod cell;
mod checker;

use crate::error::Result;
use crate::search::filter::{Conditions, ContextFilter, DotPath, View};
use crate::search::{paths, snapshot};
use cell::{Cell, Packed};
pub use checker::Checker;
use checker::Compiled;

/// Per stale path: the rows that changed, with their new value (`None`: gone or no value).
type ChangedRows = Vec<(i64, Option<(u32, Value)>)>;

/// Dot paths held at once; asking for another drops the least recently used.
/// A filter has at most 10 conditions; those beyond the columns held are left to
/// the row check.
const MAX_COLUMNS: usize = 8;

struct Column {
    rev: i64,
    used: AtomicU64,
    ids: Vec<i64>,
    /// Slot of each id below [`DENSE_IDS`] (`NO_SLOT`: none): a lookup without search.
    slot_of: Vec<u32>,
    collections: Vec<u32>,
    cells: Vec<Packed>,
    strings: Vec<Box<str>>,
    string_ids: HashMap<Box<str>, u32>,
    others: Vec<Value>,
    dead: usize,
}

/// Ids below this have a direct slot entry (4 bytes per id); larger ones are
/// found by binary search.
const DENSE_IDS: i64 = 1 << 26;
const NO_SLOT: u32 = u32::MAX;

impl Clone for Column {
    fn clone(&self) -> Column {
        Column {
            rev: self.rev,
            used: AtomicU64::new(self.used.load(Ordering::Relaxed)),
            ids: self.ids.clone(),
            slot_of: self.slot_of.clone(),
            collections: self.collections.clone(),
            cells: self.cells.clone(),
            strings: self.strings.clone(),
            string_ids: self.string_ids.clone(),
            others: self.others.clone(),
            dead: self.dead,
        }
    }
}

impl Column {
    /// The slot of memory `id`, if the column holds it.
    fn slot(&self, id: i64) -> Option<usize> {
        if (0..DENSE_IDS).contains(&id) {
            return self.slot_of.get(id as usize).filter(|&&s| s != NO_SLOT).map(|&s| s as usize);
        }
        self.ids.binary_search(&id).ok()
    }

    fn index_slot(&mut self, i: usize) {
        let id = self.ids[i];
        if (0..DENSE_IDS).contains(&id) {
            let id = id as usize;
            if self.slot_of.len() <= id {
                self.slot_of.resize(id + 1, NO_SLOT);
            }
            self.slot_of[id] = i as u32;
        }
    }

    fn reindex(&mut self) {
        self.slot_of.clear();
        for i in 0..self.ids.len() {
            self.index_slot(i);
        }
    }

    fn new() -> Column {
        Column {
            rev: -1,
            used: AtomicU64::new(0),
            ids: Vec::new(),
            slot_of: Vec::new(),
            collections: Vec::new(),
            cells: Vec::new(),
            strings: Vec::new(),
            string_ids: HashMap::new(),
            others: Vec::new(),
            dead: 0,
        }
    }

    fn cell(&mut self, v: Value) -> Packed {
        let cell = match v {
            Value::Number(n) => match n.as_f64().map(Cell::Num).and_then(Packed::new) {
                Some(p) => return p,
                None => self.other(Value::Number(n)),
            },
            Value::String(s) => {
                let next = self.strings.len() as u32;
                let id = *self.string_ids.entry(s.as_str().into()).or_insert(next);
                if id == next {
                    self.strings.push(s.into_boxed_str());
                }
                Cell::Str(id)
            }
            Value::Bool(b) => Cell::Bool(b),
            Value::Null => Cell::Null,
            other => self.other(other),
        };
        Packed::new(cell).expect("only numbers can fail to pack")
    }

    fn other(&mut self, v: Value) -> Cell {
        self.others.push(v);
        Cell::Other(self.others.len() as u32 - 1)
    }

    fn view(&self, c: Cell) -> Option<View<'_>> {
        Some(match c {
            Cell::Dead => return None,
            Cell::Num(x) => View::Num(x),
            Cell::Str(i) => View::Str(&self.strings[i as usize]),
            Cell::Bool(b) => View::Bool(b),
            Cell::Null => View::Null,
            Cell::Other(i) => View::Other(&self.others[i as usize]),
        })
    }

    /// Applies the changes read at one sync: `None` removes the memory's value.
    fn apply(&mut self, changed: Vec<(i64, Option<(u32, Value)>)>) {
        let mut appended: Vec<(i64, u32, Value)> = Vec::new();
        for (id, value) in changed {
            let at = self.slot(id).ok_or(());
            match (at, value) {
                (Ok(i), Some((c, v))) => {
                    if self.cells[i] == Packed::DEAD {
                        self.dead -= 1;
                    }
                    self.cells[i] = self.cell(v);
                    self.collections[i] = c;
                }
                (Ok(i), None) => {
                    if self.cells[i] != Packed::DEAD {
                        self.cells[i] = Packed::DEAD;
                        self.dead += 1;
                    }
                }
                (Err(_), Some((c, v))) => appended.push((id, c, v)),
                (Err(_), None) => {}
            }
        }
        appended.sort_unstable_by_key(|a| a.0);
        let in_order = appended.first().is_none_or(|a| self.ids.last().is_none_or(|&last| last < a.0));
        for (id, c, v) in appended {
            let cell = self.cell(v);
            self.ids.push(id);
            self.collections.push(c);
            self.cells.push(cell);
            self.index_slot(self.ids.len() - 1);
        }
        if !in_order {
            // A memory that gained the path later: restore the order of ids.
            let mut order: Vec<usize> = (0..self.ids.len()).collect();
            order.sort_unstable_by_key(|&i| self.ids[i]);
            self.ids = order.iter().map(|&i| self.ids[i]).collect();
            self.collections = order.iter().map(|&i| self.collections[i]).collect();
            self.cells = order.iter().map(|&i| self.cells[i]).collect();
            self.reindex();
        }
        if self.ids.len() > 1024 && self.dead > self.ids.len() / 2 {
            self.compact();
        }
    }

    /// Drops dead slots and the strings and values only they used.
    fn compact(&mut self) {
        let mut live = Column::new();
        for i in 0..self.ids.len() {
            let v = match self.cells[i].get() {
                Cell::Dead => continue,
                Cell::Num(x) => Value::from(x),
                Cell::Str(s) => Value::String(self.strings[s as usize].to_string()),
                Cell::Bool(b) => Value::Bool(b),
                Cell::Null => Value::Null,
                Cell::Other(o) => self.others[o as usize].clone(),
            };
            let cell = live.cell(v);
            live.ids.push(self.ids[i]);
            live.collections.push(self.collections[i]);
            live.cells.push(cell);
        }
        live.rev = self.rev;
        live.used = AtomicU64::new(self.used.load(Ordering::Relaxed));
        live.reindex();
        *self = live;
    }
}

/// The snapshots of columns: rows `column <path>` of `index_snapshots`.
const KIND: &str = "column";
const MAGIC: &[u8; 4] = b"RMCO";

impl Column {
    /// The live cells: collection names, strings, other values (JSON), then
    /// (id, collection, kind, value) per memory, ids ascending.
    fn encode(&self, names: &[&str]) -> Vec<u8> {
        use snapshot::put;
        let mut out = snapshot::begin(MAGIC, names);
        put(&mut out, self.strings.len() as u64);
        self.strings.iter().for_each(|t| snapshot::put_str(&mut out, t));
        put(&mut out, self.others.len() as u64);
        self.others.iter().for_each(|v| snapshot::put_str(&mut out, &v.to_string()));
        put(&mut out, (self.ids.len() - self.dead) as u64);
        for i in (0..self.ids.len()).filter(|&i| self.cells[i] != Packed::DEAD) {
            put(&mut out, snapshot::zigzag(self.ids[i]));
            put(&mut out, self.collections[i] as u64);
            match self.cells[i].get() {
                Cell::Dead => unreachable!("dead cells are skipped"),
                Cell::Num(x) => {
                    out.push(1);
                    out.extend_from_slice(&x.to_le_bytes());
                }
                Cell::Str(t) => {
                    out.push(2);
                    put(&mut out, t as u64);
                }
                Cell::Bool(b) => out.extend_from_slice(&[3, b as u8]),
                Cell::Null => out.push(4),
                Cell::Other(o) => {
                    out.push(5);
                    put(&mut out, o as u64);
                }
            }
        }
        snapshot::seal(out)
    }

    /// A column from [`Column::encode`]'s bytes, collection names mapped by `intern`.
    fn decode(bytes: &[u8], intern: impl FnMut(&str) -> u32) -> std::result::Result<Column, snapshot::Damaged> {
        use snapshot::Damaged;
        let mut r = snapshot::open(bytes, MAGIC)?;
        let colls = r.names(intern)?;
        let mut c = Column::new();
        for s in 0..r.count()? as u32 {
            let t: Box<str> = r.str()?.into();
            if c.string_ids.insert(t.clone(), s).is_some() {
                return Err(Damaged);
            }
            c.strings.push(t);
        }
        for _ in 0..r.count()? {
            c.others.push(serde_json::from_str(r.str()?).map_err(|_| Damaged)?);
        }
        for _ in 0..r.count()? {
            let id = snapshot::unzigzag(r.int()?);
            if c.ids.last().is_some_and(|&last| last >= id) {
                return Err(Damaged); // ids strictly ascending
            }
            let coll = colls[r.below(colls.len() as u64)? as usize];
            let cell = match r.below(6)? {
                1 => Cell::Num(r.f64()?),
                2 => Cell::Str(r.below(c.strings.len() as u64)? as u32),
                3 => Cell::Bool(r.below(2)? == 1),
                4 => Cell::Null,
                5 => Cell::Other(r.below(c.others.len() as u64)? as u32),
                _ => return Err(Damaged),
            };
            c.ids.push(id);
            c.collections.push(coll);
            c.cells.push(Packed::new(cell).ok_or(Damaged)?);
        }
        if !r.done() {
            return Err(Damaged);
        }
        c.reindex();
        Ok(c)
    }
}

#[derive(Default)]
struct Inner {
    /// Shared with the recalls' checkers; a sync while one holds a column copies it.
    columns: HashMap<DotPath, Arc<Column>>,
    collections: HashMap<String, u32>,
}

/// See the module documentation. Thread-safe: a query takes a read lock, syncing
/// a short write lock.
#[derive(Default)]
pub struct ColumnIndex {
    inner: RwLock<Inner>,
    clock: AtomicU64,
}

impl ColumnIndex {
    /// Brings the columns of `wanted` up to the snapshot of `conn` in one pass over
    /// the changed rows (a column is built on first use: every memory's context
    /// is read once, for all the paths that need it).
    fn sync(&self, conn: &Connection, wanted: &[&DotPath], head: i64) -> Result<()> {
        let stale = |inner: &Inner| -> Vec<(&DotPath, i64)> {
            wanted
                .iter()
                .filter_map(|&p| Some((p, paths::sync_from(inner.columns.get(p).map(|c| c.rev), head)?)))
                .collect()
        };
        if stale(&self.inner.read()).is_empty() {
            return Ok(());
        }
        let mut inner = self.inner.write();
        // Room first (never by dropping a wanted column), then what each needs.
        paths::make_room(&mut inner.columns, wanted, MAX_COLUMNS, |c| c.used.load(Ordering::Relaxed));
        for &path in wanted {
            if inner.columns.contains_key(path) {
                continue;
            }
            // The copy the last handle stored, if any: then only the newer rows.
            let inner = &mut *inner;
            let decode = |data: &[u8]| Column::decode(data, |name| paths::intern(&mut inner.collections, name));
            if let Some((rev, mut column)) = snapshot::load_path(conn, KIND, path, head, decode)? {
                column.rev = rev;
                inner.columns.insert(path.clone(), Arc::new(column));
            }
        }
        let todo = stale(&inner);
        let mut changed: Vec<ChangedRows> = vec![Vec::new(); todo.len()];
        let collections = &mut inner.collections;
        paths::changed(conn, &todo, head, |k, id, value| {
            changed[k].push((id, value.map(|(name, v)| (paths::intern(collections, name), v))));
        })?;
        for ((path, _), changed) in todo.iter().zip(changed) {
            let column = Arc::make_mut(inner.columns.entry((*path).clone()).or_insert_with(|| Arc::new(Column::new())));
            column.apply(changed);
            column.rev = head;
        }
        Ok(())
    }

    /// Stores each column in the database (`conn` in a write transaction) whose
    /// stored copy is missing or `min_changes` revs behind (see `search::snapshot`).
    pub fn save(&self, conn: &Connection, min_changes: i64) -> Result<()> {
        let inner = self.inner.read();
        let names = paths::names(&inner.collections);
        for (path, column) in &inner.columns {
            snapshot::save_path(conn, KIND, path, column.rev, min_changes, || column.encode(&names))?;
        }
        Ok(())
    }

    /// Syncs the columns of the filter's paths (at most [`MAX_COLUMNS`]; the row
    /// check does the rest) to the snapshot of `conn` and returns a [`Checker`]
    /// over them (it holds the columns as synced, for one recall).
    pub fn checker(&self, conn: &Connection, filter: &ContextFilter, collection: &str) -> Result<Checker> {
        let head = paths::head(conn)?;
        let conds: Vec<(&DotPath, &Conditions)> = filter.conditions().take(MAX_COLUMNS).collect();
        let wanted: Vec<&DotPath> = conds.iter().map(|c| c.0).collect();
        self.sync(conn, &wanted, head)?;
        let inner = self.inner.read();
        let mut cols = Vec::with_capacity(conds.len());
        for (path, ops) in conds {
            // Another recall's sync may have dropped it since (more paths than
            // columns): the row check decides that condition.
            let Some(c) = inner.columns.get(path) else { continue };
            c.used.store(self.clock.fetch_add(1, Ordering::Relaxed) + 1, Ordering::Relaxed);
            cols.push(Compiled::new(Arc::clone(c), ops));
        }
        let collection = inner.collections.get(collection).copied();
        Ok(Checker { cols, collection })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_round_trip_and_damage() {
        let mut c = Column::new();
        let value = |id: i64| match id % 5 {
            0 => Value::from(id as f64 / 7.0),
            1 => Value::from(format!("s{}", id % 9)),
            2 => Value::Bool(id % 2 == 0),
            3 => Value::Null,
            _ => serde_json::json!([id, {"k": "v"}]),
        };
        c.apply((1..=400i64).map(|id| (id, Some(((id % 3) as u32, value(id))))).collect());
        c.apply(vec![(5, None), (6, None)]);
        let names = ["a", "b", "c"];
        let bytes = c.encode(&names);
        let d = Column::decode(&bytes, |n| names.iter().position(|&x| x == n).unwrap() as u32).unwrap();
        assert_eq!(d.encode(&names), bytes);
        for id in (1..=400i64).filter(|id| ![5, 6].contains(id)) {
            let (i, j) = (c.slot(id).unwrap(), d.slot(id).unwrap());
            assert_eq!(
                format!("{:?}", (c.view(c.cells[i].get()), c.collections[i])),
                format!("{:?}", (d.view(d.cells[j].get()), d.collections[j]))
            );
        }
        assert_eq!(d.slot(5), None);
        for cut in (0..bytes.len()).step_by(7) {
            assert!(Column::decode(&bytes[..cut], |_| 0).is_err());
        }
        for at in (0..bytes.len()).step_by(3) {
            let mut b = bytes.clone();
            b[at] ^= 0x10;
            assert!(Column::decode(&b, |_| 0).is_err(), "byte {at}");
        }
    }

    #[test]
    fn apply_keeps_ids_sorted_and_compacts() {
        let mut c = Column::new();
        c.apply((1..=3000i64).map(|id| (id, Some(((id % 2) as u32, Value::from(format!("s{}", id % 5)))))).collect());
        // Forget most, change some in place, let an old memory gain the path.
        let mut ch: Vec<(i64, Option<(u32, Value)>)> =
            (1..=3000i64).filter(|id| id % 3 != 0).map(|id| (id, None)).collect();
        ch.push((3, Some((1, Value::Bool(true)))));
        ch.push((3001, Some((0, serde_json::json!([1, 2])))));
        c.apply(ch);
        c.apply(vec![(0, Some((0, Value::Null)))]);
        assert!(c.ids.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(c.dead, 0, "compacted");
        assert_eq!(c.ids.len(), 1002);
        assert_eq!(c.ids[0], 0);
        let at = |id: i64| c.view(c.cells[c.slot(id).unwrap()].get()).map(|v| format!("{v:?}"));
        for (i, &id) in c.ids.iter().enumerate() {
            assert_eq!(c.slot(id), Some(i));
        }
        assert_eq!(c.slot(1), None);
        assert_eq!(at(3).as_deref(), Some("Bool(true)"));
        assert_eq!(at(6).as_deref(), Some("Str(\"s1\")"));
        assert_eq!(at(3001).as_deref(), Some("Other(Array [Number(1), Number(2)])"));
        assert_eq!(c.strings.len(), 5);
    }
}
