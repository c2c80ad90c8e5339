//! WGSL texts of the helpers that compute `f32`-result transcendental functions as the CPU
//! does: the `f64` function of the argument (an `f32`, or an integer of at most 32 bits, both
//! exact in `f64`), rounded to `f32` (`horsec_runtime::cpu::math`, `through_f64!`). WGSL has
//! no `f64` transcendental builtins, and its `f32` ones may be several ulp off (GPUs use that
//! freedom), so each function is written here in `f64` arithmetic: an argument reduction, a
//! series whose omitted terms are below 1e-17 of the sum, special values chosen on the bits.
//! Each result is within a few `f64` ulp of the exact value (the bounds are given with each
//! helper and in runtime/BUILTINS.md), so its rounding to `f32` is the correctly rounded one,
//! as the CPU's, but where the exact value lies that close to an `f32` rounding midpoint.

/// [`super::Helper::TrigF32`].
pub(super) const TRIG_F32: &str =
    "// sin, cos and tan with an f32 result as the CPU computes them: the f64 function of the
// argument (an f32, or an integer of at most 32 bits, both exact in f64), rounded to f32.
// WGSL bounds sin's and cos's error absolutely and only inside [-pi, pi], and GPUs use fast
// approximations, far off near a zero of cos or for a large argument. |x| is reduced modulo
// pi/2 in f64: below 2^31 by a three-part pi/2 of 21, 21 and 53 bits (k < 2^31 times either
// of the first two parts is exact), else (only f32 values lie there) by Payne-Hanek with the
// bits of 2/pi in 24-bit pieces (each product of two 24-bit integers is exact in f64); then
// Taylor series of sin and cos on |r| <= pi/4, whose first omitted terms are below 1e-20.
// The f64 value is within a few f64 ulp of the exact one, so its rounding to f32 is the
// CPU's except where the exact value lies within about 2^-26 f32 ulp of a rounding midpoint
// (see runtime/BUILTINS.md).
struct TrigReduced {
    quadrant: u32,
    r: f64,
}

fn trig_pow2(s: i32) -> f64 {
    return f64(bitcast<f32>(u32(127i + s) << 23u));
}

fn trig_two_over_pi(i: i32) -> f64 {
    var pieces = array<u32, 8>(0xa2f983u, 0x6e4e44u, 0x1529fcu, 0x2757d1u, 0xf534ddu,
        0xc0db62u, 0x95993cu, 0x439041u);
    return f64(pieces[clamp(i, 0i, 7i)]);
}

// w = (4k + quadrant + r / (pi/2)) pi/2 with |r| <= pi/4, for a finite w >= 0.
fn trig_reduce(w: f64) -> TrigReduced {
    if w < 2147483648.0lf {
        let k = round(w * 0.6366197723675814lf);
        // Each exact partial remainder is taken through its bits (special_f64): NVIDIA's
        // compiler rewrites (w - k c1) - k c2 as w - k (c1 + c2), whose product is rounded
        // (on an H100, cos of the integer 34402 came out an f32 ulp off, and every sin of a
        // large integer with it).
        let r1 = special_f64(bitcast<u64>(w - k * 1.570796012878418lf));
        let r2 = special_f64(bitcast<u64>(r1 - k * 3.139164164167596e-7lf));
        let r = r2 - k * 6.223372171896613e-14lf;
        return TrigReduced(u32(k) & 3u, r);
    }
    let bits = bitcast<u32>(f32(w));
    // x = m 2^e with m a 24-bit integer and e >= 5; x 2/pi = sum of m c_i 2^(e - 24 i - 24)
    // over the pieces c_i, of which those with e - 24 i - 24 >= 2 are multiples of 4.
    let m = f64((bits & 0x7fffffu) | 0x800000u);
    let e = i32(bits >> 23u) - 150i;
    let first = select(0i, (e - 26i) / 24i + 1i, e >= 26i);
    let s = e - 24i * first - 24i;
    var t0 = (m * trig_two_over_pi(first)) * trig_pow2(s);
    t0 = t0 - 8.0lf * floor(t0 / 8.0lf);
    let t1 = (m * trig_two_over_pi(first + 1i)) * trig_pow2(s - 24i);
    let t2 = (m * trig_two_over_pi(first + 2i)) * trig_pow2(s - 48i);
    let t3 = (m * trig_two_over_pi(first + 3i)) * trig_pow2(s - 72i);
    let whole0 = floor(t0);
    let whole1 = floor(t1);
    // The exact fractional parts through their bits, so that no compiler regroups the sum.
    let fraction0 = special_f64(bitcast<u64>(t0 - whole0));
    let fraction1 = special_f64(bitcast<u64>(t1 - whole1));
    let fraction = ((fraction0 + fraction1) + t2) + t3;
    let k = round(fraction);
    let quadrant = (u32(whole0) + u32(whole1) + u32(k)) & 3u;
    return TrigReduced(quadrant, (fraction - k) * 1.5707963267948966lf);
}

