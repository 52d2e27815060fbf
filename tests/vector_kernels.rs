//! The vector kernels against their portable versions, on the CPU that runs the
//! test: the int8 index's (AVX2 / AVX-512 VNNI / vpopcntq on x86_64, NEON and
//! NEON dot product on aarch64) over the whole range of stored codes
//! (-128..=127) and query codes (±QUERY_MAX), at every length up to 130 and the
//! models' widths, and against plain integer arithmetic; and sqlite-vec's SIMD
//! build against its portable one. An integration test (not a unit test) so the
//! aarch64 stage (scripts/aarch64-test.sh) runs it under qemu, on an emulated
//! Cortex-A76 and on a Cortex-A53, against the release library it built anyway.

use std::ffi::c_char;

use robotmem::internals::search::vector::simd::{Kernel, QueryCode};
use robotmem::internals::store::vectors::{self, InitFn};
use rusqlite::Connection;

/// xorshift64*: deterministic test data.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn code(&mut self) -> i8 {
        self.next() as u8 as i8
    }
    fn query(&mut self) -> i8 {
        ((self.next() % 129) as i16 - 64) as i8
    }
}

fn plain(q: &[i8], c: &[i8]) -> i32 {
    q.iter().zip(c).map(|(&a, &b)| a as i32 * b as i32).sum()
}

const LENGTHS: [usize; 6] = [256, 384, 512, 768, 1000, 1024];

#[test]
fn the_best_kernel_is_one_the_cpu_runs() {
    let all = Kernel::supported();
    assert_eq!(all[0], Kernel::Portable);
    match std::env::var("ROBOTMEM_INDEX_KERNEL") {
        Ok(n) if all.iter().any(|k| k.name() == n) => assert_eq!(Kernel::detected().name(), n),
        _ => assert_eq!(Kernel::detected(), *all.last().unwrap()),
    }
    #[cfg(target_arch = "aarch64")]
    assert!(all.contains(&Kernel::Neon), "NEON is part of the aarch64 baseline");
    eprintln!("kernels on this CPU: {:?}", all.iter().map(|k| k.name()).collect::<Vec<_>>());
}

#[test]
fn dot_products_equal_plain_arithmetic_on_every_kernel() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for kernel in Kernel::supported() {
        for n in (0..=130).chain(LENGTHS) {
            for _ in 0..4 {
                let q: Vec<i8> = (0..n).map(|_| rng.query()).collect();
                let c: Vec<i8> = (0..n).map(|_| rng.code()).collect();
                assert_eq!(kernel.dot(QueryCode::new(&q), &c), plain(&q, &c), "{} length {n}", kernel.name());
            }
        }
        // Every stored code against every query code, and the extremes where a
        // 16-bit intermediate would saturate.
        let c: Vec<i8> = (0..=255u8).map(|b| b as i8).cycle().take(129 * 256).collect();
        let q: Vec<i8> = (-64..=64i8).flat_map(|v| std::iter::repeat_n(v, 256)).collect();
        assert_eq!(kernel.dot(QueryCode::new(&q), &c), plain(&q, &c), "{} all pairs", kernel.name());
        for (qv, cv) in [(-64i8, -128i8), (64, 127), (-64, 127), (64, -128), (0, -128)] {
            for n in [16, 64, 512, 515] {
                let (q, c) = (vec![qv; n], vec![cv; n]);
                assert_eq!(kernel.dot(QueryCode::new(&q), &c), n as i32 * qv as i32 * cv as i32, "{}", kernel.name());
            }
        }
        // A longer stored row counts only the query's length, and the reverse.
        let (q, c): (Vec<i8>, Vec<i8>) =
            ((0..100).map(|_| rng.query()).collect(), (0..140).map(|_| rng.code()).collect());
        assert_eq!(kernel.dot(QueryCode::new(&q), &c), plain(&q, &c[..100]), "{}", kernel.name());
        assert_eq!(kernel.dot(QueryCode::new(&q[..60]), &c[..40]), plain(&q[..40], &c), "{}", kernel.name());
    }
}

#[test]
fn row_and_slot_loops_equal_the_portable_kernel() {
    let mut rng = Rng(7);
    for dim in [1, 7, 16, 33, 100, 384, 512] {
        let rows: Vec<i8> = (0..dim * 300).map(|_| rng.code()).collect();
        let q: Vec<i8> = (0..dim).map(|_| rng.query()).collect();
        let slots: Vec<u32> = (0..300).map(|_| (rng.next() % 300) as u32).collect();
        let scales: Vec<f32> = (0..300).map(|i| 1.0 / (i + 1) as f32).collect();
        let (mut want_rows, mut want_slots) = (Vec::new(), Vec::new());
        Kernel::Portable.dot_rows(QueryCode::new(&q), &rows, &mut want_rows);
        Kernel::Portable.dot_slots(QueryCode::new(&q), &rows, (0.5, &scales), &slots, &mut want_slots);
        assert_eq!(want_rows.len(), 300);
        assert_eq!(want_rows[5], plain(&q, &rows[5 * dim..6 * dim]));
        for kernel in Kernel::supported() {
            let (mut got_rows, mut got_slots) = (vec![1], vec![(1.0, 1)]);
            kernel.dot_rows(QueryCode::new(&q), &rows, &mut got_rows);
            kernel.dot_slots(QueryCode::new(&q), &rows, (0.5, &scales), &slots, &mut got_slots);
            assert_eq!(got_rows, want_rows, "{} dim {dim}", kernel.name());
            assert_eq!(got_slots, want_slots, "{} dim {dim}", kernel.name());
        }
    }
}

