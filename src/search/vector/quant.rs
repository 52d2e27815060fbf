//! Vector codes of the in-process vector index: each unit vector is stored as
//! an int8 code with its own scale, `v ≈ scale · code` (`scale` = largest |component|
//! / 127), a quarter of the f32 bytes.
//!
//! The KNN scan multiplies a 7-bit code of the query with the stored codes and
//! keeps a few times `k` candidates; those are re-scored with the f32 query
//! against the stored codes. The code's error (≤ scale/2 per component, about
//! 4e-4 of a unit vector's component at 512 dimensions) moves a cosine by about
//! 5e-4 (standard deviation; tests bound it), far below the model's own noise:
//! the re-scored order is the f32 order except between neighbours closer than
//! that (recall@10 against exact f32 KNN is measured by the tests and the
//! workload benchmark).

/// Largest |code|.
const FULL: f32 = 127.0;

/// The int8 code and the scale of one vector.
pub struct Code {
    pub hi: Vec<i8>,
    pub scale: f32,
}

/// Encodes a vector (any length; zero vectors get scale 0).
pub fn encode(v: &[f32]) -> Code {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    let scale = if max > 0.0 && max.is_finite() { max / FULL } else { 0.0 };
    let hi = v.iter().map(|&x| if scale > 0.0 { (x / scale).round().clamp(-FULL, FULL) as i8 } else { 0 }).collect();
    Code { hi, scale }
}

/// A query quantised for the scan: a 7-bit code (±64) and the factor that turns
/// `dot(code, hi) · scale_of_vector` into a dot product.
pub struct Query {
    pub exact: Vec<f32>,
    /// Per 64-bit word: the sign bits, then the two bit planes of each
    /// component's weight 0..=3 in the first pass ([`first_pass`]).
    pub planes: Vec<[u64; 3]>,
    /// Sum of the code's whole 32-byte blocks (for the AVX2 kernel).
    q_sum: i32,
    pub code: Vec<i8>,
    /// Turns `dot(code, hi) · scale_of_vector` into a dot product.
    pub factor: f32,
}

impl Query {
    pub fn new(q: &[f32]) -> Query {
        let max = q.iter().fold(0f32, |m, x| m.max(x.abs()));
        let s = if max > 0.0 && max.is_finite() { max / QUERY_MAX } else { 0.0 };
        let code =
            q.iter().map(|x| if s > 0.0 { (x / s).round().clamp(-QUERY_MAX, QUERY_MAX) as i8 } else { 0 }).collect();
        let code: Vec<i8> = code;
        let q_sum = code[..code.len() / 32 * 32].iter().map(|&x| x as i32).sum();
        let planes = weight_planes(q, &sign_bits(q));
        Query { exact: q.to_vec(), planes, code, q_sum, factor: s }
    }

    /// Approximate dot products with stored vectors (their `hi` planes, one
    /// after the other, and scales), into `out`.
    pub fn approx_all(&self, his: &[i8], scales: &[f32], dots: &mut Vec<i32>, out: &mut Vec<f32>) {
        dot_rows(&self.code, his, dots);
        out.clear();
        out.extend(dots.iter().zip(scales).map(|(&d, &s)| d as f32 * self.factor * s));
    }

    /// Approximate dot products with the stored vectors at `slots` (rows of
    /// `his`, `dim` codes each), as `(score, slot)`.
    pub fn approx_slots(&self, his: &[i8], scales: &[f32], slots: &[u32], out: &mut Vec<(f32, u32)>) {
        let d = self.code.len();
        out.clear();
        out.reserve(slots.len());
        #[cfg(target_arch = "x86_64")]
        if avx2() {
            // SAFETY: the CPU supports AVX2 (checked).
            unsafe { self.approx_slots_avx2(his, scales, slots, out) };
            return;
        }
        out.extend(slots.iter().map(|&s| {
            let r = s as usize * d..(s as usize + 1) * d;
            (dot_i8_portable(&self.code, &his[r]) as f32 * self.factor * scales[s as usize], s)
        }));
    }

