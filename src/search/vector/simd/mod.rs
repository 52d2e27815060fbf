//! The vector index's inner loops, one implementation per instruction set,
//! chosen once at run time from what the CPU reports ([`Kernel::detected`]):
//!
//! | kernel | CPU | int8 dot products | first pass (popcount) |
//! |---|---|---|---|
//! | `avx512-vnni` | x86_64 with AVX-512 F/BW/VNNI | 64 bytes a step, `vpdpbusd` | `vpopcntq` on 512-bit vectors where the CPU has AVX-512 VPOPCNTDQ (Ice Lake and later), else `popcnt` |
//! | `avx2` | x86_64 with AVX2 | 32 bytes a step, `vpmaddubsw` | `popcnt` (a nibble table in `vpshufb` was no faster: 0.60–0.67 against 0.56 ms a first pass at 100k) |
//! | `neon-dotprod` | aarch64 with the dot-product extension (Cortex-A76/A78: Raspberry Pi 5, RK3588, Jetson Orin) | 16 bytes a step, `sdot` | `cnt` on 128-bit vectors |
//! | `neon` | every aarch64 (Cortex-A53/A55/A72: i.MX 8, Raspberry Pi 4) | 16 bytes a step, `smull` + `sadalp` | the same |
//! | `portable` | anything else | plain Rust (auto-vectorised) | `count_ones` |
//!
//! Every kernel computes the same integers as the portable one: the dot products
//! are exact (no saturation for query codes within ±[`QUERY_MAX`], stored codes
//! anywhere in the int8 range) and the first pass counts the same bits, so a
//! recall ranks identically on every CPU (tests compare each kernel the CPU can
//! run with the portable one over the whole int8 range; on x86_64 the aarch64
//! kernels run under qemu in scripts/aarch64-test.sh, with and without the
//! dot-product extension).

#[cfg(target_arch = "aarch64")]
mod arm;
#[cfg(target_arch = "x86_64")]
mod x86;

/// Largest |query code|: the AVX2 kernel's pair sums stay within int16 below it.
pub const QUERY_MAX: f32 = 64.0;

/// An implementation of the inner loops (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512Vnni,
    #[cfg(target_arch = "aarch64")]
    Neon,
    #[cfg(target_arch = "aarch64")]
    NeonDot,
}

/// Whether the CPU counts bits in 512-bit vectors (`vpopcntq`), which the
/// `avx512-vnni` kernel's first pass then uses.
#[cfg(target_arch = "x86_64")]
fn has_vpopcnt() -> bool {
    use std::sync::OnceLock;
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| std::arch::is_x86_feature_detected!("avx512vpopcntdq"))
}

/// A query's int8 code as the kernels take it: the codes (within ±[`QUERY_MAX`])
/// and their sum (the unsigned-times-signed x86 kernels subtract `128 · sum`).
#[derive(Clone, Copy)]
pub struct QueryCode<'a> {
    pub code: &'a [i8],
    /// Used by the x86 kernels only (NEON multiplies signed by signed).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub sum: i32,
}

impl<'a> QueryCode<'a> {
    /// The code of `code` (tests/vector_kernels.rs; the index makes its own).
    pub fn new(code: &'a [i8]) -> QueryCode<'a> {
        QueryCode { code, sum: code.iter().map(|&c| c as i32).sum() }
    }
}

impl Kernel {
    /// The kernel of this process: the best one the CPU runs, or the one named
    /// by `ROBOTMEM_INDEX_KERNEL` if the CPU runs it (a diagnostic: results are
    /// the same, only the instructions differ; another name is ignored). Chosen once.
    pub fn detected() -> Kernel {
        use std::sync::OnceLock;
        static CHOSEN: OnceLock<Kernel> = OnceLock::new();
        *CHOSEN.get_or_init(|| {
            let all = Kernel::supported();
            let named = std::env::var("ROBOTMEM_INDEX_KERNEL").ok();
            named
                .and_then(|n| all.iter().copied().find(|k| k.name() == n))
                .unwrap_or_else(|| *all.last().unwrap_or(&Kernel::Portable))
        })
    }

