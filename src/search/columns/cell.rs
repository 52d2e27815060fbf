//! A column's value at one memory, packed in 8 bytes (issue 29: as an enum it
//! took 16, and a column holds one per memory).

/// A value at a path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Cell {
    /// The memory changed or left, or never held the path.
    Dead,
    Num(f64),
    /// Index into the column's strings.
    Str(u32),
    Bool(bool),
    Null,
    /// Index into the column's other values (objects, arrays).
    Other(u32),
}

/// A [`Cell`] in 8 bytes: a number as its f64 bits, the rest as NaNs with the
/// top 16 bits set (then a kind and a 32-bit payload). A number that is such a
/// NaN cannot be packed (JSON numbers are finite: [`Packed::new`] refuses it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Packed(u64);

const TAG: u64 = 0xFFFF << 48;

impl Packed {
    pub(super) const DEAD: Packed = Packed(TAG);

    /// `None` for a number that is a NaN with the tag's bits.
    pub(super) fn new(c: Cell) -> Option<Packed> {
        let tagged = |kind: u64, payload: u32| Packed(TAG | kind << 32 | payload as u64);
        Some(match c {
            Cell::Dead => Packed::DEAD,
            Cell::Num(x) if x.to_bits() & TAG == TAG => return None,
            Cell::Num(x) => Packed(x.to_bits()),
            Cell::Str(s) => tagged(1, s),
            Cell::Bool(b) => tagged(2, b as u32),
            Cell::Null => tagged(3, 0),
            Cell::Other(o) => tagged(4, o),
        })
    }

    pub(super) fn get(self) -> Cell {
        if self.0 & TAG != TAG {
            return Cell::Num(f64::from_bits(self.0));
        }
        let payload = self.0 as u32;
        match (self.0 >> 32) & 0xFFFF {
            0 => Cell::Dead,
            1 => Cell::Str(payload),
            2 => Cell::Bool(payload != 0),
            3 => Cell::Null,
            _ => Cell::Other(payload),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_pack_and_unpack() {
        let nums = [0.0, -0.0, 1.5, -1e300, f64::MIN_POSITIVE, f64::MAX, f64::INFINITY, f64::NEG_INFINITY, f64::NAN];
        let cells = nums.iter().map(|&x| Cell::Num(x)).chain([
            Cell::Dead,
            Cell::Str(0),
            Cell::Str(u32::MAX),
            Cell::Bool(true),
            Cell::Bool(false),
            Cell::Null,
            Cell::Other(7),
            Cell::Other(u32::MAX),
        ]);
        for c in cells {
            let p = Packed::new(c).unwrap();
            assert_eq!(format!("{:?}", p.get()), format!("{c:?}"));
            if let Cell::Num(x) = c {
                assert!(matches!(p.get(), Cell::Num(y) if y.to_bits() == x.to_bits()));
            }
        }
        assert_eq!(Packed::new(Cell::Num(f64::from_bits(u64::MAX))), None);
        assert_eq!(Packed::new(Cell::Num(f64::from_bits(TAG | 5))), None);
    }
}