    /// The rows are far apart: each is prefetched a few slots ahead so that
    /// their reads from memory overlap.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn approx_slots_avx2(&self, his: &[i8], scales: &[f32], slots: &[u32], out: &mut Vec<(f32, u32)>) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        const AHEAD: usize = 6;
        let d = self.code.len();
        for (i, &s) in slots.iter().enumerate() {
            if let Some(&next) = slots.get(i + AHEAD) {
                let row = &his[next as usize * d..(next as usize + 1) * d];
                for line in (0..d).step_by(64) {
                    // SAFETY: a prefetch of an address inside `row`; it never faults.
                    _mm_prefetch::<_MM_HINT_T0>(row.as_ptr().add(line).cast());
                }
            }
            let r = s as usize * d..(s as usize + 1) * d;
            out.push((dot_i8_avx2(&self.code, &his[r], self.q_sum) as f32 * self.factor * scales[s as usize], s));
        }
    }

    /// Dot product of the f32 query with a stored vector's code.
    pub fn rescore(&self, hi: &[i8], scale: f32) -> f32 {
        let mut acc = 0f32;
        for (q, &h) in self.exact.iter().zip(hi) {
            acc += q * h as f32;
        }
        acc * scale
    }
}

/// The stored vector back from its code.
pub fn decode(hi: &[i8], scale: f32) -> Vec<f32> {
    hi.iter().map(|&h| h as f32 * scale).collect()
}

/// Sign bits of a vector (bit i of word i/64 set when `v[i] >= 0`): the
/// first-pass code of large collections, compared by Hamming distance.
pub fn sign_bits(v: &[f32]) -> Vec<u64> {
    let mut bits = vec![0u64; v.len().div_ceil(64)];
    for (i, &x) in v.iter().enumerate() {
        if x >= 0.0 {
            bits[i / 64] |= 1 << (i % 64);
        }
    }
    bits
}

/// The query's first-pass planes: per word its sign bits and the weight of
/// each component, `round(1.5 · |q_i| / mean |q|)` capped at 3, as two bit
/// planes. The first pass then estimates `Σ w_i · [sign q_i = sign v_i]`: an
/// agreement on a large component counts more than one on a near-zero
/// component, whose sign is noise (plain Hamming distance counts both alike).
fn weight_planes(q: &[f32], bits: &[u64]) -> Vec<[u64; 3]> {
    let mean = q.iter().map(|x| x.abs()).sum::<f32>() / q.len().max(1) as f32;
    let mut planes: Vec<[u64; 3]> = bits.iter().map(|&b| [b, 0, 0]).collect();
    for (i, x) in q.iter().enumerate() {
        let w = if mean > 0.0 { (1.5 * x.abs() / mean).round().min(3.0) as u64 } else { 1 };
        planes[i / 64][1] |= (w & 1) << (i % 64);
        planes[i / 64][2] |= (w >> 1) << (i % 64);
    }
    planes
}

/// First-pass estimates of the query (its [`Query::planes`]) against each row
/// of sign bits in `rows` (`planes.len()` words a row), into `out`: the
/// weights of the components whose signs agree (higher is nearer).
pub fn first_pass(planes: &[[u64; 3]], rows: &[u64], out: &mut Vec<u16>) {
    out.clear();
    if planes.is_empty() {
        return;
    }
    out.reserve(rows.len() / planes.len());
    #[cfg(target_arch = "x86_64")]
    if popcnt() {
        // SAFETY: the CPU has POPCNT (checked).
        unsafe { first_pass_popcnt(planes, rows, out) };
        return;
    }
    first_pass_portable(planes, rows, out);
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

/// [`first_pass`] for rows of `W` words (no closures: they would not inherit
/// the caller's target features).
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

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn first_pass_popcnt(planes: &[[u64; 3]], rows: &[u64], out: &mut Vec<u16>) {
    first_pass_portable(planes, rows, out);
}

#[cfg(target_arch = "x86_64")]
fn popcnt() -> bool {
    use std::sync::OnceLock;
    static POPCNT: OnceLock<bool> = OnceLock::new();
    *POPCNT.get_or_init(|| std::arch::is_x86_feature_detected!("popcnt"))
}

/// Largest |query code| (see `dot_i8_avx2`).
pub const QUERY_MAX: f32 = 64.0;

/// Integer dot products of `q` (codes within ±[`QUERY_MAX`]) with each
/// `q.len()`-long row of `rows`, into `out`.
pub fn dot_rows(q: &[i8], rows: &[i8], out: &mut Vec<i32>) {
    out.clear();
    if q.is_empty() {
        return;
    }
    out.reserve(rows.len() / q.len());
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: the CPU supports AVX2 (checked).
        unsafe { dot_rows_avx2(q, rows, out) };
        return;
    }
    out.extend(rows.chunks_exact(q.len()).map(|r| dot_i8_portable(q, r)));
}

