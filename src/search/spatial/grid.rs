//! A uniform grid over the coordinates of one spatial_sort field
//! ([`super`]), so the nearest memories are found by visiting the cells
//! around the target ring by ring instead of measuring every memory (at a million
//! memories that walk took 14 ms).
//!
//! Exact: after rings 0..=r around the target's cell, every point not yet seen
//! lies in ring r + 1 or farther, so at least `r · cell` away; points nearer than
//! that are final. Cells are keyed by their integer coordinates in a hash map,
//! so empty space costs nothing. Only points of the field's most common dimension
//! (1 to 3) are in the grid; a query of another dimension measures every point as
//! before. Coordinates too large to quantize are kept aside and measured on every
//! query.

use std::collections::HashMap;

/// Points per cell the grid is sized for when it is built.
const PER_CELL: f64 = 8.0;
/// Quantized coordinates beyond this are kept aside (see the module).
const MAX_CELL_INDEX: f64 = (1u64 << 40) as f64;

pub(super) type Cell = [i64; 3];

pub(super) struct Grid {
    pub(super) dims: usize,
    cell: f64,
    cells: HashMap<Cell, Vec<u32>>,
    /// Slots of points whose coordinates do not quantize.
    aside: Vec<u32>,
    /// Occupied cell range per axis (grows, never shrinks): rings beyond it are empty.
    lo: Cell,
    hi: Cell,
    /// Points when built; the owner rebuilds when it has grown well past this.
    pub(super) built_with: usize,
}

impl Grid {
    /// A grid for the `dims`-dimensional points among `points` (slot, coordinates).
    pub(super) fn build<'a>(dims: usize, points: impl Iterator<Item = (u32, &'a [f64])> + Clone) -> Grid {
        let mut lo = [f64::INFINITY; 3];
        let mut hi = [f64::NEG_INFINITY; 3];
        let mut n = 0usize;
        for (_, c) in points.clone().filter(|(_, c)| c.len() == dims) {
            n += 1;
            for a in 0..dims {
                if c[a].is_finite() {
                    lo[a] = lo[a].min(c[a]);
                    hi[a] = hi[a].max(c[a]);
                }
            }
        }
        let extent = (0..dims).map(|a| hi[a] - lo[a]).filter(|e| e.is_finite()).fold(0.0, f64::max);
        let per_axis = (n as f64 / PER_CELL).powf(1.0 / dims as f64).max(1.0);
        let cell = extent / per_axis;
        let cell = if cell.is_finite() && cell > 0.0 { cell } else { 1.0 };
        let mut g = Grid {
            dims,
            cell,
            cells: HashMap::new(),
            aside: Vec::new(),
            lo: [i64::MAX; 3],
            hi: [i64::MIN; 3],
            built_with: n,
        };
        for (slot, c) in points.filter(|(_, c)| c.len() == dims) {
            g.insert(slot, c);
        }
        g
    }

    fn key(&self, c: &[f64]) -> Option<Cell> {
        let mut k = [0i64; 3];
        for a in 0..self.dims {
            let q = (c[a] / self.cell).floor();
            // NaN and infinities have no cell either.
            if q.is_nan() || q.abs() >= MAX_CELL_INDEX {
                return None;
            }
            k[a] = q as i64;
        }
        Some(k)
    }

    /// Adds a point of the grid's dimension (others are ignored).
    pub(super) fn insert(&mut self, slot: u32, c: &[f64]) {
        if c.len() != self.dims {
            return;
        }
        match self.key(c) {
            Some(k) => {
                for ((lo, hi), &v) in self.lo.iter_mut().zip(self.hi.iter_mut()).zip(&k) {
                    *lo = (*lo).min(v);
                    *hi = (*hi).max(v);
                }
                self.cells.entry(k).or_default().push(slot);
            }
            None => self.aside.push(slot),
        }
    }

    pub(super) fn remove(&mut self, slot: u32, c: &[f64]) {
        if c.len() != self.dims {
            return;
        }
        let list = match self.key(c) {
            Some(k) => self.cells.get_mut(&k),
            None => Some(&mut self.aside),
        };
        if let Some(list) = list {
            if let Some(i) = list.iter().position(|&s| s == slot) {
                list.swap_remove(i);
            }
        }
    }

    /// Calls `visit(slots, None)` with the slots of the cells around `target`, ring
    /// by ring (first the points kept aside), and `visit(&[], Some(bound))` after
    /// each ring, `bound` being the distance every point not yet visited is at
    /// least at (infinite once every cell was visited). Stops when a call with a
    /// bound returns false, or after the last ring.
    pub(super) fn rings(&self, target: &[f64], mut visit: impl FnMut(&[u32], Option<f64>) -> bool) {
        let Some(t) = self.key(target) else {
            // A target too far out to quantize: every point at once.
            let all: Vec<u32> = self.cells.values().flatten().chain(&self.aside).copied().collect();
            visit(&all, None);
            visit(&[], Some(f64::INFINITY));
            return;
        };
        visit(&self.aside, None);
        if self.cells.is_empty() {
            visit(&[], Some(f64::INFINITY));
            return;
        }
        // The farthest ring that can hold an occupied cell.
        let last = (0..self.dims).map(|a| (t[a] - self.lo[a]).max(self.hi[a] - t[a])).max().unwrap_or(0).max(0);
        let ring_of = |k: &Cell| (0..self.dims).map(|a| (k[a] - t[a]).abs()).max().unwrap_or(0);
        // Rings hold (2r + 1)^d cells; when walking them would cost more than
        // visiting every occupied cell (far-apart points), the rest go at once.
        let budget = 4 * self.cells.len() + 1024;
        let mut walked = 0usize;
        for r in 0..=last {
            if walked > budget {
                for (k, v) in &self.cells {
                    if ring_of(k) >= r {
                        visit(v, None);
                    }
                }
                visit(&[], Some(f64::INFINITY));
                return;
            }
            shell(self.dims, r, |o| {
                walked += 1;
                if let Some(v) = self.cells.get(&[t[0] + o[0], t[1] + o[1], t[2] + o[2]]) {
                    visit(v, None);
                }
            });
            let bound = if r == last { f64::INFINITY } else { r as f64 * self.cell };
            if !visit(&[], Some(bound)) {
                return;
            }
        }
    }
}

/// Calls `f` with every offset whose largest absolute component is `r`, in the
/// first `dims` axes (the others 0).
fn shell(dims: usize, r: i64, mut f: impl FnMut(Cell)) {
    let span = |on: bool| if on { -r..=r } else { 0..=0 };
    for x in span(true) {
        for y in span(dims > 1) {
            if dims == 3 && x.abs() < r && y.abs() < r {
                f([x, y, -r]);
                if r > 0 {
                    f([x, y, r]);
                }
                continue;
            }
            for z in span(dims > 2) {
                if x.abs() == r || y.abs() == r || z.abs() == r {
                    f([x, y, z]);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shells_cover_each_offset_once() {
        for dims in 1..=3usize {
            for r in 0..5i64 {
                let mut seen = Vec::new();
                shell(dims, r, |o| seen.push(o));
                let mut want = Vec::new();
                let span = |on: bool| if on { -r..=r } else { 0..=0 };
                for x in span(true) {
                    for y in span(dims > 1) {
                        for z in span(dims > 2) {
                            if x.abs().max(y.abs()).max(z.abs()) == r {
                                want.push([x, y, z]);
                            }
                        }
                    }
                }
                seen.sort();
                want.sort();
                assert_eq!(seen, want, "dims {dims} r {r}");
            }
        }
    }
}
