//! aarch64 kernels: NEON dot products (with and without the dot-product
//! extension) and a NEON first pass.

use std::arch::aarch64::*;

use super::{row_loops, QueryCode};

#[inline(always)]
fn prefetch(p: *const i8) {
    // SAFETY: `prfm` is a hint; it never faults, whatever the address.
    unsafe { std::arch::asm!("prfm pldl1keep, [{p}]", p = in(reg) p, options(nostack, readonly, preserves_flags)) };
}

/// The products of the codes past the SIMD steps.
#[inline(always)]
fn tail(q: QueryCode, c: &[i8], from: usize) -> i32 {
    (from..c.len()).map(|j| q.code[j] as i32 * c[j] as i32).sum()
}

/// 16 products per step: `smull` / `smull2` widen to int16 (|product| ≤ 16384,
/// exact), `sadalp` adds neighbouring pairs into int32 lanes.
#[target_feature(enable = "neon")]
#[inline]
pub(super) unsafe fn dot_neon(q: QueryCode, c: &[i8]) -> i32 {
    let steps = c.len() / 16;
    let (pq, pc) = (q.code.as_ptr(), c.as_ptr());
    let (mut a0, mut a1) = (vdupq_n_s32(0), vdupq_n_s32(0));
    for i in 0..steps {
        // SAFETY: reads 16 bytes at i*16 < steps*16 <= len of both.
        let (x, y) = unsafe { (vld1q_s8(pq.add(i * 16)), vld1q_s8(pc.add(i * 16))) };
        a0 = vpadalq_s16(a0, vmull_s8(vget_low_s8(x), vget_low_s8(y)));
        a1 = vpadalq_s16(a1, vmull_high_s8(x, y));
    }
    vaddvq_s32(vaddq_s32(a0, a1)) + tail(q, c, steps * 16)
}

/// 16 products per step with `sdot` (four int8 products summed into each int32
/// lane; ARMv8.2 dot-product extension). Rust's `vdotq_s32` is not stable yet,
/// so the instruction is written out.
#[target_feature(enable = "neon,dotprod")]
#[inline]
pub(super) unsafe fn dot_sdot(q: QueryCode, c: &[i8]) -> i32 {
    let steps = c.len() / 16;
    let (pq, pc) = (q.code.as_ptr(), c.as_ptr());
    let (mut a0, mut a1) = (vdupq_n_s32(0), vdupq_n_s32(0));
    let mut i = 0;
    while i + 2 <= steps {
        // SAFETY: reads 32 bytes at i*16, (i+2)*16 <= steps*16 <= len of both.
        let (x0, y0, x1, y1) = unsafe {
            (
                vld1q_s8(pq.add(i * 16)),
                vld1q_s8(pc.add(i * 16)),
                vld1q_s8(pq.add(i * 16 + 16)),
                vld1q_s8(pc.add(i * 16 + 16)),
            )
        };
        // SAFETY: `sdot` only reads and writes the registers named; the CPU has it (target feature).
        unsafe {
            std::arch::asm!(
                "sdot {a0:v}.4s, {x0:v}.16b, {y0:v}.16b",
                "sdot {a1:v}.4s, {x1:v}.16b, {y1:v}.16b",
                a0 = inout(vreg) a0, a1 = inout(vreg) a1,
                x0 = in(vreg) x0, y0 = in(vreg) y0, x1 = in(vreg) x1, y1 = in(vreg) y1,
                options(pure, nomem, nostack, preserves_flags)
            )
        };
        i += 2;
    }
    if i < steps {
        // SAFETY: reads 16 bytes at i*16 < steps*16.
        let (x, y) = unsafe { (vld1q_s8(pq.add(i * 16)), vld1q_s8(pc.add(i * 16))) };
        // SAFETY: as above.
        unsafe {
            std::arch::asm!("sdot {a:v}.4s, {x:v}.16b, {y:v}.16b", a = inout(vreg) a0, x = in(vreg) x, y = in(vreg) y,
                options(pure, nomem, nostack, preserves_flags))
        };
    }
    vaddvq_s32(vaddq_s32(a0, a1)) + tail(q, c, steps * 16)
}

row_loops!("neon", dot_neon, rows_neon, slots_neon);
row_loops!("neon,dotprod", dot_sdot, rows_sdot, slots_sdot);

/// Two words a step: the agreeing signs (`~(q ^ row)`) masked by each weight
/// plane, counted per byte (`cnt`), the high plane doubled; byte counts (≤ 24 a
/// step) are summed across the row (`uaddlv`) every 8 steps, before they could
/// pass 255. A row's odd last word is counted plainly.
#[target_feature(enable = "neon")]
pub(super) unsafe fn first_pass_neon(planes: &[[u64; 3]], rows: &[u64], out: &mut Vec<u16>) {
    let w = planes.len();
    let pairs = w / 2;
    let pick = |k: usize| -> Vec<uint8x16_t> {
        (0..pairs)
            .map(|p| {
                let two = [planes[2 * p][k], planes[2 * p + 1][k]];
                // SAFETY: reads the two words of `two`.
                vreinterpretq_u8_u64(unsafe { vld1q_u64(two.as_ptr()) })
            })
            .collect()
    };
    let (sign, low, high) = (pick(0), pick(1), pick(2));
    for r in rows.chunks_exact(w) {
        let mut total = 0u32;
        let mut acc = vdupq_n_u8(0);
        for p in 0..pairs {
            // SAFETY: reads words 2p and 2p+1 < w of the row.
            let x = vreinterpretq_u8_u64(unsafe { vld1q_u64(r.as_ptr().add(2 * p)) });
            let same = vmvnq_u8(veorq_u8(sign[p], x));
            let n = vaddq_u8(vcntq_u8(vandq_u8(same, low[p])), vshlq_n_u8::<1>(vcntq_u8(vandq_u8(same, high[p]))));
            acc = vaddq_u8(acc, n);
            if p % 8 == 7 {
                total += vaddlvq_u8(acc) as u32;
                acc = vdupq_n_u8(0);
            }
        }
        total += vaddlvq_u8(acc) as u32;
        if w % 2 == 1 {
            let (p, x) = (&planes[w - 1], r[w - 1]);
            let same = !(p[0] ^ x);
            total += (same & p[1]).count_ones() + 2 * (same & p[2]).count_ones();
        }
        out.push(total as u16);
    }
}