// cos r = sum of (-1)^n r^2n / (2n)!, n <= 9.
fn trig_cos_kernel(r: f64) -> f64 {
    let z = r * r;
    var p = -1.5619206968586225e-16lf;
    p = p * z + 4.779477332387385e-14lf;
    p = p * z + -1.1470745597729725e-11lf;
    p = p * z + 2.08767569878681e-09lf;
    p = p * z + -2.755731922398589e-07lf;
    p = p * z + 2.48015873015873e-05lf;
    p = p * z + -0.001388888888888889lf;
    p = p * z + 0.041666666666666664lf;
    p = p * z + -0.5lf;
    p = p * z + 1.0lf;
    return p;
}

// sin r = r sum of (-1)^n r^2n / (2n + 1)!, n <= 9.
fn trig_sin_kernel(r: f64) -> f64 {
    let z = r * r;
    var p = -8.22063524662433e-18lf;
    p = p * z + 2.8114572543455206e-15lf;
    p = p * z + -7.647163731819816e-13lf;
    p = p * z + 1.6059043836821613e-10lf;
    p = p * z + -2.505210838544172e-08lf;
    p = p * z + 2.7557319223985893e-06lf;
    p = p * z + -0.0001984126984126984lf;
    p = p * z + 0.008333333333333333lf;
    p = p * z + -0.16666666666666666lf;
    p = p * z + 1.0lf;
    return r * p;
}

fn trig_not_finite(w: f64) -> bool {
    return (u32(bitcast<u64>(w) >> 32u) & 0x7ff00000u) == 0x7ff00000u;
}

fn trig_negative(w: f64) -> bool {
    return (u32(bitcast<u64>(w) >> 32u) & 0x80000000u) != 0u;
}

fn cos_f32(w: f64) -> f32 {
    if trig_not_finite(w) {
        return special_f32(0x7fc00000u);
    }
    let reduced = trig_reduce(abs(w));
    let c = trig_cos_kernel(reduced.r);
    let s = trig_sin_kernel(reduced.r);
    let q = reduced.quadrant;
    return f32(select(select(select(c, -s, q == 1u), -c, q == 2u), s, q == 3u));
}

fn sin_f32(w: f64) -> f32 {
    if trig_not_finite(w) {
        return special_f32(0x7fc00000u);
    }
    let reduced = trig_reduce(abs(w));
    let c = trig_cos_kernel(reduced.r);
    let s = trig_sin_kernel(reduced.r);
    let q = reduced.quadrant;
    let v = select(select(select(s, c, q == 1u), -s, q == 2u), -c, q == 3u);
    return f32(select(v, -v, trig_negative(w)));
}

fn tan_f32(w: f64) -> f32 {
    if trig_not_finite(w) {
        return special_f32(0x7fc00000u);
    }
    let reduced = trig_reduce(abs(w));
    let c = trig_cos_kernel(reduced.r);
    let s = trig_sin_kernel(reduced.r);
    let v = select(s / c, -c / s, (reduced.quadrant & 1u) == 1u);
    return f32(select(v, -v, trig_negative(w)));
}
";

