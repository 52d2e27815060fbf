//! x86_64 kernels: AVX2 and AVX-512 VNNI dot products, `popcnt` first pass.

use std::arch::x86_64::*;

use super::{first_pass_portable, row_loops, QueryCode};

#[inline(always)]
fn prefetch(p: *const i8) {
    // SAFETY: a prefetch is a hint; it never faults, whatever the address.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(p) };
}

/// The products of the codes past the SIMD steps, and `128 · Σq` over the
/// steps (the sum of all of `q` less the tail's), for the flipped kernels.
#[inline(always)]
fn tail(q: QueryCode, c: &[i8], from: usize) -> (i32, i32) {
    let (mut dot, mut q_tail) = (0i32, 0i32);
    for (&a, &b) in q.code[from..].iter().zip(&c[from..]) {
        dot += a as i32 * b as i32;
        q_tail += a as i32;
    }
    (dot, 128 * (q.sum - q_tail))
}

/// 32 products per step with `vpmaddubsw`, which multiplies unsigned by signed
/// bytes: the stored code `c` is read as `c + 128` (its sign bit flipped) and
/// `128 · Σq` is subtracted at the end. Each pair sum stays within int16 because
/// query codes are within ±[`super::QUERY_MAX`] (2 · 255 · 64 = 32640).
#[target_feature(enable = "avx2")]
#[inline]
pub(super) unsafe fn dot_avx2(q: QueryCode, c: &[i8]) -> i32 {
    let steps = c.len() / 32;
    let (pq, pc) = (q.code.as_ptr(), c.as_ptr());
    let (flip, ones) = (_mm256_set1_epi8(-128), _mm256_set1_epi16(1));
    let mut acc = _mm256_setzero_si256();
    for i in 0..steps {
        // SAFETY: reads 32 bytes at i*32 < steps*32 <= len of both.
        let (x, y) = unsafe { (_mm256_loadu_si256(pq.add(i * 32).cast()), _mm256_loadu_si256(pc.add(i * 32).cast())) };
        let y = _mm256_xor_si256(y, flip);
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(y, x), ones));
    }
    let sum128 = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256::<1>(acc));
    let sum64 = _mm_add_epi32(sum128, _mm_unpackhi_epi64(sum128, sum128));
    let sum32 = _mm_add_epi32(sum64, _mm_shuffle_epi32::<1>(sum64));
    let (dot, bias) = tail(q, c, steps * 32);
    _mm_cvtsi128_si32(sum32) - bias + dot
}

/// 64 products per step with `vpdpbusd` (unsigned × signed bytes summed in
/// fours into int32 lanes, no intermediate saturation), the stored code flipped
/// to `c + 128` as in [`dot_avx2`].
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
#[inline]
pub(super) unsafe fn dot_vnni(q: QueryCode, c: &[i8]) -> i32 {
    let steps = c.len() / 64;
    let (pq, pc) = (q.code.as_ptr(), c.as_ptr());
    let flip = _mm512_set1_epi8(-128);
    let mut acc = _mm512_setzero_si512();
    for i in 0..steps {
        // SAFETY: reads 64 bytes at i*64 < steps*64 <= len of both.
        let (x, y) = unsafe { (_mm512_loadu_si512(pq.add(i * 64).cast()), _mm512_loadu_si512(pc.add(i * 64).cast())) };
        acc = _mm512_dpbusd_epi32(acc, _mm512_xor_si512(y, flip), x);
    }
    let (dot, bias) = tail(q, c, steps * 64);
    _mm512_reduce_add_epi32(acc) - bias + dot
}

row_loops!("avx2", dot_avx2, rows_avx2, slots_avx2);
row_loops!("avx512f,avx512bw,avx512vnni", dot_vnni, rows_vnni, slots_vnni);

/// The portable first pass compiled with `popcnt` (one instruction per word).
#[target_feature(enable = "popcnt")]
pub(super) unsafe fn first_pass_popcnt(planes: &[[u64; 3]], rows: &[u64], out: &mut Vec<u16>) {
    first_pass_portable(planes, rows, out);
}

/// The query's planes regrouped eight words at a time (sign bits, weight plane
/// 1, weight plane 2), zero past the last word: a zero weight counts nothing,
/// so a row's words past its end (read as zero) add nothing.
fn grouped(planes: &[[u64; 3]]) -> Vec<[[u64; 8]; 3]> {
    planes
        .chunks(8)
        .map(|c| {
            let mut g = [[0u64; 8]; 3];
            for (i, p) in c.iter().enumerate() {
                (g[0][i], g[1][i], g[2][i]) = (p[0], p[1], p[2]);
            }
            g
        })
        .collect()
}

/// The first pass with AVX-512 `vpopcntq`: eight words of a row a step (a
/// 512-d vector's sign bits in one register), the row's last step masked.
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
pub(super) unsafe fn first_pass_vpopcnt(planes: &[[u64; 3]], rows: &[u64], out: &mut Vec<u16>) {
    let w = planes.len();
    let groups = grouped(planes);
    // SAFETY (loads): each `[u64; 8]` is 64 readable bytes.
    let regs: Vec<[__m512i; 3]> =
        groups.iter().map(|g| g.map(|p| unsafe { _mm512_loadu_si512(p.as_ptr().cast()) })).collect();
    let last: __mmask8 = if w.is_multiple_of(8) { 0xff } else { (1u8 << (w % 8)) - 1 };
    for row in rows.chunks_exact(w) {
        let mut acc = _mm512_setzero_si512();
        for (g, [sign, p1, p2]) in regs.iter().enumerate() {
            let mask = if g + 1 == regs.len() { last } else { 0xff };
            // SAFETY: the mask reads only words g*8.. of this row that exist.
            let x = unsafe { _mm512_maskz_loadu_epi64(mask, row.as_ptr().add(g * 8).cast()) };
            let differ = _mm512_xor_si512(*sign, x);
            let a = _mm512_popcnt_epi64(_mm512_andnot_si512(differ, *p1));
            let b = _mm512_popcnt_epi64(_mm512_andnot_si512(differ, *p2));
            acc = _mm512_add_epi64(acc, _mm512_add_epi64(a, _mm512_add_epi64(b, b)));
        }
        out.push(_mm512_reduce_add_epi64(acc) as u16);
    }
}
