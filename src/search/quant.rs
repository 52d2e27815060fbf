//! Vector codes of the in-process vector index: each unit vector is stored as
//! 16-bit fixed point split into two int8 planes, `v ≈ scale · (256·hi + lo)`.
//!
//! The KNN scan reads only `hi` (an int8 code with its own per-vector scale: a
//! quarter of the f32 bytes) and keeps a few times `k` candidates; those are
//! re-scored with both planes, whose error (≤ scale/2 per component, i.e. about
//! 1e-5 of the vector's largest component) is far below the model's own noise, so
//! the re-scored order equals the f32 order (tests compare with exact f32 KNN).

/// Largest |code| of the 16-bit value: keeps `hi` within -127..=127.
const FULL: f32 = 32512.0;

/// The two int8 planes and the scale of one vector.
pub struct Code {
    pub hi: Vec<i8>,
    pub lo: Vec<i8>,
    pub scale: f32,
}

/// Encodes a vector (any length; zero vectors get scale 0).
pub fn encode(v: &[f32]) -> Code {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    let scale = if max > 0.0 && max.is_finite() { max / FULL } else { 0.0 };
    let mut hi = Vec::with_capacity(v.len());
    let mut lo = Vec::with_capacity(v.len());
    for &x in v {
        let q = if scale > 0.0 { (x / scale).round().clamp(-FULL, FULL) as i32 } else { 0 };
        // floor((q + 128) / 256) keeps lo = q - 256·hi within -128..=127.
        let h = (q + 128) >> 8;
        hi.push(h as i8);
        lo.push((q - 256 * h) as i8);
    }
    Code { hi, lo, scale }
}

/// A query quantised for the scan: int8 code and the factor that turns
/// `dot(code, hi) · scale_of_vector` into a dot product.
pub struct Query {
    pub exact: Vec<f32>,
    pub code: Vec<i8>,
    pub factor: f32,
}

impl Query {
    pub fn new(q: &[f32]) -> Query {
        let max = q.iter().fold(0f32, |m, x| m.max(x.abs()));
        let s = if max > 0.0 && max.is_finite() { max / 127.0 } else { 0.0 };
        let code = q.iter().map(|x| if s > 0.0 { (x / s).round().clamp(-127.0, 127.0) as i8 } else { 0 }).collect();
        // hi is in units of 256·scale.
        Query { exact: q.to_vec(), code, factor: s * 256.0 }
    }

    /// Approximate dot product with a stored vector (its `hi` plane and scale).
    #[inline]
    pub fn approx(&self, hi: &[i8], scale: f32) -> f32 {
        dot_i8(&self.code, hi) as f32 * self.factor * scale
    }

    /// Dot product with a stored vector from both planes.
    pub fn rescore(&self, hi: &[i8], lo: &[i8], scale: f32) -> f32 {
        let mut acc = 0f32;
        for ((q, &h), &l) in self.exact.iter().zip(hi).zip(lo) {
            acc += q * (256 * h as i32 + l as i32) as f32;
        }
        acc * scale
    }
}

/// The stored vector back from its planes.
pub fn decode(hi: &[i8], lo: &[i8], scale: f32) -> Vec<f32> {
    hi.iter().zip(lo).map(|(&h, &l)| (256 * h as i32 + l as i32) as f32 * scale).collect()
}

/// Integer dot product of two int8 slices of equal length.
#[inline]
pub fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::OnceLock;
        static AVX2: OnceLock<bool> = OnceLock::new();
        if *AVX2.get_or_init(|| std::arch::is_x86_feature_detected!("avx2")) {
            // SAFETY: the CPU supports AVX2 (checked above).
            return unsafe { dot_i8_avx2(a, b) };
        }
    }
    dot_i8_portable(a, b)
}

/// Written so the compiler vectorises it (widening multiply-add in 16 lanes);
/// compiled once for the baseline target and once with AVX2.
#[inline(always)]
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

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_i8_avx2(a: &[i8], b: &[i8]) -> i32 {
    dot_i8_portable(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(seed: u64, dim: usize) -> Vec<f32> {
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

    #[test]
    fn sixteen_bit_codes_are_near_exact() {
        for seed in 0..50 {
            let (v, q) = (unit(seed, 384), unit(seed + 1000, 384));
            let c = encode(&v);
            let back = decode(&c.hi, &c.lo, c.scale);
            let worst = v.iter().zip(&back).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
            assert!(worst <= c.scale, "component error {worst} above one step {}", c.scale);
            let exact: f32 = v.iter().zip(&q).map(|(a, b)| a * b).sum();
            let query = Query::new(&q);
            assert!((query.rescore(&c.hi, &c.lo, c.scale) - exact).abs() < 2e-5);
            // The int8 scan score is only an estimate, but a close one.
            assert!((query.approx(&c.hi, c.scale) - exact).abs() < 0.02);
        }
    }

    #[test]
    fn extreme_values_keep_within_int8() {
        let c = encode(&[1.0, -1.0, 0.5, -0.5, 0.0, 1.0 / 65024.0]);
        assert_eq!((c.hi[0], c.hi[1]), (127, -127));
        assert_eq!(decode(&c.hi, &c.lo, c.scale)[..5], [1.0, -1.0, 0.5, -0.5, 0.0]);
        let z = encode(&[0.0; 8]);
        assert_eq!(z.scale, 0.0);
    }

    #[test]
    fn simd_and_portable_dot_agree() {
        let a: Vec<i8> = (0..389).map(|i| ((i * 37) % 255 - 127) as i8).collect();
        let b: Vec<i8> = (0..389).map(|i| ((i * 91) % 255 - 127) as i8).collect();
        let want: i32 = a.iter().zip(&b).map(|(x, y)| *x as i32 * *y as i32).sum();
        assert_eq!(dot_i8(&a, &b), want);
        assert_eq!(dot_i8_portable(&a, &b), want);
        assert_eq!(dot_i8(&[-128; 64], &[-128; 64]), 64 * 16384);
    }
}