/// [`super::Helper::ExpLogF32`].
pub(super) const EXP_LOG_F32: &str =
    "// exp, log, log2 and log10 with an f32 result as the CPU computes them: the f64 function
// of the argument (an f32, or an integer of at most 32 bits, both exact in f64), rounded to
// f32 (WGSL allows f32 exp 3 + 2|x| ulp, log 3 ulp, and GPUs use that). exp: w = k ln2 + r
// with |r| <= ln2/2 (a two-part ln2 whose first part times k is exact), the Taylor series of
// e^r to r^13 (the rest is below 5e-18), times 2^k made from its bits. log: w = 2^e m with m
// in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s) with s = (m - 1) / (m + 1), |s| <= 0.172, by
// its series to s^23 (the rest is below 1e-18). Special values are chosen on the bits;
// results beyond the f32 range round as IEEE says (inf, subnormals), without f32 arithmetic
// on subnormals (a GPU may flush them). See runtime/BUILTINS.md for the accuracy.
fn explog_is_nan(w: f64) -> bool {
    let bits = bitcast<u64>(w);
    let hi = u32(bits >> 32u) & 0x7fffffffu;
    return hi > 0x7ff00000u || (hi == 0x7ff00000u && u32(bits & 4294967295lu) != 0u);
}

// e^w in f64 for -160 ln2 < w < 1023 ln2 (before exp_f32 rounds it to f32; hyperbolic
// functions use it too): w = k ln2 + r, the series of e^r, times 2^k made from its bits.
fn exp_f64(w: f64) -> f64 {
    let k = round(w * 1.4426950408889634lf);
    // The exact w - k ln2_hi through its bits, so that no compiler makes it w - k ln2 (see
    // trig_reduce).
    let r = special_f64(bitcast<u64>(w - k * 6.93147180369123816490e-1lf))
        - k * 1.90821492927058770002e-10lf;
    var p = 1.6059043836821613e-10lf;
    p = p * r + 2.08767569878681e-09lf;
    p = p * r + 2.505210838544172e-08lf;
    p = p * r + 2.755731922398589e-07lf;
    p = p * r + 2.7557319223985893e-06lf;
    p = p * r + 2.48015873015873e-05lf;
    p = p * r + 0.0001984126984126984lf;
    p = p * r + 0.001388888888888889lf;
    p = p * r + 0.008333333333333333lf;
    p = p * r + 0.041666666666666664lf;
    p = p * r + 0.16666666666666666lf;
    p = p * r + 0.5lf;
    p = p * r + 1.0lf;
    p = p * r + 1.0lf;
    return p * bitcast<f64>(u64(u32(i32(k) + 1023i)) << 52u);
}

fn exp_f32(w: f64) -> f32 {
    if explog_is_nan(w) {
        return special_f32(0x7fc00000u);
    }
    // e^100 and e^-110 lie beyond the f32 range (and its rounding to zero).
    if w >= 100.0lf {
        return special_f32(0x7f800000u);
    }
    if w <= -110.0lf {
        return 0.0f;
    }
    let y = exp_f64(w);
    // Halfway between the largest f32 and 2^128 and beyond: infinity.
    if y >= 3.4028235677973366e38lf {
        return special_f32(0x7f800000u);
    }
    // Below the least normal f32: rounded to a multiple of 2^-149 (round is to even, as
    // IEEE's) and made from its bits.
    if y < 1.1754943508222875e-38lf {
        let scaled = y * bitcast<f64>(u64(149u + 1023u) << 52u);
        return bitcast<f32>(u32(round(scaled)));
    }
    return f32(y);
}

// The f32 bits of log's special values, or 0 for a finite w > 0.
fn log_special(w: f64) -> u32 {
    if explog_is_nan(w) {
        return 0x7fc00000u;
    }
    if w == 0.0lf {
        return 0xff800000u;
    }
    if w < 0.0lf {
        return 0x7fc00000u;
    }
    if (u32(bitcast<u64>(w) >> 32u) & 0x7ff00000u) == 0x7ff00000u {
        return 0x7f800000u;
    }
    return 0u;
}

