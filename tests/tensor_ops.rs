//! fill, cast, gather_rows and log_softmax: checked against plain references written here. cast is
//! checked for all 100 dtype pairs, exhaustively for the 8- and 16-bit sources, with float16 and
//! bfloat16 results compared to a nearest-value search over every value of the type.

mod common;

use common::{pow2, with_1_and_4_threads, Rng};
use half::{bf16, f16};
use lodtensor::ops::{cast, fill, gather_rows, log_softmax};
use lodtensor::{DType, Dim, Element, Error, LoDTensor, Lod, Tensor};
use proptest::prelude::*;
use std::cmp::Ordering;

fn dense<T: Element>(data: &[T], dims: &[usize]) -> LoDTensor {
    LoDTensor::dense(Tensor::from_slice(data, dims).unwrap())
}

fn vals<T: Element>(t: &LoDTensor) -> Vec<T> {
    t.tensor().as_slice::<T>().unwrap().to_vec()
}

fn raw(t: &LoDTensor) -> Vec<u8> {
    t.tensor().bytes().unwrap().to_vec()
}

fn from_raw(dtype: DType, bytes: &[u8]) -> LoDTensor {
    let n = bytes.len() / dtype.size();
    LoDTensor::dense(Tensor::from_bytes(dtype, Dim::new(&[n]).unwrap(), bytes).unwrap())
}

// ---- the exact value of an element, and the reference conversion ----------------------------

#[derive(Clone, Copy, Debug)]
enum Exact {
    Int(i128),
    Float(f64),
}