#[test]
fn first_pass_counts_equal_the_portable_kernel() {
    let mut rng = Rng(11);
    // Widths 1..=40 words (odd ones leave a last word outside the NEON pairs;
    // above 16 pairs the byte counters are flushed), all-ones rows (the largest
    // counts) and random planes.
    for w in 1..=40usize {
        let mut planes: Vec<[u64; 3]> = (0..w).map(|_| [rng.next(), rng.next(), rng.next()]).collect();
        let mut rows: Vec<u64> = (0..w * 50).map(|_| rng.next()).collect();
        for kernel in Kernel::supported() {
            for round in 0..2 {
                if round == 1 {
                    planes.iter_mut().for_each(|p| *p = [u64::MAX; 3]);
                    rows[..w].fill(u64::MAX);
                }
                let (mut want, mut got) = (Vec::new(), vec![9]);
                Kernel::Portable.first_pass(&planes, &rows, &mut want);
                kernel.first_pass(&planes, &rows, &mut got);
                assert_eq!(got, want, "{} words {w}", kernel.name());
                if round == 1 {
                    assert_eq!(got[0] as usize, 3 * 64 * w, "{}", kernel.name());
                }
            }
        }
    }
}

fn connection(init: InitFn) -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    let mut err: *mut c_char = std::ptr::null_mut();
    // SAFETY: a valid open connection; with SQLITE_CORE the API pointer is unused.
    assert_eq!(unsafe { init(conn.handle(), &mut err, std::ptr::null()) }, 0);
    conn
}

fn distance(conn: &Connection, sql: &str, a: &[u8], b: &[u8]) -> f64 {
    conn.query_row(sql, [a, b], |r| r.get(0)).unwrap()
}

/// The SIMD copy of sqlite-vec for this CPU (AVX on x86_64, NEON on aarch64,
/// where build.rs corrects the types of `l1_int8_neon`) computes the distances
/// the portable copy does: int8 L1 exactly over the whole int8 range (|a - b|
/// up to 255, the value the corrected casts read as unsigned), the float
/// distances up to summation order.
#[test]
fn simd_copy_of_sqlite_vec_equals_the_portable_one() {
    let (simd, name) = vectors::kernel();
    let (fast, portable) = (connection(simd), connection(vectors::portable()));
    eprintln!("sqlite-vec kernel: {name}");
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for n in [1usize, 15, 16, 17, 63, 64, 65, 128, 384, 512, 1000] {
        for round in 0..6 {
            let (a, b): (Vec<u8>, Vec<u8>) = match round {
                0 => (vec![0x80; n], vec![0x7f; n]), // -128 against 127: |a - b| = 255
                1 => (vec![0x7f; n], vec![0x80; n]),
                _ => ((0..n).map(|_| next() as u8).collect(), (0..n).map(|_| next() as u8).collect()),
            };
            let want: i64 = a.iter().zip(&b).map(|(&p, &q)| (p as i8 as i64 - q as i8 as i64).abs()).sum();
            let l1 = "SELECT vec_distance_l1(vec_int8(?1), vec_int8(?2))";
            assert_eq!(distance(&portable, l1, &a, &b), want as f64, "portable, length {n}");
            assert_eq!(distance(&fast, l1, &a, &b), want as f64, "{name}, length {n}");
            // int8 L2: the portable copy sums the squares in f32 (rounded past
            // 2^24), the NEON copy in int32 (exact), so both within 1e-5 of the truth.
            let sq: i64 = a.iter().zip(&b).map(|(&p, &q)| (p as i8 as i64 - q as i8 as i64).pow(2)).sum();
            let l2 = "SELECT vec_distance_l2(vec_int8(?1), vec_int8(?2))";
            for (conn, which) in [(&fast, name), (&portable, "portable")] {
                let got = distance(conn, l2, &a, &b);
                let want = (sq as f64).sqrt();
                assert!((got - want).abs() <= 1e-5 * want.max(1.0), "{which} int8 l2, length {n}: {got} vs {want}");
            }
            let (fa, fb): (Vec<u8>, Vec<u8>) = (
                a.iter().flat_map(|&v| (v as i8 as f32 / 37.0).to_le_bytes()).collect(),
                b.iter().flat_map(|&v| (v as i8 as f32 / 91.0).to_le_bytes()).collect(),
            );
            for f in ["vec_distance_l2", "vec_distance_l1", "vec_distance_cosine"] {
                let sql = format!("SELECT {f}(?1, ?2)");
                let (got, want) = (distance(&fast, &sql, &fa, &fb), distance(&portable, &sql, &fa, &fb));
                assert!((got - want).abs() <= 1e-5 * want.abs().max(1.0), "{name} {f}, length {n}: {got} vs {want}");
            }
        }
    }
}