#[cfg(target_arch = "x86_64")]
fn avx2() -> bool {
    use std::sync::OnceLock;
    static AVX2: OnceLock<bool> = OnceLock::new();
    *AVX2.get_or_init(|| std::arch::is_x86_feature_detected!("avx2"))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_rows_avx2(q: &[i8], rows: &[i8], out: &mut Vec<i32>) {
    let head = q.len() / 32 * 32;
    let q_sum: i32 = q[..head].iter().map(|&x| x as i32).sum();
    out.extend(rows.chunks_exact(q.len()).map(|r| dot_i8_avx2(q, r, q_sum)));
}

/// Integer dot product of two int8 slices (the shorter length; `a` within ±[`QUERY_MAX`]).
pub fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        let head = a.len().min(b.len()) / 32 * 32;
        let q_sum: i32 = a[..head].iter().map(|&x| x as i32).sum();
        // SAFETY: the CPU supports AVX2 (checked).
        return unsafe { dot_i8_avx2(a, b, q_sum) };
    }
    dot_i8_portable(a, b)
}

/// Written so the compiler vectorises it (widening multiply-add in 16 lanes;
/// NEON on aarch64, SSE2 on x86_64 without AVX2).
fn dot_i8_portable(a: &[i8], b: &[i8]) -> i32 {
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

/// 32 products per step with `vpmaddubsw`, which multiplies unsigned by signed
/// bytes: the stored code `c` is read as `c + 128` (flip the sign bit) and
/// `128 · Σq` is subtracted at the end. Each pair sum stays within int16 because
/// query codes are within ±[`QUERY_MAX`] (2 · 255 · 64 = 32640).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn dot_i8_avx2(q: &[i8], c: &[i8], q_sum: i32) -> i32 {
    use std::arch::x86_64::*;
    let n = q.len().min(c.len());
    let steps = n / 32;
    let (pq, pc) = (q.as_ptr(), c.as_ptr());
    let (flip, ones) = (_mm256_set1_epi8(-128), _mm256_set1_epi16(1));
    let mut acc = _mm256_setzero_si256();
    for i in 0..steps {
        // SAFETY: reads 32 bytes at i*32 < steps*32 <= n.
        let x = _mm256_loadu_si256(pq.add(i * 32).cast());
        let y = _mm256_xor_si256(_mm256_loadu_si256(pc.add(i * 32).cast()), flip);
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(y, x), ones));
    }
    let sum128 = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256::<1>(acc));
    let sum64 = _mm_add_epi32(sum128, _mm_unpackhi_epi64(sum128, sum128));
    let sum32 = _mm_add_epi32(sum64, _mm_shuffle_epi32::<1>(sum64));
    // q_sum covers the first steps*32 query codes; the tail is added plainly.
    let mut sum = _mm_cvtsi128_si32(sum32) - 128 * q_sum;
    for j in steps * 32..n {
        sum += q[j] as i32 * c[j] as i32;
    }
    sum
}