// atanh s = s sum of s^2n / (2n + 1), n <= 11, for |s| <= 0.172 (log_split's and the
// hyperbolic functions'; the rest is below 1e-19 of the sum).
fn atanh_series(s: f64) -> f64 {
    let z = s * s;
    var p = 0.043478260869565216lf;
    p = p * z + 0.047619047619047616lf;
    p = p * z + 0.05263157894736842lf;
    p = p * z + 0.058823529411764705lf;
    p = p * z + 0.06666666666666667lf;
    p = p * z + 0.07692307692307693lf;
    p = p * z + 0.09090909090909091lf;
    p = p * z + 0.1111111111111111lf;
    p = p * z + 0.14285714285714285lf;
    p = p * z + 0.2lf;
    p = p * z + 0.3333333333333333lf;
    p = p * z + 1.0lf;
    return s * p;
}

// log w = e ln2 + log m for a finite w > 0 (normal in f64): (e, log m).
fn log_split(w: f64) -> vec2<f64> {
    let bits = bitcast<u64>(w);
    var e = i32(u32(bits >> 52u) & 0x7ffu) - 1023i;
    var m = bitcast<f64>((bits & 4503599627370495lu) | 4607182418800017408lu);
    if m > 1.4142135623730951lf {
        m = m * 0.5lf;
        e = e + 1i;
    }
    let f = m - 1.0lf;
    let s = f / (2.0lf + f);
    // 2 s p and 2 (s p) are the same bits: doubling is exact.
    return vec2<f64>(f64(e), 2.0lf * atanh_series(s));
}

fn log_f32(w: f64) -> f32 {
    let special = log_special(w);
    if special != 0u {
        return special_f32(special);
    }
    let parts = log_split(w);
    return f32(parts.x * 6.93147180369123816490e-1lf
        + (parts.y + parts.x * 1.90821492927058770002e-10lf));
}

fn log2_f32(w: f64) -> f32 {
    let special = log_special(w);
    if special != 0u {
        return special_f32(special);
    }
    let parts = log_split(w);
    return f32(parts.x + parts.y * 1.4426950408889634lf);
}

fn log10_f32(w: f64) -> f32 {
    let special = log_special(w);
    if special != 0u {
        return special_f32(special);
    }
    let parts = log_split(w);
    return f32(parts.x * 0.3010299956639812lf + parts.y * 0.4342944819032518lf);
}
";

/// [`super::Helper::FunctionArgumentF64`].
pub(super) const FUNCTION_ARGUMENT_F64: &str =
    "// The argument of an f32 function (an f32 or an integer, held in f64) tested on its bits, as
// a shader compiler may assume floats are finite and fold tests of NaN and infinities.
// Classes: 0 finite, 1 infinite, 2 NaN.
fn argument_class(w: f64) -> u32 {
    let bits = bitcast<u64>(w);
    let hi = u32(bits >> 32u) & 0x7fffffffu;
    if hi < 0x7ff00000u {
        return 0u;
    }
    return select(1u, 2u, hi > 0x7ff00000u || u32(bits & 4294967295lu) != 0u);
}

fn argument_negative(w: f64) -> bool {
    return (u32(bitcast<u64>(w) >> 32u) & 0x80000000u) != 0u;
}

// An argument below 2^-13 in magnitude as the f32 it is, the sign of a zero kept and a
// subnormal made from its bits (f32(w) may flush it to 0): the functions whose Taylor series
// start x + c x^3 (|c| <= 1/3) round to x itself there, since |c| x^2 < 2^-27 is far below the
// half ulp (2^-25 of x or more) that would move the rounding.
fn argument_f32(w: f64) -> f32 {
    let sign = u32(bitcast<u64>(w) >> 32u) & 0x80000000u;
    let a = abs(w);
    if a >= 1.1754943508222875e-38lf {
        return f32(w);
    }
    let scaled = a * bitcast<f64>(u64(149u + 1023u) << 52u);
    return bitcast<f32>(sign | u32(scaled));
}
";

