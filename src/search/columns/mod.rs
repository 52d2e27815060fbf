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
//! Layout: one table of rows shared by the columns ([`rows`]: ids ascending, with
//! their collections), and per column one 8-byte cell per row ([`cell`]), so the
//! ids that pass come out sorted, newest last. Strings are interned per column;
//! a value that is neither number, string, bool nor null is kept whole.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;
use rusqlite::Connection;
use serde_json::Value;

mod cell;
mod checker;
mod rows;

use crate::error::Result;
use crate::search::filter::{Conditions, ContextFilter, DotPath, View};
use crate::search::{paths, snapshot};
use cell::{Cell, Packed};
pub use checker::Checker;
use checker::Compiled;
use rows::Rows;

/// Per stale path: the rows that changed, with their new value (`None`: gone or no value).
type ChangedRows = Vec<(i64, Option<(u32, Value)>)>;

/// Dot paths held at once; asking for another drops the least recently used.
/// A filter has at most 10 conditions; those beyond the columns held are left to
/// the row check.
const MAX_COLUMNS: usize = 8;

struct Column {
    rev: i64,
    used: AtomicU64,
    /// The value at each row ([`Packed::DEAD`]: none; rows past the end have none).
    cells: Vec<Packed>,
    /// Cells with a value.
    held: usize,
    /// Cells that lost their value since the column was last compacted.
    dead: usize,
    strings: Vec<Box<str>>,
    string_ids: HashMap<Box<str>, u32>,
    others: Vec<Value>,
}

impl Clone for Column {
    fn clone(&self) -> Column {
        Column {
            rev: self.rev,
            used: AtomicU64::new(self.used.load(Ordering::Relaxed)),
            cells: self.cells.clone(),
            held: self.held,
            dead: self.dead,
            strings: self.strings.clone(),
            string_ids: self.string_ids.clone(),
            others: self.others.clone(),
        }
    }
}

impl Column {
    fn new() -> Column {
        Column {
            rev: -1,
            used: AtomicU64::new(0),
            cells: Vec::new(),
            held: 0,
            dead: 0,
            strings: Vec::new(),
            string_ids: HashMap::new(),
            others: Vec::new(),
        }
    }

    /// The cell of row `r`.
    fn at(&self, r: usize) -> Packed {
        self.cells.get(r).copied().unwrap_or(Packed::DEAD)
    }