/// A pseudo-random unit vector (for tests).
#[cfg(test)]
pub(crate) fn unit(seed: u64, dim: usize) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut v: Vec<f32> = (0..dim)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 20001) as f32 / 10000.0 - 1.0
        })
        .collect();
    let n = v.iter().map(|a| a * a).sum::<f32>().sqrt();
    v.iter_mut().for_each(|a| *a /= n);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int8_codes_are_close() {
        let mut errors = Vec::new();
        for seed in 0..200 {
            let (v, q) = (unit(seed, 512), unit(seed + 1000, 512));
            let c = encode(&v);
            let back = decode(&c.hi, c.scale);
            let worst = v.iter().zip(&back).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
            assert!(worst <= c.scale / 2.0 + 1e-7, "component error {worst} above half a step {}", c.scale);
            let exact: f32 = v.iter().zip(&q).map(|(a, b)| a * b).sum();
            let query = Query::new(&q);
            let err = query.rescore(&c.hi, c.scale) - exact;
            assert!(err.abs() < 2e-3, "re-scored error {err}");
            errors.push(err as f64);
            // The int8 scan score is only an estimate, but a close one.
            let (mut dots, mut approx) = (Vec::new(), Vec::new());
            query.approx_all(&c.hi, &[c.scale], &mut dots, &mut approx);
            assert!((approx[0] - exact).abs() < 0.02);
        }
        let sd = (errors.iter().map(|e| e * e).sum::<f64>() / errors.len() as f64).sqrt();
        assert!(sd < 6e-4, "cosine error standard deviation {sd}");
    }

    #[test]
    fn extreme_values_keep_within_int8() {
        let c = encode(&[1.0, -1.0, 0.5, -0.5, 0.0, 1.0 / 65024.0]);
        assert_eq!((c.hi[0], c.hi[1], c.hi[5]), (127, -127, 0));
        let back = decode(&c.hi, c.scale);
        assert_eq!(back[..2], [1.0, -1.0]);
        assert!((back[2] - 0.5).abs() <= c.scale / 2.0 && (back[3] + 0.5).abs() <= c.scale / 2.0);
        let z = encode(&[0.0; 8]);
        assert_eq!(z.scale, 0.0);
    }

    #[test]
    fn first_pass_weighs_agreeing_signs() {
        // Weights by |q| / mean |q| (mean 0.5): 0.1 → 0, 0.3 → 1, 0.6 → 2, 1.0 → 3.
        let q = [0.1, -0.3, 0.6, -1.0];
        let query = Query::new(&q);
        let rows: Vec<u64> = [
            sign_bits(&[1.0, -1.0, 1.0, -1.0]),
            sign_bits(&[-1.0, 1.0, -1.0, 1.0]),
            sign_bits(&[-1.0, -1.0, 1.0, 1.0]),
        ]
        .concat();
        let mut out = Vec::new();
        first_pass(&query.planes, &rows, &mut out);
        assert_eq!(out, [6, 0, 3]);
        let mut portable = Vec::new();
        first_pass_portable(&query.planes, &rows, &mut portable);
        assert_eq!(portable, out);
        // 384 and 512 dimensions (the unrolled widths) and one that is not.
        for dim in [384, 512, 100] {
            let (q, v) = (unit(1, dim), unit(2, dim));
            let query = Query::new(&q);
            let mean = q.iter().map(|x| x.abs()).sum::<f32>() / dim as f32;
            let want: u32 = q
                .iter()
                .zip(&v)
                .filter(|(a, b)| (**a >= 0.0) == (**b >= 0.0))
                .map(|(a, _)| (1.5 * a.abs() / mean).round().min(3.0) as u32)
                .sum();
            first_pass(&query.planes, &sign_bits(&v), &mut out);
            assert_eq!(out, [want as u16], "dimension {dim}");
        }
    }

    #[test]
    fn simd_and_portable_dot_agree() {
        for n in [0, 5, 16, 48, 384, 389] {
            let a: Vec<i8> = (0..n).map(|i| ((i * 37) % 129 - 64) as i8).collect();
            let b: Vec<i8> = (0..n).map(|i| ((i * 91) % 255 - 127) as i8).collect();
            let want: i32 = a.iter().zip(&b).map(|(x, y)| *x as i32 * *y as i32).sum();
            assert_eq!(dot_i8(&a, &b), want, "length {n}");
            assert_eq!(dot_i8_portable(&a, &b), want, "length {n}");
        }
        // Extremes: no int16 saturation inside the SIMD path.
        assert_eq!(dot_i8(&[-64; 64], &[-128; 64]), 64 * 8192);
        assert_eq!(dot_i8(&[64; 64], &[127; 64]), 64 * 8128);
        assert_eq!(dot_i8(&[-64; 64], &[127; 64]), -64 * 8128);
    }
}