/// [`super::Helper::InverseTrigF32`].
pub(super) const INVERSE_TRIG_F32: &str =
    "// asin, acos and atan with an f32 result as the CPU computes them: the f64 function of the
// argument (an f32, or an integer of at most 32 bits, both exact in f64), rounded to f32
// (WGSL allows f32 atan 4096 ulp and derives asin and acos from formulas that cancel near
// 1). All three are atan of a quotient of at most 1: asin x = atan(x / sqrt(1 - x^2)),
// acos x = atan(sqrt(1 - x^2) / x), 1 - x^2 as (1 - x)(1 + x), exact to a few f64 ulp even
// next to 1 (1 - x is exact there). Each step's relative error passes to the result at most
// once (atan's condition number is below 1), so the f64 result is within about 30 f64 ulp
// of the exact value, if the GPU's f64 division and square root are within 3 ulp.

// atan b for 0 <= b <= 1: two halvings, atan b = 2 atan(b / (1 + sqrt(1 + b^2))), leave
// c <= tan(pi/16) < 0.199, and atan c = c sum of (-1)^n c^2n / (2n + 1), n <= 11, whose
// first omitted term is below 6e-19 of the sum.
fn atan_kernel(b: f64) -> f64 {
    let h = b / (1.0lf + sqrt(1.0lf + b * b));
    let c = h / (1.0lf + sqrt(1.0lf + h * h));
    let z = c * c;
    var p = -0.043478260869565216lf;
    p = p * z + 0.047619047619047616lf;
    p = p * z + -0.05263157894736842lf;
    p = p * z + 0.058823529411764705lf;
    p = p * z + -0.06666666666666667lf;
    p = p * z + 0.07692307692307693lf;
    p = p * z + -0.09090909090909091lf;
    p = p * z + 0.1111111111111111lf;
    p = p * z + -0.14285714285714285lf;
    p = p * z + 0.2lf;
    p = p * z + -0.3333333333333333lf;
    p = p * z + 1.0lf;
    return 4.0lf * c * p;
}

// atan(y / x) for finite y, x >= 0, not both 0: the quotient taken at most 1, else its
// inverse's atan subtracted from pi/2 (>= pi/4, nothing cancels), and no division by 0
// (lavapipe's f64 division makes x / 0 NaN).
fn atan_ratio(y: f64, x: f64) -> f64 {
    if y <= x {
        return atan_kernel(y / x);
    }
    return 1.5707963267948966lf - atan_kernel(x / y);
}

fn atan_f32(w: f64) -> f32 {
    let kind = argument_class(w);
    if kind == 2u {
        return special_f32(0x7fc00000u);
    }
    let a = abs(w);
    var v = 1.5707963267948966lf;
    if kind == 0u {
        if a < 0.0001220703125lf {
            return argument_f32(w);
        }
        v = atan_ratio(a, 1.0lf);
    }
    return f32(select(v, -v, argument_negative(w)));
}

fn asin_f32(w: f64) -> f32 {
    let a = abs(w);
    if argument_class(w) != 0u || a > 1.0lf {
        return special_f32(0x7fc00000u);
    }
    if a < 0.0001220703125lf {
        return argument_f32(w);
    }
    let v = atan_ratio(a, sqrt((1.0lf - a) * (1.0lf + a)));
    return f32(select(v, -v, argument_negative(w)));
}

// acos -x = pi - acos x: pi - v >= pi/2 for v <= pi/2, nothing cancels.
fn acos_f32(w: f64) -> f32 {
    let a = abs(w);
    if argument_class(w) != 0u || a > 1.0lf {
        return special_f32(0x7fc00000u);
    }
    let v = atan_ratio(sqrt((1.0lf - a) * (1.0lf + a)), a);
    return f32(select(v, 3.141592653589793lf - v, w < 0.0lf));
}
";

/// [`super::Helper::HyperbolicF32`].
pub(super) const HYPERBOLIC_F32: &str =
    "// sinh, cosh, tanh, asinh, acosh and atanh with an f32 result as the CPU computes them: the