    fn set(&mut self, r: usize, p: Packed) {
        if r >= self.cells.len() {
            if p == Packed::DEAD {
                return;
            }
            self.cells.resize(r + 1, Packed::DEAD);
        }
        match (self.cells[r] != Packed::DEAD, p != Packed::DEAD) {
            (true, false) => {
                self.held -= 1;
                self.dead += 1;
            }
            (false, true) => {
                self.held += 1;
                self.dead = self.dead.saturating_sub(1);
            }
            _ => {}
        }
        self.cells[r] = p;
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

    /// The value of cell `p` as JSON (`None`: dead).
    fn value(&self, p: Packed) -> Option<Value> {
        Some(match p.get() {
            Cell::Dead => return None,
            Cell::Num(x) => Value::from(x),
            Cell::Str(s) => Value::String(self.strings[s as usize].to_string()),
            Cell::Bool(b) => Value::Bool(b),
            Cell::Null => Value::Null,
            Cell::Other(o) => self.others[o as usize].clone(),
        })
    }

    /// Applies the changes read at one sync (`None` removes the memory's value;
    /// every memory given a value has a row). Whether the column was compacted.
    fn apply(&mut self, rows: &Rows, changed: ChangedRows) -> bool {
        for (id, value) in changed {
            let Some(r) = rows.row(id) else {
                debug_assert!(value.is_none(), "rows are added first");
                continue;
            };
            let p = match value {
                Some((_, v)) => self.cell(v),
                None => Packed::DEAD,
            };
            self.set(r, p);
        }
        let slots = self.held + self.dead;
        let compact = slots > 1024 && self.dead > slots / 2;
        if compact {
            self.compact();
        }
        compact
    }

    /// Drops the strings and values only dead cells used.
    fn compact(&mut self) {
        let mut live = Column::new();
        for (r, &p) in self.cells.iter().enumerate() {
            if let Some(v) = self.value(p) {
                let cell = live.cell(v);
                live.set(r, cell);
            }
        }
        live.rev = self.rev;
        live.used = AtomicU64::new(self.used.load(Ordering::Relaxed));
        *self = live;
    }

    /// Follows the rows moved by [`Rows::add`] or [`Rows::keep`]: row `r` was `order[r]`.
    fn follow(&mut self, order: &[usize]) {
        let mut cells: Vec<Packed> = order.iter().map(|&i| self.at(i)).collect();
        while cells.last() == Some(&Packed::DEAD) {
            cells.pop();
        }
        self.cells = cells;
    }
}

/// The snapshots of columns: rows `column <path>` of `index_snapshots`.
const KIND: &str = "column";
const MAGIC: &[u8; 4] = b"RMCO";

impl Column {
    /// The live cells: collection names, strings, other values (JSON), then
    /// (id, collection, kind, value) per memory, ids ascending.
    fn encode(&self, rows: &Rows, names: &[&str]) -> Vec<u8> {
        use snapshot::put;
        let mut out = snapshot::begin(MAGIC, names);
        put(&mut out, self.strings.len() as u64);
        self.strings.iter().for_each(|t| snapshot::put_str(&mut out, t));
        put(&mut out, self.others.len() as u64);
        self.others.iter().for_each(|v| snapshot::put_str(&mut out, &v.to_string()));
        put(&mut out, self.held as u64);
        for (r, p) in self.cells.iter().enumerate() {
            let cell = p.get();
            if cell == Cell::Dead {
                continue;
            }
            put(&mut out, snapshot::zigzag(rows.ids[r]));
            put(&mut out, rows.collections[r] as u64);
            match cell {
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

    /// A column from [`Column::encode`]'s bytes, collection names mapped by
    /// `intern`: the column without its cells, and (id, collection, cell) per
    /// memory, ids ascending, for [`Inner::place`].
    fn decode(bytes: &[u8], intern: impl FnMut(&str) -> u32) -> std::result::Result<Decoded, snapshot::Damaged> {
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
        let n = r.count()?;
        let mut cells: Vec<(i64, u32, Packed)> = Vec::with_capacity(n);
        for _ in 0..n {
            let id = snapshot::unzigzag(r.int()?);
            if cells.last().is_some_and(|&(last, ..)| last >= id) {
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
            cells.push((id, coll, Packed::new(cell).ok_or(Damaged)?));
        }
        if !r.done() {
            return Err(Damaged);
        }
        Ok((c, cells))
    }
}

/// A decoded column snapshot: see [`Column::decode`].
type Decoded = (Column, Vec<(i64, u32, Packed)>);

#[derive(Default)]
struct Inner {
    /// Shared with the recalls' checkers; a sync while one holds a column copies it.
    columns: HashMap<DotPath, Arc<Column>>,
    /// The rows of all columns (shared with the checkers as the columns are).
    rows: Arc<Rows>,
    collections: HashMap<String, u32>,
}

impl Inner {
    /// Gives rows to the memories of `new` (id, collection) that have none.
    fn add_rows(&mut self, new: impl IntoIterator<Item = (i64, u32)>) {
        let new = self.rows.missing(new);
        if new.is_empty() {
            return;
        }
        if let Some(order) = Arc::make_mut(&mut self.rows).add(new) {
            self.columns.values_mut().for_each(|c| Arc::make_mut(c).follow(&order));
        }
    }

    /// Puts a decoded column snapshot at `path`, synced to `rev`.
    fn place(&mut self, path: &DotPath, rev: i64, (mut column, cells): Decoded) {
        self.add_rows(cells.iter().map(|&(id, c, _)| (id, c)));
        for (id, _, p) in cells {
            column.set(self.rows.row(id).expect("added"), p);
        }
        column.rev = rev;
        self.columns.insert(path.clone(), Arc::new(column));
    }

    /// Applies the rows changed up to `head` to the columns at `paths`.
    fn apply(&mut self, paths: &[&DotPath], changed: Vec<ChangedRows>, head: i64) {
        self.add_rows(changed.iter().flatten().filter_map(|(id, v)| v.as_ref().map(|(c, _)| (*id, *c))));
        let mut compacted = false;
        for (&path, changed) in paths.iter().zip(changed) {
            let column = Arc::make_mut(self.columns.entry(path.clone()).or_insert_with(|| Arc::new(Column::new())));
            compacted |= column.apply(&self.rows, changed);
            column.rev = head;
        }
        if compacted {
            self.drop_empty_rows();
        }
    }

    /// Drops the rows no column has a value at, if they are most rows.
    fn drop_empty_rows(&mut self) {
        let n = self.rows.len();
        let keep: Vec<usize> = (0..n).filter(|&r| self.columns.values().any(|c| c.at(r) != Packed::DEAD)).collect();
        if n > 1024 && keep.len() < n / 2 {
            Arc::make_mut(&mut self.rows).keep(&keep);
            self.columns.values_mut().for_each(|c| Arc::make_mut(c).follow(&keep));
        }
    }
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
        let mut guard = self.inner.write();
        let inner = &mut *guard;
        // Room first (never by dropping a wanted column), then what each needs.
        paths::make_room(&mut inner.columns, wanted, MAX_COLUMNS, |c| c.used.load(Ordering::Relaxed));
        for &path in wanted {
            if inner.columns.contains_key(path) {
                continue;
            }
            // The copy the last handle stored, if any: then only the newer rows.
            let collections = &mut inner.collections;
            let decode = |data: &[u8]| Column::decode(data, |name| paths::intern(collections, name));
            if let Some((rev, decoded)) = snapshot::load_path(conn, KIND, path, head, decode)? {
                inner.place(path, rev, decoded);
            }
        }
        let todo = stale(inner);
        // A path without a column yet (no stored copy) is built whole: each value is
        // packed into the new column as it is read (24 bytes a memory, not a JSON
        // value: a first build reads every memory), then placed as a stored copy is.
        let mut fresh: Vec<Option<Decoded>> =
            todo.iter().map(|(p, _)| (!inner.columns.contains_key(*p)).then(|| (Column::new(), Vec::new()))).collect();
        let mut changed: Vec<ChangedRows> = vec![Vec::new(); todo.len()];
        let collections = &mut inner.collections;
        paths::changed(conn, &todo, head, |k, id, value| {
            let value = value.map(|(name, v)| (paths::intern(collections, name), v));
            match (&mut fresh[k], value) {
                (Some((column, cells)), Some((coll, v))) => cells.push((id, coll, column.cell(v))),
                (Some(_), None) => {}
                (None, value) => changed[k].push((id, value)),
            }
        })?;
        let mut rest = (Vec::new(), Vec::new());
        for (((path, _), built), changed) in todo.into_iter().zip(fresh).zip(changed) {
            match built {
                Some(built) => inner.place(path, head, built),
                None => {
                    rest.0.push(path);
                    rest.1.push(changed);
                }
            }
        }
        inner.apply(&rest.0, rest.1, head);
        Ok(())
    }

    /// Drops what the index holds, for a handle that is closing once its copy
    /// is stored: the memory goes back before the next index is encoded. A later
    /// sync would build it again from the rows.
    pub fn release(&self) {
        *self.inner.write() = Inner::default();
    }

    /// Stores each column in the database (`conn` in a write transaction) whose
    /// stored copy is missing or `min_changes` revs behind (see `search::snapshot`).
    pub fn save(&self, conn: &Connection, min_changes: i64) -> Result<()> {
        let inner = self.inner.read();
        let names = paths::names(&inner.collections);
        for (path, column) in &inner.columns {
            snapshot::save_path(conn, KIND, path, column.rev, min_changes, || column.encode(&inner.rows, &names))?;
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
        let exact = cols.len() == filter.conditions().count();
        Ok(Checker { rows: Arc::clone(&inner.rows), cols, collection, exact })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str) -> DotPath {
        vec![p.to_string()]
    }

    /// The value of memory `id` in the column at `p`, as text (`None`: none).
    fn at(inner: &Inner, p: &str, id: i64) -> Option<String> {
        let c = &inner.columns[&path(p)];
        let r = inner.rows.row(id)?;
        c.view(c.at(r).get()).map(|v| format!("{v:?} in {}", inner.rows.collections[r]))
    }

    #[test]
    fn snapshot_round_trip_and_damage() {
        let mut inner = Inner::default();
        let value = |id: i64| match id % 5 {
            0 => Value::from(id as f64 / 7.0),
            1 => Value::from(format!("s{}", id % 9)),
            2 => Value::Bool(id % 2 == 0),
            3 => Value::Null,
            _ => serde_json::json!([id, {"k": "v"}]),
        };
        let (a, b) = (path("a"), path("b"));
        let all = |f: &dyn Fn(i64) -> bool| -> ChangedRows {
            (1..=400i64).filter(|&id| f(id)).map(|id| (id, Some(((id % 3) as u32, value(id))))).collect()
        };
        inner.apply(&[&a, &b], vec![all(&|_| true), all(&|id| id % 4 == 0)], 1);
        inner.apply(&[&a], vec![vec![(5, None), (6, None)]], 2);
        let names = ["a", "b", "c"];
        let intern = |n: &str| names.iter().position(|&x| x == n).unwrap() as u32;
        let bytes = inner.columns[&a].encode(&inner.rows, &names);
        // Loaded beside another column (rows shared), and alone.
        let mut beside = Inner::default();
        beside.apply(&[&b], vec![vec![(1000, Some((0, Value::Null))), (3, Some((0, Value::Null)))]], 1);
        let mut alone = Inner::default();
        for other in [&mut beside, &mut alone] {
            other.place(&a, 2, Column::decode(&bytes, intern).unwrap());
            assert_eq!(other.columns[&a].encode(&other.rows, &names), bytes);
            for id in 1..=400i64 {
                assert_eq!(at(other, "a", id), at(&inner, "a", id), "id {id}");
            }
        }
        assert_eq!(at(&alone, "a", 5), None);
        assert_eq!(at(&beside, "b", 1000).as_deref(), Some("Null in 0"));
        assert_eq!(beside.rows.ids, {
            let mut ids: Vec<i64> = (1..=400).filter(|id| ![5, 6].contains(id)).collect();
            ids.push(1000);
            ids
        });
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
        let (a, b) = (path("a"), path("b"));
        let mut inner = Inner::default();
        let s = |id: i64| Some(((id % 2) as u32, Value::from(format!("s{}", id % 5))));
        inner.apply(&[&a, &b], vec![(1..=3000i64).map(|id| (id, s(id))).collect(), vec![(7, s(7))]], 1);
        // Forget most, change some in place, let an old memory gain the path.
        let mut ch: ChangedRows = (1..=3000i64).filter(|id| id % 3 != 0).map(|id| (id, None)).collect();
        ch.push((3, Some((1, Value::Bool(true)))));
        ch.push((3001, Some((0, serde_json::json!([1, 2])))));
        inner.apply(&[&a], vec![ch], 2);
        inner.apply(&[&a], vec![vec![(0, Some((0, Value::Null)))]], 3);
        let c = &inner.columns[&a];
        assert!(inner.rows.ids.windows(2).all(|w| w[0] < w[1]));
        assert_eq!((c.dead, c.held), (0, 1002), "compacted");
        assert_eq!(inner.rows.len(), 1003, "rows no column holds dropped; 7 kept for b");
        assert_eq!(inner.rows.ids[0], 0);
        for (r, &id) in inner.rows.ids.iter().enumerate() {
            assert_eq!(inner.rows.row(id), Some(r));
        }
        assert_eq!(at(&inner, "a", 1), None);
        assert_eq!(at(&inner, "b", 7).as_deref(), Some("Str(\"s2\") in 1"));
        assert_eq!(at(&inner, "a", 3).as_deref(), Some("Bool(true) in 1"));
        assert_eq!(at(&inner, "a", 6).as_deref(), Some("Str(\"s1\") in 0"));
        assert_eq!(at(&inner, "a", 3001).as_deref(), Some("Other(Array [Number(1), Number(2)]) in 0"));
        assert_eq!(c.strings.len(), 5);
    }
}
