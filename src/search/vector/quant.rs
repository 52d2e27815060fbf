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

use super::simd::{Kernel, QueryCode, QUERY_MAX};

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
    pub code: Vec<i8>,
    /// Sum of `code` (the x86 kernels subtract `128 · sum`).
    code_sum: i32,
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
        let code_sum = code.iter().map(|&x| x as i32).sum();
        let planes = weight_planes(q, &sign_bits(q));
        Query { exact: q.to_vec(), planes, code, code_sum, factor: s }
    }

    fn code(&self) -> QueryCode<'_> {
        QueryCode { code: &self.code, sum: self.code_sum }
    }

    /// Approximate dot products with stored vectors (their `hi` planes, one
    /// after the other, and scales), into `out`.
    pub fn approx_all(&self, his: &[i8], scales: &[f32], dots: &mut Vec<i32>, out: &mut Vec<f32>) {
        Kernel::detected().dot_rows(self.code(), his, dots);
        out.clear();
        out.extend(dots.iter().zip(scales).map(|(&d, &s)| d as f32 * self.factor * s));
    }

    /// Approximate dot products with the stored vectors at `slots` (rows of
    /// `his`, `dim` codes each), as `(score, slot)`.
    pub fn approx_slots(&self, his: &[i8], scales: &[f32], slots: &[u32], out: &mut Vec<(f32, u32)>) {
        Kernel::detected().dot_slots(self.code(), his, (self.factor, scales), slots, out);
    }

    /// Dot product of the f32 query with a stored vector's code, summed in 16
    /// lanes (the compiler vectorises it; the same order, so the same float, on
    /// every CPU: Rust does not fuse the multiply-adds).
    pub fn rescore(&self, hi: &[i8], scale: f32) -> f32 {
        let n = self.exact.len().min(hi.len());
        let (q, h) = (&self.exact[..n], &hi[..n]);
        let mut acc = [0f32; 16];
        let (cq, ch) = (q.chunks_exact(16), h.chunks_exact(16));
        let (rq, rh) = (cq.remainder(), ch.remainder());
        for (x, y) in cq.zip(ch) {
            for i in 0..16 {
                acc[i] += x[i] * y[i] as f32;
            }
        }
        let mut sum = acc.iter().sum::<f32>();
        for (x, &y) in rq.iter().zip(rh) {
            sum += x * y as f32;
        }
        sum * scale
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
    Kernel::detected().first_pass(planes, rows, out);
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
        Kernel::Portable.first_pass(&query.planes, &rows, &mut portable);
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
}