    /// Every kernel this CPU runs, the best last.
    pub fn supported() -> Vec<Kernel> {
        #[allow(unused_mut)]
        let mut all = vec![Kernel::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx2") && has!("popcnt") {
                all.push(Kernel::Avx2);
            }
            if has!("avx512f") && has!("avx512bw") && has!("avx512vnni") && has!("popcnt") {
                all.push(Kernel::Avx512Vnni);
            }
        }
        #[cfg(target_arch = "aarch64")]
        {
            // NEON (Advanced SIMD) is part of the aarch64 baseline.
            all.push(Kernel::Neon);
            if std::arch::is_aarch64_feature_detected!("dotprod") {
                all.push(Kernel::NeonDot);
            }
        }
        all
    }

    /// The name `rm_embedding_status` reports.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Portable => "portable",
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => "avx2",
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512Vnni => "avx512-vnni",
            #[cfg(target_arch = "aarch64")]
            Kernel::Neon => "neon",
            #[cfg(target_arch = "aarch64")]
            Kernel::NeonDot => "neon-dotprod",
        }
    }

    /// `Σ q[i]·c[i]` over the shorter length (tests/vector_kernels.rs; the index
    /// runs the row and slot loops).
    pub fn dot(self, q: QueryCode, c: &[i8]) -> i32 {
        let n = q.code.len().min(c.len());
        let q = if n < q.code.len() { QueryCode::new(&q.code[..n]) } else { q };
        match self {
            Kernel::Portable => dot_portable(q.code, &c[..n]),
            // SAFETY (each arm): `supported()` lists the kernel only when the CPU
            // has its features, and a Kernel is only obtained from there (or is Portable).
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => unsafe { x86::dot_avx2(q, &c[..n]) },
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512Vnni => unsafe { x86::dot_vnni(q, &c[..n]) },
            #[cfg(target_arch = "aarch64")]
            Kernel::Neon => unsafe { arm::dot_neon(q, &c[..n]) },
            #[cfg(target_arch = "aarch64")]
            Kernel::NeonDot => unsafe { arm::dot_sdot(q, &c[..n]) },
        }
    }

    /// The dot product of `q` with each `q.code.len()`-long row of `rows`, into `out`.
    pub fn dot_rows(self, q: QueryCode, rows: &[i8], out: &mut Vec<i32>) {
        out.clear();
        if q.code.is_empty() {
            return;
        }
        out.reserve(rows.len() / q.code.len());
        match self {
            Kernel::Portable => out.extend(rows.chunks_exact(q.code.len()).map(|r| dot_portable(q.code, r))),
            // SAFETY: as in `dot`.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => unsafe { x86::rows_avx2(q, rows, out) },
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512Vnni => unsafe { x86::rows_vnni(q, rows, out) },
            #[cfg(target_arch = "aarch64")]
            Kernel::Neon => unsafe { arm::rows_neon(q, rows, out) },
            #[cfg(target_arch = "aarch64")]
            Kernel::NeonDot => unsafe { arm::rows_sdot(q, rows, out) },
        }
    }

    /// The dot product of `q` with the rows at `slots` (rows of `rows`,
    /// `q.code.len()` codes each; rows a few slots ahead are prefetched so that
    /// their reads from memory overlap), scaled by `factor · scales[slot]`,
    /// pushed to `out` with the slot.
    pub fn dot_slots(self, q: QueryCode, rows: &[i8], scaled: (f32, &[f32]), slots: &[u32], out: &mut Vec<(f32, u32)>) {
        out.clear();
        out.reserve(slots.len());
        let (d, (factor, scales)) = (q.code.len(), scaled);
        match self {
            Kernel::Portable => out.extend(slots.iter().map(|&s| {
                (dot_portable(q.code, &rows[s as usize * d..][..d]) as f32 * factor * scales[s as usize], s)
            })),
            // SAFETY: as in `dot`.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => unsafe { x86::slots_avx2(q, rows, scaled, slots, out) },
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512Vnni => unsafe { x86::slots_vnni(q, rows, scaled, slots, out) },
            #[cfg(target_arch = "aarch64")]
            Kernel::Neon => unsafe { arm::slots_neon(q, rows, scaled, slots, out) },
            #[cfg(target_arch = "aarch64")]
            Kernel::NeonDot => unsafe { arm::slots_sdot(q, rows, scaled, slots, out) },
        }
    }

    /// First-pass estimates of a query (its weight planes: per 64-bit word the
    /// sign bits and two bit planes of each component's weight 0..=3) against
    /// each row of sign bits in `rows` (`planes.len()` words a row), into `out`:
    /// the weights of the components whose signs agree.
    pub fn first_pass(self, planes: &[[u64; 3]], rows: &[u64], out: &mut Vec<u16>) {
        out.clear();
        if planes.is_empty() {
            return;
        }
        out.reserve(rows.len() / planes.len());
        match self {
            Kernel::Portable => first_pass_portable(planes, rows, out),
            // SAFETY: as in `dot`.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => unsafe { x86::first_pass_popcnt(planes, rows, out) },
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512Vnni if has_vpopcnt() => unsafe { x86::first_pass_vpopcnt(planes, rows, out) },
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512Vnni => unsafe { x86::first_pass_popcnt(planes, rows, out) },
            #[cfg(target_arch = "aarch64")]
            Kernel::Neon | Kernel::NeonDot => unsafe { arm::first_pass_neon(planes, rows, out) },
        }
    }
}