// f64 function of the argument (an f32, or an integer of at most 32 bits, both exact in
// f64), rounded to f32 (WGSL derives them from exp and log by formulas that cancel near 0
// and 1, bounded only absolutely there). Each is written so that nothing cancels: sinh and
// tanh by series or e^t - 1 near 0, the inverse functions as log(1 + u) of a u computed from
// sums of positive terms (acosh from t = x - 1, exact near 1; atanh from 1 - x, exact near
// 1), log(1 + u) without rounding 1 + u where u is small. The f64 result is within about
// 30 f64 ulp of the exact value, if the GPU's f64 division and square root are within 3 ulp.
// Results beyond the f32 range are infinities; none but the argument itself (below 2^-13)
// is an f32 subnormal.

// e^t - 1 for 0 <= t < 128: below 1 the Taylor series t sum of t^n / (n + 1)!, n <= 17, of
// positive terms (the rest is below 9e-18 of the sum); from 1 on, e^t - 1 >= e - 1, which
// magnifies e^t's relative error at most e / (e - 1) times.
fn hyperbolic_expm1(t: f64) -> f64 {
    if t >= 1.0lf {
        return exp_f64(t) - 1.0lf;
    }
    var p = 1.5619206968586225e-16lf;
    p = p * t + 2.8114572543455206e-15lf;
    p = p * t + 4.779477332387385e-14lf;
    p = p * t + 7.647163731819816e-13lf;
    p = p * t + 1.1470745597729725e-11lf;
    p = p * t + 1.6059043836821613e-10lf;
    p = p * t + 2.08767569878681e-09lf;
    p = p * t + 2.505210838544172e-08lf;
    p = p * t + 2.755731922398589e-07lf;
    p = p * t + 2.7557319223985893e-06lf;
    p = p * t + 2.48015873015873e-05lf;
    p = p * t + 0.0001984126984126984lf;
    p = p * t + 0.001388888888888889lf;
    p = p * t + 0.008333333333333333lf;
    p = p * t + 0.041666666666666664lf;
    p = p * t + 0.16666666666666666lf;
    p = p * t + 0.5lf;
    p = p * t + 1.0lf;
    return t * p;
}

// log(1 + u) for a finite u >= 0. Below sqrt(2) - 1: 2 atanh(s) with s = u / (2 + u) <= 0.172,
// 1 + u never rounded (that would lose u's low bits). From there on: log_split of 1 + u,
// whose rounding moves the logarithm by at most 2^-53, against a logarithm of at least 0.34.
fn hyperbolic_log1p(u: f64) -> f64 {
    if u >= 0.41421356237309515lf {
        let parts = log_split(1.0lf + u);
        return parts.x * 6.93147180369123816490e-1lf
            + (parts.y + parts.x * 1.90821492927058770002e-10lf);
    }
    return 2.0lf * atanh_series(u / (2.0lf + u));
}

// An infinity with the sign of w.
fn hyperbolic_infinity(w: f64) -> f32 {
    return special_f32(select(0x7f800000u, 0xff800000u, argument_negative(w)));
}

// Halfway between the largest f32 and 2^128 and beyond, v rounds to infinity.
fn hyperbolic_overflows(v: f64) -> bool {
    return v >= 3.4028235677973366e38lf;
}

// sinh a = a sum of a^2n / (2n + 1)!, n <= 8, below 1 (the rest is below 9e-18 of the sum);
// (e^a - e^-a) / 2 from 1 on, where e^-a <= e^a / 7. sinh 100 is beyond the f32 range.
fn sinh_f32(w: f64) -> f32 {
    let kind = argument_class(w);
    if kind == 2u {
        return special_f32(0x7fc00000u);
    }
    let a = abs(w);
    if kind == 1u || a >= 100.0lf {
        return hyperbolic_infinity(w);
    }
    if a < 0.0001220703125lf {
        return argument_f32(w);
    }
    var v: f64;
    if a < 1.0lf {
        let z = a * a;
        var p = 2.8114572543455206e-15lf;
        p = p * z + 7.647163731819816e-13lf;
        p = p * z + 1.6059043836821613e-10lf;
        p = p * z + 2.505210838544172e-08lf;
        p = p * z + 2.7557319223985893e-06lf;
        p = p * z + 0.0001984126984126984lf;
        p = p * z + 0.008333333333333333lf;
        p = p * z + 0.16666666666666666lf;
        p = p * z + 1.0lf;
        v = a * p;
    } else {
        let e = exp_f64(a);
        v = 0.5lf * (e - 1.0lf / e);
    }
    if hyperbolic_overflows(v) {
        return hyperbolic_infinity(w);
    }
    return f32(select(v, -v, argument_negative(w)));
}