fn is_float(d: DType) -> bool {
    matches!(d, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
}

fn int_range(d: DType) -> (i128, i128, u32) {
    match d {
        DType::U8 => (0, 255, 8),
        DType::I8 => (-128, 127, 8),
        DType::I16 => (i16::MIN as i128, i16::MAX as i128, 16),
        DType::I32 => (i32::MIN as i128, i32::MAX as i128, 32),
        DType::I64 => (i64::MIN as i128, i64::MAX as i128, 64),
        _ => unreachable!(),
    }
}

/// Element `b` (little-endian bytes) of dtype `d`, exactly.
fn decode(d: DType, b: &[u8]) -> Exact {
    match d {
        DType::Bool => Exact::Int((b[0] != 0) as i128),
        DType::U8 => Exact::Int(b[0] as i128),
        DType::I8 => Exact::Int(b[0] as i8 as i128),
        DType::I16 => Exact::Int(i16::from_le_bytes([b[0], b[1]]) as i128),
        DType::I32 => Exact::Int(i32::from_le_bytes(b.try_into().unwrap()) as i128),
        DType::I64 => Exact::Int(i64::from_le_bytes(b.try_into().unwrap()) as i128),
        DType::F16 => Exact::Float(f16::from_le_bytes([b[0], b[1]]).to_f64()),
        DType::BF16 => Exact::Float(bf16::from_le_bytes([b[0], b[1]]).to_f64()),
        DType::F32 => Exact::Float(f32::from_le_bytes(b.try_into().unwrap()) as f64),
        DType::F64 => Exact::Float(f64::from_le_bytes(b.try_into().unwrap())),
    }
}

/// Compares an exact value with a finite f64, without rounding either.
fn cmp_exact(x: Exact, v: f64) -> Ordering {
    match x {
        Exact::Float(f) => f.partial_cmp(&v).unwrap(),
        Exact::Int(i) => {
            if v >= 1e30 {
                return Ordering::Less;
            }
            if v <= -1e30 {
                return Ordering::Greater;
            }
            let fl = v.floor();
            match i.cmp(&(fl as i128)) {
                Ordering::Equal if v > fl => Ordering::Less,
                o => o,
            }
        }
    }
}

/// Every non-negative value of a 16-bit float type in bit order (= value order), the infinity
/// standing at 2^(emax+1), where rounding to nearest-even puts it.
fn half_table(bits_to_f64: fn(u16) -> f64, inf_bits: u16, inf_as: f64) -> Vec<(f64, u16)> {
    (0..inf_bits).map(|b| (bits_to_f64(b), b)).chain([(inf_as, inf_bits)]).collect()
}

/// The nearest value of the table to `x`, ties to the even bit pattern; the sign from `x`.
fn nearest_half(x: Exact, table: &[(f64, u16)], nan_bits: u16) -> u16 {
    let (neg, mag) = match x {
        Exact::Float(f) if f.is_nan() => return nan_bits,
        Exact::Float(f) => (f.is_sign_negative(), Exact::Float(f.abs())),
        Exact::Int(i) => (i < 0, Exact::Int(i.abs())),
    };
    let sign = if neg { 0x8000 } else { 0 };
    let hi = table.partition_point(|&(v, _)| cmp_exact(mag, v) == Ordering::Greater);
    if hi == table.len() {
        return table[hi - 1].1 | sign; // beyond the infinity's stand-in
    }
    if cmp_exact(mag, table[hi].0) == Ordering::Equal {
        return table[hi].1 | sign;
    }
    let (lo, hi) = (table[hi - 1], table[hi]);
    let mid = (lo.0 + hi.0) / 2.0;
    let pick = match cmp_exact(mag, mid) {
        Ordering::Less => lo,
        Ordering::Greater => hi,
        Ordering::Equal => {
            if lo.1 % 2 == 0 {
                lo
            } else {
                hi
            }
        }
    };
    pick.1 | sign
}

struct Tables {
    f16: Vec<(f64, u16)>,
    bf16: Vec<(f64, u16)>,
}

fn tables() -> Tables {
    Tables {
        f16: half_table(|b| f16::from_bits(b).to_f64(), 0x7C00, 65536.0),
        bf16: half_table(|b| bf16::from_bits(b).to_f64(), 0x7F80, pow2(128)),
    }
}

/// The reference conversion of `x` to dtype `d`, as little-endian bytes. Integer targets wrap
/// (from integers) or truncate and saturate (from floats, NaN to 0), like Rust's `as`; bool is
/// `!= 0`; f32/f64 are Rust's `as`; f16/bf16 the nearest value.
fn convert_ref(x: Exact, d: DType, t: &Tables) -> Vec<u8> {
    match d {
        DType::Bool => vec![match x {
            Exact::Int(i) => (i != 0) as u8,
            Exact::Float(f) => (f != 0.0) as u8,
        }],
        DType::F32 => match x {
            Exact::Int(i) => (i as i64 as f32).to_le_bytes().to_vec(),
            Exact::Float(f) => (f as f32).to_le_bytes().to_vec(),
        },
        DType::F64 => match x {
            Exact::Int(i) => (i as i64 as f64).to_le_bytes().to_vec(),
            Exact::Float(f) => f.to_le_bytes().to_vec(),
        },
        DType::F16 => nearest_half(x, &t.f16, 0x7E00).to_le_bytes().to_vec(),
        DType::BF16 => nearest_half(x, &t.bf16, 0x7FC0).to_le_bytes().to_vec(),
        _ => {
            let (min, max, bits) = int_range(d);
            let v: i128 = match x {
                Exact::Int(i) => {
                    let m = i.rem_euclid(1i128 << bits);
                    if min < 0 && m > max {
                        m - (1i128 << bits)
                    } else {
                        m
                    }
                }
                Exact::Float(f) if f.is_nan() => 0,
                Exact::Float(f) => {
                    let t = f.trunc();
                    if t <= min as f64 {
                        min
                    } else if t >= max as f64 {
                        max
                    } else {
                        t as i128
                    }
                }
            };
            v.to_le_bytes()[..d.size()].to_vec()
        }
    }
}

fn same_element(d: DType, got: &[u8], want: &[u8]) -> bool {
    if got == want {
        return true;
    }
    // Any NaN matches any NaN.
    is_float(d)
        && matches!(decode(d, got), Exact::Float(f) if f.is_nan())
        && matches!(decode(d, want), Exact::Float(f) if f.is_nan())
}

/// Source elements for dtype `d`: every bit pattern of the 8- and 16-bit types; for the others,
/// edge values, values near float16/bfloat16 rounding midpoints, and random bit patterns.
fn source_bytes(d: DType, rng: &mut Rng) -> Vec<u8> {
    let size = d.size();
    if d == DType::Bool {
        return (0..=255u8).collect(); // any non-zero byte reads as true
    }
    if size <= 2 {
        return (0..1u32 << (8 * size)).flat_map(|b| b.to_le_bytes()[..size].to_vec()).collect();
    }
    let mut values: Vec<f64> = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        255.0,
        256.0,
        -129.0,
        300.7,
        -300.7,
        65504.0,
        65519.99,
        65520.0,
        1e6,
        pow2(31),
        -pow2(31) - 1.0,
        pow2(53) + 1.0,
        pow2(63),
        -pow2(63),
        1e20,
        -1e20,
        3.4e38,
        3.39e38,
        1e-8,
        1e-40,
        f64::MAX,
        f64::MIN_POSITIVE,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    // Midpoints between neighbours of float16 and bfloat16, exactly and nudged either way.
    for _ in 0..2000 {
        let h = (rng.next() % 0x7BFF) as u16;
        for (a, b) in [
            (f16::from_bits(h).to_f64(), f16::from_bits(h + 1).to_f64()),
            (bf16::from_bits(h).to_f64(), bf16::from_bits(h + 1).to_f64()),
        ] {
            let m = (a + b) / 2.0;
            values.extend([m, m * (1.0 + pow2(-40)), m * (1.0 - pow2(-40)), -m]);
        }
    }
    let mut out = Vec::new();
    for v in values {
        match d {
            DType::F32 => out.extend((v as f32).to_le_bytes()),
            DType::F64 => out.extend(v.to_le_bytes()),
            DType::I32 => out.extend((v as i32).to_le_bytes()),
            DType::I64 => out.extend((v as i64).to_le_bytes()),
            _ => unreachable!(),
        }
    }
    let ints: [i64; 8] =
        [i64::MIN, i64::MAX, i32::MIN as i64, i32::MAX as i64, (1 << 53) + 1, -(1 << 60) - 3, 65520, -1];
    for i in ints {
        out.extend(&i.to_le_bytes()[..size]);
    }
    // Random bit patterns, and random integers in a moderate range.
    for k in 0..20_000 {
        let r = rng.next();
        let r = if k % 2 == 0 { r } else { (r as i64 >> (r % 60)) as u64 };
        out.extend(&r.to_le_bytes()[..size]);
    }
    out
}

#[test]
fn cast_all_100_pairs_against_the_reference() {
    let t = tables();
    let mut rng = Rng(0x9E3779B97F4A7C15);
    for src in DType::ALL {
        let bytes = source_bytes(src, &mut rng);
        let x = LoDTensor::new(
            Tensor::from_bytes(src, Dim::new(&[bytes.len() / src.size()]).unwrap(), &bytes).unwrap(),
            Lod::empty(),
        )
        .unwrap();
        for dst in DType::ALL {
            let out = cast(&x, dst).unwrap();
            assert_eq!(out.tensor().dtype(), dst);
            let got = raw(&out);
            for (k, (s, g)) in bytes.chunks(src.size()).zip(got.chunks(dst.size())).enumerate() {
                let want = convert_ref(decode(src, s), dst, &t);
                assert!(
                    same_element(dst, g, &want),
                    "{src} -> {dst}, element {k} {:?}: got {g:?}, want {want:?}",
                    decode(src, s)
                );
            }
        }
    }
}

#[test]
fn cast_spot_values_and_lod() {
    // Rust `as` semantics, spelled out.
    let x = dense(&[300i32, -1, 128, -129], &[4]);
    assert_eq!(vals::<u8>(&cast(&x, DType::U8).unwrap()), [44, 255, 128, 127]);
    assert_eq!(vals::<i8>(&cast(&x, DType::I8).unwrap()), [44, -1, -128, 127]);
    let x = dense(&[2.9f32, -2.9, f32::NAN, 1e10, -1e10, f32::INFINITY], &[6]);
    assert_eq!(vals::<i32>(&cast(&x, DType::I32).unwrap()), [2, -2, 0, i32::MAX, i32::MIN, i32::MAX]);
    assert_eq!(vals::<u8>(&cast(&x, DType::U8).unwrap()), [2, 0, 0, 255, 0, 255]);
    assert_eq!(raw(&cast(&x, DType::Bool).unwrap()), [1, 1, 1, 1, 1, 1]);
    assert_eq!(raw(&cast(&dense(&[0.0f64, -0.0, 0.5], &[3]), DType::Bool).unwrap()), [0, 0, 1]);
    let b = LoDTensor::new(
        Tensor::from_bytes(DType::Bool, Dim::new(&[3, 1]).unwrap(), &[0, 1, 7]).unwrap(),
        Lod::from_offsets(vec![vec![0, 1, 3]]).unwrap(),
    )
    .unwrap();
    let f = cast(&b, DType::F32).unwrap();
    assert_eq!(vals::<f32>(&f), [0., 1., 1.]);
    assert_eq!(f.lod(), b.lod());
    assert_eq!(f.dims(), b.dims());
    // Same dtype: a copy, not a share.
    let c = cast(&f, DType::F32).unwrap();
    assert!(!c.tensor().shares_memory_with(f.tensor()));
    // float16 from float64: correctly rounded even where the top 32 bits look like a tie.
    let v = 1.0 + pow2(-11) + pow2(-40);
    assert_eq!(vals::<f16>(&cast(&dense(&[v], &[1]), DType::F16).unwrap()), [f16::from_f64(1.0 + pow2(-10))]);
}

// ---- fill --------------------------------------------------------------------------------------

#[test]
fn fill_every_dtype() {
    let t = tables();
    for d in DType::ALL {
        for v in [0.0, 1.0] {
            let out = fill(d, Dim::new(&[2, 3]).unwrap(), v).unwrap();
            assert_eq!(out.dims().as_slice(), [2, 3]);
            assert!(out.lod().is_empty());
            let want = convert_ref(Exact::Float(v), d, &t);
            assert!(raw(&out).chunks(d.size()).all(|c| c == want.as_slice()), "{d} {v}");
        }
    }
    assert_eq!(vals::<i64>(&fill(DType::I64, Dim::new(&[2]).unwrap(), -pow2(63)).unwrap()), [i64::MIN; 2]);
    assert_eq!(vals::<u8>(&fill(DType::U8, Dim::new(&[1]).unwrap(), 255.0).unwrap()), [255]);
    assert_eq!(vals::<i8>(&fill(DType::I8, Dim::new(&[]).unwrap(), -128.0).unwrap()), [-128]);
    assert_eq!(vals::<f32>(&fill(DType::F32, Dim::new(&[1]).unwrap(), 0.1).unwrap()), [0.1f32]);
    assert!(vals::<f32>(&fill(DType::F32, Dim::new(&[1]).unwrap(), f64::NAN).unwrap())[0].is_nan());
    assert_eq!(
        vals::<f16>(&fill(DType::F16, Dim::new(&[1]).unwrap(), f64::NEG_INFINITY).unwrap()),
        [f16::NEG_INFINITY]
    );
    assert_eq!(vals::<bf16>(&fill(DType::BF16, Dim::new(&[1]).unwrap(), 3.0e38).unwrap()), [bf16::from_f64(3.0e38)]);
    assert_eq!(vals::<f64>(&fill(DType::F64, Dim::new(&[0, 4]).unwrap(), 5.0).unwrap()), Vec::<f64>::new());
    // More bytes than memory holds (Miri stops at such a request rather than failing it); then
    // more than a size can say.
    if !cfg!(miri) {
        assert!(matches!(fill(DType::U8, Dim::new(&[1 << 61, 2]).unwrap(), 1.0), Err(Error::OutOfMemory(_))));
    }
    let vast = fill(DType::F64, Dim::new(&[1 << 61, 2]).unwrap(), 1.0);
    assert!(matches!(&vast, Err(Error::OutOfMemory(m)) if m.contains("overflows")), "{vast:?}");
    // Nothing is silently rounded: fractions, out-of-range values, NaN/inf for integers, non-0/1
    // bools, float overflow.
    for (d, v) in [
        (DType::I32, 2.5),
        (DType::U8, 256.0),
        (DType::U8, -1.0),
        (DType::I8, 128.0),
        (DType::I16, -32769.0),
        (DType::I32, pow2(31)),
        (DType::I64, pow2(63)),
        (DType::I64, f64::NAN),
        (DType::I32, f64::INFINITY),
        (DType::Bool, 2.0),
        (DType::Bool, 0.5),
        (DType::Bool, f64::NAN),
        (DType::F16, 1e6),
        (DType::BF16, 1e39),
        (DType::F32, -1e39),
    ] {
        let e = fill(d, Dim::new(&[2]).unwrap(), v);
        assert!(matches!(&e, Err(Error::InvalidArgument(m)) if m.contains("value")), "{d} {v}: {e:?}");
    }
}

// ---- gather_rows ---------------------------------------------------------------------------------

#[test]
fn gather_rows_examples_and_errors() {
    let x = LoDTensor::from_slice(&[0f32, 1., 10., 11., 20., 21., 30., 31.], &[4, 2], vec![vec![0, 1, 4]]).unwrap();
    let out = gather_rows(&x, &dense(&[3i64, 0, 1, 2, 2], &[5])).unwrap();
    assert_eq!(vals::<f32>(&out), [30., 31., 0., 1., 10., 11., 20., 21., 20., 21.]);
    assert_eq!(out.dims().as_slice(), [5, 2]);
    assert!(out.lod().is_empty());
    let out = gather_rows(&x, &dense(&[1i32, 1], &[2, 1])).unwrap();
    assert_eq!(vals::<f32>(&out), [10., 11., 10., 11.]);
    assert_eq!(gather_rows(&x, &dense::<i64>(&[], &[0])).unwrap().dims().as_slice(), [0, 2]);
    let e = gather_rows(&x, &dense(&[0i64, 2, 4, 1], &[4]));
    assert!(matches!(&e, Err(Error::OutOfRange(m)) if m.contains("index[2] = 4")), "{e:?}");
    let e = gather_rows(&x, &dense(&[-1i32], &[1]));
    assert!(matches!(&e, Err(Error::OutOfRange(m)) if m.contains("index[0] = -1")), "{e:?}");
    assert!(matches!(gather_rows(&x, &dense(&[0f32], &[1])), Err(Error::Unsupported(_))));
    assert!(matches!(gather_rows(&x, &dense(&[0i64, 1], &[1, 2])), Err(Error::InvalidArgument(_))));
    assert!(matches!(gather_rows(&dense(&[1f32], &[]), &dense(&[0i64], &[1])), Err(Error::InvalidArgument(_))));
}

// ---- log_softmax ---------------------------------------------------------------------------------

fn log_softmax_ref(x: &[f64], width: usize) -> Vec<f64> {
    let mut out = Vec::new();
    for row in x.chunks(width) {
        let m = row.iter().cloned().fold(f64::MIN, f64::max);
        let s: f64 = row.iter().map(|v| (v - m).exp()).sum();
        out.extend(row.iter().map(|v| v - m - s.ln()));
    }
    out
}

#[test]
fn log_softmax_examples_and_errors() {
    let x = [1.0f64, 2., 3., 1000., 1000., -1000.];
    let want = log_softmax_ref(&x, 3);
    let lod = Lod::from_offsets(vec![vec![0, 2]]).unwrap();
    let t = LoDTensor::new(Tensor::from_slice(&x, &[2, 3]).unwrap(), lod.clone()).unwrap();
    let out = log_softmax(&t).unwrap();
    assert_eq!(out.lod(), &lod);
    for (g, w) in vals::<f64>(&out).iter().zip(&want) {
        assert!((g - w).abs() < 1e-12, "{g} {w}");
    }
    assert!((want[0] - (1.0 - (1f64.exp() + 2f64.exp() + 3f64.exp()).ln())).abs() < 1e-12);
    assert!((want[3] - (-(2f64.ln()))).abs() < 1e-12);
    let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    let got = vals::<f32>(&log_softmax(&dense(&x32, &[2, 3])).unwrap());
    assert!(got.iter().zip(&want).all(|(g, w)| (*g as f64 - w).abs() <= w.abs() * 1e-6 + 1e-6));
    let xh: Vec<f16> = x.iter().map(|&v| f16::from_f64(v)).collect();
    let got = vals::<f16>(&log_softmax(&dense(&xh, &[2, 3])).unwrap());
    assert!(got.iter().zip(&want).all(|(g, w)| (g.to_f64() - w).abs() <= w.abs() * 1e-3 + 1e-3), "{got:?}");
    let xb: Vec<bf16> = x.iter().map(|&v| bf16::from_f64(v)).collect();
    let got = vals::<bf16>(&log_softmax(&dense(&xb, &[3, 2])).unwrap());
    let want_b = log_softmax_ref(&xb.iter().map(|v| v.to_f64()).collect::<Vec<_>>(), 2);
    assert!(got.iter().zip(&want_b).all(|(g, w)| (g.to_f64() - w).abs() <= w.abs() * 8e-3 + 1e-3), "{got:?}");
    // 1-d: one row; width 0: nothing.
    assert_eq!(vals::<f64>(&log_softmax(&dense(&[5.0f64], &[1])).unwrap()), [0.0]);
    assert_eq!(log_softmax(&dense::<f32>(&[], &[3, 0])).unwrap().dims().as_slice(), [3, 0]);
    assert!(matches!(log_softmax(&dense(&[1i32], &[1])), Err(Error::Unsupported(_))));
    assert!(matches!(log_softmax(&dense(&[1f32], &[])), Err(Error::InvalidArgument(_))));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn gather_rows_matches_reference(rows in 1usize..50, width in 0usize..4, idx in prop::collection::vec(any::<u16>(), 0..200), seed in any::<u64>()) {
        let mut rng = Rng(seed | 1);
        let index: Vec<i64> = idx.iter().map(|&i| (i as usize % rows) as i64).collect();
        for d in DType::ALL {
            let bytes: Vec<u8> = (0..rows * width * d.size()).map(|_| if d == DType::Bool { (rng.next() & 1) as u8 } else { rng.next() as u8 }).collect();
            let x = LoDTensor::dense(Tensor::from_bytes(d, Dim::new(&[rows, width]).unwrap(), &bytes).unwrap());
            let rb = width * d.size();
            let want: Vec<u8> = index.iter().flat_map(|&i| bytes[i as usize * rb..(i as usize + 1) * rb].to_vec()).collect();
            prop_assert_eq!(raw(&gather_rows(&x, &dense(&index, &[index.len()])).unwrap()), want.clone());
            let i32s: Vec<i32> = index.iter().map(|&i| i as i32).collect();
            prop_assert_eq!(raw(&gather_rows(&x, &dense(&i32s, &[index.len(), 1])).unwrap()), want);
        }
    }

    #[test]
    fn log_softmax_matches_reference(rows in 0usize..20, width in 1usize..40, seed in any::<u64>()) {
        let mut rng = Rng(seed | 1);
        let x: Vec<f64> = (0..rows * width).map(|_| (rng.next() % 20_000) as f64 / 100.0 - 100.0).collect();
        let want = log_softmax_ref(&x, width);
        let got = vals::<f64>(&log_softmax(&dense(&x, &[rows, width])).unwrap());
        prop_assert!(got.iter().zip(&want).all(|(g, w)| (g - w).abs() < 1e-9));
        let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let want = log_softmax_ref(&x32.iter().map(|&v| v as f64).collect::<Vec<_>>(), width);
        let got = vals::<f32>(&log_softmax(&dense(&x32, &[rows, 1, width])).unwrap());
        prop_assert!(got.iter().zip(&want).all(|(g, w)| (*g as f64 - w).abs() <= w.abs() * 1e-6 + 1e-5));
        // float16/bfloat16: the reference on the rounded inputs, within one rounding of the output.
        let xh: Vec<f16> = x.iter().map(|&v| f16::from_f64(v / 10.0)).collect();
        let want = log_softmax_ref(&xh.iter().map(|v| v.to_f64()).collect::<Vec<_>>(), width);
        let got = vals::<f16>(&log_softmax(&dense(&xh, &[rows, width])).unwrap());
        prop_assert!(got.iter().zip(&want).all(|(g, w)| (g.to_f64() - w).abs() <= w.abs() * pow2(-11) + 1e-7));
        let xb: Vec<bf16> = x.iter().map(|&v| bf16::from_f64(v)).collect();
        let want = log_softmax_ref(&xb.iter().map(|v| v.to_f64()).collect::<Vec<_>>(), width);
        let got = vals::<bf16>(&log_softmax(&dense(&xb, &[rows, width])).unwrap());
        prop_assert!(got.iter().zip(&want).all(|(g, w)| (g.to_f64() - w).abs() <= w.abs() * pow2(-8) + 1e-7));
    }
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let n = 300_000;
    let mut rng = Rng(42);
    let bytes: Vec<u8> = (0..n * 8).map(|_| rng.next() as u8).collect();
    let x = from_raw(DType::F64, &bytes);
    let index: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % n as i64).collect();
    let sane = cast(&cast(&x, DType::I16).unwrap(), DType::F32).unwrap();
    let run = || {
        vec![
            raw(&cast(&x, DType::BF16).unwrap()),
            raw(&cast(&x, DType::I32).unwrap()),
            raw(&fill(DType::I16, Dim::new(&[n]).unwrap(), -3.0).unwrap()),
            raw(&gather_rows(&x, &dense(&index, &[n])).unwrap()),
            raw(&log_softmax(&LoDTensor::dense(sane.tensor().clone())).unwrap()),
            raw(&log_softmax(&dense(&vals::<f32>(&sane), &[n / 100, 100])).unwrap()),
        ]
    };
    let (one, four) = with_1_and_4_threads(run);
    assert!(one == four, "results differ between 1 and 4 threads");
}