/// The row loops of one dot-product kernel `$dot(q, row) -> i32` (an `unsafe`
/// function with target features `$features`), generated inside each
/// architecture's module so the kernel inlines into them: `$rows` (every row)
/// and `$slots` (rows by slot, each prefetched `AHEAD` slots before its turn by
/// `prefetch(ptr)`).
macro_rules! row_loops {
    ($features:literal, $dot:ident, $rows:ident, $slots:ident) => {
        #[target_feature(enable = $features)]
        pub(super) unsafe fn $rows(q: QueryCode, rows: &[i8], out: &mut Vec<i32>) {
            for r in rows.chunks_exact(q.code.len()) {
                // SAFETY: the same target features as this function.
                out.push(unsafe { $dot(q, r) });
            }
        }

        #[target_feature(enable = $features)]
        pub(super) unsafe fn $slots(
            q: QueryCode,
            rows: &[i8],
            (factor, scales): (f32, &[f32]),
            slots: &[u32],
            out: &mut Vec<(f32, u32)>,
        ) {
            const AHEAD: usize = 6;
            let d = q.code.len();
            for (i, &s) in slots.iter().enumerate() {
                if let Some(&next) = slots.get(i + AHEAD) {
                    let row = &rows[next as usize * d..][..d];
                    for line in (0..d).step_by(64) {
                        prefetch(row[line..].as_ptr());
                    }
                }
                // SAFETY: the same target features as this function.
                let dot = unsafe { $dot(q, &rows[s as usize * d..][..d]) };
                out.push((dot as f32 * factor * scales[s as usize], s));
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use row_loops;

/// Written so the compiler vectorises it (widening multiply-add in 16 lanes).
fn dot_portable(a: &[i8], b: &[i8]) -> i32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0i32; 16];
    let (ca, cb) = (a.chunks_exact(16), b.chunks_exact(16));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..16 {
            acc[i] += x[i] as i16 as i32 * y[i] as i16 as i32;
        }
    }
    let mut sum: i32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        sum += *x as i32 * *y as i32;
    }
    sum
}

#[inline(always)]
fn agreement<const W: usize>(planes: &[[u64; 3]; W], row: &[u64; W]) -> u16 {
    let mut e = 0u32;
    for w in 0..W {
        let same = !(planes[w][0] ^ row[w]);
        e += (same & planes[w][1]).count_ones() + 2 * (same & planes[w][2]).count_ones();
    }
    e as u16
}

/// [`Kernel::first_pass`] for rows of `W` words (no closures: they would not
/// inherit a caller's target features).
#[inline(always)]
fn first_pass_rows<const W: usize>(planes: &[[u64; 3]], rows: &[u64], out: &mut Vec<u16>) {
    let planes: &[[u64; 3]; W] = planes.try_into().expect("W words");
    for r in rows.chunks_exact(W) {
        out.push(agreement(planes, r.try_into().expect("W words")));
    }
}

#[inline(always)]
fn first_pass_portable(planes: &[[u64; 3]], rows: &[u64], out: &mut Vec<u16>) {
    // Row widths of the common models unrolled (384-d: 6 words, 512-d: 8).
    match planes.len() {
        6 => first_pass_rows::<6>(planes, rows, out),
        8 => first_pass_rows::<8>(planes, rows, out),
        w => {
            for r in rows.chunks_exact(w) {
                let mut e = 0u32;
                for (p, &x) in planes.iter().zip(r) {
                    let same = !(p[0] ^ x);
                    e += (same & p[1]).count_ones() + 2 * (same & p[2]).count_ones();
                }
                out.push(e as u16);
            }
        }
    }
}