// (e^a + e^-a) / 2, a sum of positive terms.
fn cosh_f32(w: f64) -> f32 {
    let kind = argument_class(w);
    if kind == 2u {
        return special_f32(0x7fc00000u);
    }
    let a = abs(w);
    if kind == 1u || a >= 100.0lf {
        return special_f32(0x7f800000u);
    }
    let e = exp_f64(a);
    let v = 0.5lf * (e + 1.0lf / e);
    if hyperbolic_overflows(v) {
        return special_f32(0x7f800000u);
    }
    return f32(v);
}

// tanh a = m / (m + 2) with m = e^2a - 1; from 20 on it is 1 - 2e^-40 or nearer, 1 in f64.
fn tanh_f32(w: f64) -> f32 {
    let kind = argument_class(w);
    if kind == 2u {
        return special_f32(0x7fc00000u);
    }
    let a = abs(w);
    if kind == 1u || a >= 20.0lf {
        return select(1.0f, -1.0f, argument_negative(w));
    }
    if a < 0.0001220703125lf {
        return argument_f32(w);
    }
    let m = hyperbolic_expm1(2.0lf * a);
    let v = m / (m + 2.0lf);
    return f32(select(v, -v, argument_negative(w)));
}

// asinh a = log(1 + u), u = a + a^2 / (1 + sqrt(1 + a^2)) (a^2 of an f32 or i32 is far from
// f64 overflow).
fn asinh_f32(w: f64) -> f32 {
    let kind = argument_class(w);
    if kind == 2u {
        return special_f32(0x7fc00000u);
    }
    if kind == 1u {
        return hyperbolic_infinity(w);
    }
    let a = abs(w);
    if a < 0.0001220703125lf {
        return argument_f32(w);
    }
    let v = hyperbolic_log1p(a + a * a / (1.0lf + sqrt(1.0lf + a * a)));
    return f32(select(v, -v, argument_negative(w)));
}

// acosh x = log(1 + u), u = t + sqrt(t (t + 2)), t = x - 1 (acosh 1 is +0).
fn acosh_f32(w: f64) -> f32 {
    let kind = argument_class(w);
    if kind == 2u || argument_negative(w) || (kind == 0u && w < 1.0lf) {
        return special_f32(0x7fc00000u);
    }
    if kind == 1u {
        return special_f32(0x7f800000u);
    }
    let t = w - 1.0lf;
    return f32(hyperbolic_log1p(t + sqrt(t * (t + 2.0lf))));
}

// atanh a = log(1 + u) / 2, u = 2a / (1 - a), from 0.172 on, where u >= sqrt(2) - 1; below,
// where log(1 + u) would be 2 atanh(u / (2 + u)) = 2 atanh a, the series of a itself, without
// the roundings of two quotients. atanh 1 is infinite.
fn atanh_f32(w: f64) -> f32 {
    let a = abs(w);
    if argument_class(w) != 0u || a > 1.0lf {
        return special_f32(0x7fc00000u);
    }
    if a == 1.0lf {
        return hyperbolic_infinity(w);
    }
    if a < 0.0001220703125lf {
        return argument_f32(w);
    }
    var v = atanh_series(a);
    if a >= 0.17157287525380996lf {
        v = 0.5lf * hyperbolic_log1p(2.0lf * a / (1.0lf - a));
    }
    return f32(select(v, -v, argument_negative(w)));
}
";
