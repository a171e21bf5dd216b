//! sequence_pool (and first/last step), sequence_pad and sequence_unpad: the worked examples of
//! spec §6, property tests against plain reference loops written here on random LoDs and every
//! supported dtype, thread-count determinism and unsupported dtypes.

mod common;

use common::{pow2, with_1_and_4_threads, POOLS};
use half::{bf16, f16};
use lodtensor::dtype::Scalar;
use lodtensor::{
    sequence_first_step, sequence_last_step, sequence_pad, sequence_pool, sequence_unpad, DType, Dim, Error, LoDTensor,
    Lod, PoolType, Tensor,
};
use proptest::prelude::*;

fn lod(levels: &[&[usize]]) -> Vec<Vec<usize>> {
    levels.iter().map(|l| l.to_vec()).collect()
}

const DOC_X: [f32; 7] = [1., 3., 2., 4., 6., 5., 1.];

fn doc_x(offsets: &[&[usize]]) -> LoDTensor {
    LoDTensor::from_slice(&DOC_X, &[7, 1], lod(offsets)).unwrap()
}

fn values(t: &LoDTensor) -> Vec<f32> {
    t.tensor().as_slice::<f32>().unwrap().to_vec()
}

fn pool(x: &LoDTensor, p: PoolType, pad: f64) -> Vec<f32> {
    values(&sequence_pool(x, p, pad).unwrap().out)
}

// §6 sequence_pool doc example, lod [[0,2,5,7,7]] (the last sequence is empty).
#[test]
fn pool_doc_example() {
    let x = doc_x(&[&[0, 2, 5, 7, 7]]);
    assert_eq!(pool(&x, PoolType::Average, 0.0), [2., 4., 3., 0.]);
    assert_eq!(pool(&x, PoolType::Sum, 0.0), [4., 12., 6., 0.]);
    let sqrt = pool(&x, PoolType::Sqrt, 0.0);
    for (g, w) in sqrt.iter().zip([2.828427f32, 6.928203, 4.2426405, 0.]) {
        assert!((g - w).abs() < 1e-5, "{sqrt:?}");
    }
    assert_eq!(pool(&x, PoolType::Last, 0.0), [3., 6., 1., 0.]);
    assert_eq!(pool(&x, PoolType::First, 0.0), [1., 2., 5., 0.]);
    let max = sequence_pool(&x, PoolType::Max, 0.0).unwrap();
    assert_eq!(values(&max.out), [3., 6., 5., 0.]);
    let idx = max.max_index.unwrap();
    assert_eq!(idx.tensor().as_slice::<i32>().unwrap(), &[1, 4, 5, -1]);
    assert_eq!(idx.dims().as_slice(), &[4, 1]);
    // MIN (not in Paddle): the mirror of MAX.
    let min = sequence_pool(&x, PoolType::Min, 0.0).unwrap();
    assert_eq!(values(&min.out), [1., 2., 1., 0.]);
    assert_eq!(min.max_index.unwrap().tensor().as_slice::<i32>().unwrap(), &[0, 2, 6, -1]);
    // One level: no LoD on the output; no index for the other pool types.
    let sum = sequence_pool(&x, PoolType::Sum, 0.0).unwrap();
    assert!(sum.out.lod().is_empty() && sum.max_index.is_none());
    // The pad value fills empty sequences.
    assert_eq!(pool(&x, PoolType::Max, 0.5), [3., 6., 5., 0.5]);
    assert_eq!(pool(&x, PoolType::Average, 1.0), [2., 4., 3., 1.]);
}

// §6 sequence_pool 2-level doc example.
#[test]
fn pool_two_level_doc_example() {
    let x = doc_x(&[&[0, 2, 2, 5], &[0, 1, 3, 4, 4, 7]]);
    let out = sequence_pool(&x, PoolType::Sum, 0.0).unwrap().out;
    assert_eq!(values(&out), [1., 5., 4., 0., 12.]);
    assert_eq!(out.lod().levels(), lod(&[&[0, 2, 2, 5]]).as_slice());
}

// §6 sequence_first_step / sequence_last_step docs.
#[test]
fn first_and_last_step_docs() {
    let x = doc_x(&[&[0, 2, 5, 7]]);
    assert_eq!(values(&sequence_first_step(&x).unwrap()), [1., 2., 5.]);
    assert_eq!(values(&sequence_last_step(&x).unwrap()), [3., 6., 1.]);
    let x2 = doc_x(&[&[0, 2, 2, 5], &[0, 1, 3, 4, 4, 7]]);
    let first = sequence_first_step(&x2).unwrap();
    assert_eq!(values(&first), [1., 3., 4., 0., 6.]);
    assert_eq!(first.lod().levels(), lod(&[&[0, 2, 2, 5]]).as_slice());
    let last = sequence_last_step(&x2).unwrap();
    assert_eq!(values(&last), [1., 2., 4., 0., 1.]);
    assert_eq!(last.lod().levels(), lod(&[&[0, 2, 2, 5]]).as_slice());
}

// NaN handling of MAX: strict `>`, so a NaN never replaces; a leading NaN stays.
#[test]
fn pool_max_nan() {
    let x = LoDTensor::from_slice(&[1f32, f32::NAN, 3., f32::NAN, 2.], &[5, 1], lod(&[&[0, 3, 5]])).unwrap();
    let p = sequence_pool(&x, PoolType::Max, 0.0).unwrap();
    let v = values(&p.out);
    assert_eq!(v[0], 3.);
    assert!(v[1].is_nan());
    assert_eq!(p.max_index.unwrap().tensor().as_slice::<i32>().unwrap(), &[2, 3]);
}

// An empty sequence's pad value rounds to the nearest float16 / bfloat16, also a hair below a tie
// (where a rounding through float32 first lands on the tie and goes to the even neighbour above).
#[test]
fn pool_pad_value_rounds_to_nearest_in_half_types() {
    let lengths = lod(&[&[0, 1, 1]]);
    // float16 steps by 2^-10 in [1, 2): just below 1509.5 steps is 1509 of them.
    let x = LoDTensor::from_slice(&[f16::ONE], &[1, 1], lengths.clone()).unwrap();
    let pad = (1024.0 + 485.5) / 1024.0 - pow2(-40);
    for p in POOLS {
        let out = sequence_pool(&x, p, pad).unwrap().out;
        assert_eq!(out.tensor().as_slice::<f16>().unwrap()[1], f16::from_f32(1509.0 / 1024.0), "{p:?}");
    }
    // bfloat16 steps by 2^-7: just below 3.5 steps above 1 is 3 of them.
    let x = LoDTensor::from_slice(&[bf16::ONE], &[1, 1], lengths).unwrap();
    let pad = 1.0 + 3.5 / 128.0 - pow2(-40);
    for p in POOLS {
        let out = sequence_pool(&x, p, pad).unwrap().out;
        assert_eq!(out.tensor().as_slice::<bf16>().unwrap()[1], bf16::from_f32(1.0 + 3.0 / 128.0), "{p:?}");
    }
}

#[test]
fn pool_errors_and_dtypes() {
    let dense = LoDTensor::dense(Tensor::from_slice(&DOC_X, &[7, 1]).unwrap());
    assert!(matches!(sequence_pool(&dense, PoolType::Sum, 0.0), Err(Error::InvalidLod(_))));
    let three = doc_x(&[&[0, 1], &[0, 2], &[0, 3, 7]]);
    assert!(
        matches!(sequence_pool(&three, PoolType::Sum, 0.0), Err(Error::InvalidLod(m)) if m.contains("3 LoD levels"))
    );
    // A pad value the dtype would round to infinity is refused (as fill refuses it); the largest
    // finite value, an infinity or a NaN is written as it is.
    for (dtype, too_big, largest) in [
        (DType::F16, 65520.0, f16::MAX.to_f64()),
        (DType::BF16, 3.4e38, bf16::MAX.to_f64()),
        (DType::F32, 3.5e38, f32::MAX as f64),
    ] {
        let t = Tensor::zeros(dtype, Dim::new(&[2, 1]).unwrap()).unwrap();
        let x = LoDTensor::new(t, Lod::from_offsets(lod(&[&[0, 2, 2]])).unwrap()).unwrap();
        for p in [PoolType::Sum, PoolType::Max, PoolType::First] {
            let e = sequence_pool(&x, p, too_big);
            assert!(matches!(&e, Err(Error::InvalidArgument(m)) if m.contains("pad_value")), "{dtype:?}: {e:?}");
            for pad in [largest, f64::NEG_INFINITY, f64::NAN] {
                let out = sequence_pool(&x, p, pad).unwrap().out;
                let as_f32 = lodtensor::ops::cast(&out, DType::F32).unwrap();
                let got = as_f32.tensor().as_slice::<f32>().unwrap()[1];
                assert!(got == pad as f32 || (pad.is_nan() && got.is_nan()), "{dtype:?} pad {pad}: {got}");
            }
        }
    }
    // More sequences than rows (Paddle's kernel refuses it): the empty ones are padded.
    let x = LoDTensor::from_slice(&[5f32], &[1, 1], lod(&[&[0, 1, 1, 1]])).unwrap();
    assert_eq!(values(&sequence_pool(&x, PoolType::Max, 0.5).unwrap().out), [5., 0.5, 0.5]);
    assert!(sequence_pool(
        &lodtensor::ops::cast(&doc_x(&[&[0, 2, 5, 7, 7]]), DType::F64).unwrap(),
        PoolType::Sum,
        1e300
    )
    .is_ok());
    for dtype in [DType::Bool, DType::U8, DType::I8, DType::I16, DType::I32, DType::I64] {
        let t = Tensor::zeros(dtype, Dim::new(&[7, 1]).unwrap()).unwrap();
        let x = LoDTensor::new(t, Lod::from_offsets(lod(&[&[0, 7]])).unwrap()).unwrap();
        for p in [PoolType::Sum, PoolType::Max, PoolType::First] {
            assert!(matches!(sequence_pool(&x, p, 0.0), Err(Error::Unsupported(m)) if m.contains(dtype.name())));
        }
    }
}

// §6 sequence_pad doc example: width 1, pad 0, padded_length 4.
#[test]
fn pad_doc_example() {
    let x = LoDTensor::from_slice(&[1f32, 2., 3., 4., 5.], &[5, 1], lod(&[&[0, 2, 5]])).unwrap();
    let pad = LoDTensor::dense(Tensor::from_slice(&[0f32], &[1]).unwrap());
    let (out, length) = sequence_pad(&x, &pad, 4).unwrap();
    assert_eq!(out.dims().as_slice(), &[2, 4, 1]);
    assert_eq!(values(&out), [1., 2., 0., 0., 3., 4., 5., 0.]);
    assert!(out.lod().is_empty());
    assert_eq!(length.tensor().as_slice::<i64>().unwrap(), &[2, 3]);
    assert_eq!(length.dims().as_slice(), &[2]);
}

// §6 sequence_pad doc example: width-2 rows, a per-step PadValue, padded_length -1.
#[test]
fn pad_doc_example_step_pad_value() {
    let x = LoDTensor::from_slice(&[11f32, 12., 21., 22., 31., 32., 41., 42., 51., 52.], &[5, 2], lod(&[&[0, 2, 5]]))
        .unwrap();
    let pad = LoDTensor::dense(Tensor::from_slice(&[-1f32, -2.], &[2]).unwrap());
    let (out, length) = sequence_pad(&x, &pad, -1).unwrap();
    assert_eq!(out.dims().as_slice(), &[2, 3, 2]);
    assert_eq!(values(&out), [11., 12., 21., 22., -1., -2., 31., 32., 41., 42., 51., 52.]);
    assert_eq!(length.tensor().as_slice::<i64>().unwrap(), &[2, 3]);
    // A scalar pad value is broadcast over the step.
    let scalar = LoDTensor::dense(Tensor::from_slice(&[7f32], &[1]).unwrap());
    let (out, _) = sequence_pad(&x, &scalar, 4).unwrap();
    assert_eq!(&values(&out)[4..8], &[7., 7., 7., 7.]);
}

#[test]
fn pad_errors() {
    let x = LoDTensor::from_slice(&[1f32, 2., 3., 4., 5.], &[5, 1], lod(&[&[0, 2, 5]])).unwrap();
    let pad = LoDTensor::dense(Tensor::from_slice(&[0f32], &[1]).unwrap());
    let e = sequence_pad(&x, &pad, 2).unwrap_err();
    assert!(matches!(&e, Error::InvalidArgument(m) if m.contains("padded_length") && m.contains("sequence 1")), "{e}");
    assert!(matches!(sequence_pad(&x, &pad, -2), Err(Error::InvalidArgument(_))));
    let pad64 = LoDTensor::dense(Tensor::from_slice(&[0f64], &[1]).unwrap());
    assert!(matches!(sequence_pad(&x, &pad64, -1), Err(Error::InvalidArgument(m)) if m.contains("pad_value")));
    let pad2 = LoDTensor::dense(Tensor::from_slice(&[0f32, 0.], &[2]).unwrap());
    assert!(matches!(sequence_pad(&x, &pad2, -1), Err(Error::InvalidArgument(m)) if m.contains("pad_value")));
    // Our rule: exactly one LoD level.
    let x2 = LoDTensor::from_slice(&[1f32, 2., 3., 4., 5.], &[5, 1], lod(&[&[0, 2], &[0, 2, 5]])).unwrap();
    assert!(matches!(sequence_pad(&x2, &pad, -1), Err(Error::InvalidLod(_))));
    let dense = LoDTensor::dense(Tensor::from_slice(&[1f32, 2.], &[2, 1]).unwrap());
    assert!(matches!(sequence_pad(&dense, &pad, -1), Err(Error::InvalidLod(_))));
    let rank1 = LoDTensor::from_slice(&[1f32, 2.], &[2], lod(&[&[0, 2]])).unwrap();
    assert!(matches!(sequence_pad(&rank1, &pad, -1), Err(Error::InvalidArgument(m)) if m.contains("rank")));
}

// §6 sequence_unpad doc example.
#[test]
fn unpad_doc_example() {
    let data: Vec<f32> = (1..=15).map(|v| v as f32).collect();
    let x = LoDTensor::dense(Tensor::from_slice(&data, &[3, 5]).unwrap());
    let length = LoDTensor::dense(Tensor::from_slice(&[2i64, 3, 4], &[3]).unwrap());
    let out = sequence_unpad(&x, &length).unwrap();
    assert_eq!(values(&out), [1., 2., 6., 7., 8., 11., 12., 13., 14.]);
    assert_eq!(out.dims().as_slice(), &[9, 1]);
    assert_eq!(out.lod().levels(), lod(&[&[0, 2, 5, 9]]).as_slice());
    // int32 lengths too.
    let l32 = LoDTensor::dense(Tensor::from_slice(&[2i32, 3, 4], &[3]).unwrap());
    assert_eq!(values(&sequence_unpad(&x, &l32).unwrap()), values(&out));
}

#[test]
fn unpad_errors() {
    let x = LoDTensor::dense(Tensor::from_slice(&[0f32; 15], &[3, 5]).unwrap());
    let len = |v: &[i64]| LoDTensor::dense(Tensor::from_slice(v, &[v.len()]).unwrap());
    let e = sequence_unpad(&x, &len(&[2, 6, 1])).unwrap_err();
    assert!(matches!(&e, Error::InvalidArgument(m) if m.contains("length[1] = 6")), "{e}");
    assert!(matches!(sequence_unpad(&x, &len(&[2, -1, 1])), Err(Error::InvalidArgument(m)) if m.contains("negative")));
    assert!(matches!(sequence_unpad(&x, &len(&[2, 1])), Err(Error::InvalidArgument(_))));
    // The same checks on int32 lengths, which are read as they are, not widened into a copy.
    let len32 = |v: &[i32]| LoDTensor::dense(Tensor::from_slice(v, &[v.len()]).unwrap());
    let e = sequence_unpad(&x, &len32(&[2, 1, 6])).unwrap_err();
    assert!(matches!(&e, Error::InvalidArgument(m) if m.contains("length[2] = 6")), "{e}");
    let e = sequence_unpad(&x, &len32(&[-3, 1, 1])).unwrap_err();
    assert!(matches!(&e, Error::InvalidArgument(m) if m.contains("length[0] = -3 is negative")), "{e}");
    let f = LoDTensor::dense(Tensor::from_slice(&[1f32, 1., 1.], &[3]).unwrap());
    assert!(matches!(sequence_unpad(&x, &f), Err(Error::Unsupported(_))));
    let rank1 = LoDTensor::dense(Tensor::from_slice(&[0f32; 3], &[3]).unwrap());
    assert!(matches!(sequence_unpad(&rank1, &len(&[1, 1, 1])), Err(Error::InvalidArgument(_))));
    // Zero sequences: a 0-row result without LoD.
    let empty = LoDTensor::dense(Tensor::zeros(DType::F32, Dim::new(&[0, 5]).unwrap()).unwrap());
    let out = sequence_unpad(&empty, &len(&[])).unwrap();
    assert_eq!(out.dims().as_slice(), &[0, 1]);
    assert!(out.lod().is_empty());
}

fn xorshift(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

fn random_lengths(n: usize, max: usize, seed: u64) -> Vec<usize> {
    let mut s = seed | 1;
    (0..n).map(|_| (xorshift(&mut s) % (max as u64 + 1)) as usize).collect()
}

/// Plain-loop reference of sequence_pool over row offsets, in f64, converted at the end.
fn pool_reference<T: Scalar>(x: &[T], width: usize, offsets: &[usize], p: PoolType, pad: f64) -> (Vec<T>, Vec<i32>) {
    let mut out = Vec::new();
    let mut index = Vec::new();
    for i in 0..offsets.len() - 1 {
        let (s, e) = (offsets[i], offsets[i + 1]);
        for c in 0..width {
            let col = |r: usize| x[r * width + c];
            if s == e {
                out.push(T::cast_f64(pad));
                index.push(-1);
                continue;
            }
            let mut sum = 0f64;
            for r in s..e {
                sum += col(r).to_f64();
            }
            let n = (e - s) as f64;
            let mut best = s;
            for r in s + 1..e {
                let better = match p {
                    PoolType::Min => col(r) < col(best),
                    _ => col(r) > col(best),
                };
                if better {
                    best = r;
                }
            }
            out.push(match p {
                PoolType::Sum => T::cast_f64(sum),
                PoolType::Average => T::cast_f64(sum / n),
                PoolType::Sqrt => T::cast_f64(sum / n.sqrt()),
                PoolType::First => col(s),
                PoolType::Last => col(e - 1),
                PoolType::Max | PoolType::Min => col(best),
            });
            index.push(best as i32);
        }
    }
    (out, index)
}

fn check_pool<T: Scalar>(lengths: &[Vec<usize>], width: usize, pad: f64, seed: u64) {
    let l = Lod::from_lengths(lengths).unwrap();
    let rows = l.rows().unwrap();
    let mut s = seed | 1;
    let x: Vec<T> = (0..rows * width).map(|_| T::cast_f64((xorshift(&mut s) % 1000) as f64 / 8.0 - 60.0)).collect();
    let t = LoDTensor::new(Tensor::from_slice(&x, &[rows, width]).unwrap(), l.clone()).unwrap();
    let offsets = l.level(l.num_levels() - 1).unwrap();
    for p in POOLS {
        let got = sequence_pool(&t, p, pad).unwrap();
        let (want, want_index) = pool_reference(&x, width, offsets, p, pad);
        assert_eq!(got.out.tensor().as_slice::<T>().unwrap(), want.as_slice(), "{p:?}");
        assert_eq!(got.out.dims().as_slice(), &[offsets.len() - 1, width]);
        if matches!(p, PoolType::Max | PoolType::Min) {
            assert_eq!(got.max_index.unwrap().tensor().as_slice::<i32>().unwrap(), want_index.as_slice());
        }
        if l.num_levels() == 2 {
            assert_eq!(got.out.lod().levels(), &l.levels()[..1]);
        }
    }
}

// §6: the test's LoDs with empty sequences, pad values and a 3-D input [13, 3, 17].
#[test]
fn pool_test_lods() {
    let cases: Vec<Vec<Vec<usize>>> = vec![vec![vec![0, 4, 0, 7, 0]], vec![vec![2, 0, 1, 2], vec![0, 4, 0, 7, 0]]];
    for (k, lengths) in cases.iter().enumerate() {
        for pad in [0.0, 0.1, 0.2, 0.3, 0.5, 1.0] {
            check_pool::<f32>(lengths, 23, pad, k as u64 + 1);
            check_pool::<f64>(lengths, 23, pad, k as u64 + 2);
            check_pool::<f16>(lengths, 23, pad, k as u64 + 3);
            check_pool::<bf16>(lengths, 23, pad, k as u64 + 4);
        }
    }
    let data: Vec<f32> = (0..13 * 3 * 17).map(|i| (i % 29) as f32).collect();
    let x = LoDTensor::from_slice(&data, &[13, 3, 17], lod(&[&[0, 4, 4, 11, 13]])).unwrap();
    let out = sequence_pool(&x, PoolType::Sum, 0.0).unwrap().out;
    assert_eq!(out.dims().as_slice(), &[4, 3, 17]);
    let (want, _) = pool_reference(&data, 51, &[0, 4, 4, 11, 13], PoolType::Sum, 0.0);
    assert_eq!(values(&out), want);
}

// The max/min kernel's column passes: 128 columns per pass over the sequence, then blocks of 16,
// then the last columns one by one; widths around those sizes, empty and one-row sequences.
#[test]
fn pool_wide_rows_match_reference() {
    for width in [1usize, 15, 16, 17, 31, 127, 128, 129, 144, 150, 256, 263] {
        let lengths = vec![vec![0, 1, 5, 0, 40, 2, 17]];
        check_pool::<f32>(&lengths, width, 0.5, width as u64);
        check_pool::<f64>(&lengths, width, -1.0, width as u64 + 1);
        check_pool::<f16>(&lengths, width, 0.0, width as u64 + 2);
        check_pool::<bf16>(&lengths, width, 0.0, width as u64 + 3);
    }
}

// NaN in the wide max/min kernel: a NaN never replaces a value, a leading NaN stays, ties (signed
// zeros included) keep the first row; the reference's strict comparisons say the same.
#[test]
fn pool_wide_rows_nan_and_ties() {
    let width = 150;
    let rows = 9;
    let mut x: Vec<f32> = (0..rows * width).map(|i| ((i * 7) % 5) as f32).collect();
    for c in [0, 3, 127, 128, 140, 149] {
        x[c] = f32::NAN; // first row: stays
        x[4 * width + c + 1 - usize::from(c == 149)] = f32::NAN; // later rows: never taken
    }
    // Signed zeros compare equal: the first of them is the extreme, bits and row included.
    for r in 0..rows {
        x[r * width + 130] = if r == 2 {
            -0.0
        } else if r == 6 {
            0.0
        } else {
            [-1.0, 1.0][r % 2] * 3.0 - 4.0
        };
        x[r * width + 131] = if r == 2 {
            0.0
        } else if r == 6 {
            -0.0
        } else {
            [-1.0, 1.0][r % 2] * 3.0 - 4.0
        };
    }
    let offsets = [0, rows];
    let t = LoDTensor::from_slice(&x, &[rows, width], lod(&[&offsets])).unwrap();
    for p in [PoolType::Max, PoolType::Min] {
        let got = sequence_pool(&t, p, 0.0).unwrap();
        let (want, want_index) = pool_reference(&x, width, &offsets, p, 0.0);
        let got_v = got.out.tensor().as_slice::<f32>().unwrap();
        assert_eq!(
            got_v.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        assert_eq!(got.max_index.unwrap().tensor().as_slice::<i32>().unwrap(), want_index.as_slice(), "{p:?}");
        assert!(got_v[3].is_nan() && got_v[128].is_nan());
    }
}

/// Plain-loop reference of sequence_pad on bytes.
fn pad_reference(x: &[u8], row: usize, offsets: &[usize], padded: usize, pad_row: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..offsets.len() - 1 {
        for r in 0..padded {
            if offsets[i] + r < offsets[i + 1] {
                out.extend_from_slice(&x[(offsets[i] + r) * row..(offsets[i] + r + 1) * row]);
            } else {
                out.extend_from_slice(pad_row);
            }
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::rounds(48) as u32, ..ProptestConfig::default() })]

    #[test]
    fn pool_matches_reference(n in 1usize..30, big in any::<bool>(), two_levels in any::<bool>(), width in 1usize..70,
                              seed in any::<u64>(), dt in 0usize..4, pad in -2.0f64..2.0) {
        let n = if big { n * 40 } else { n };
        let last = random_lengths(n, 5, seed);
        let lengths = if two_levels {
            let mut top = random_lengths(n, 3, seed ^ 9);
            let sum: usize = top.iter().sum();
            if sum > n { top = vec![n]; } else { top.push(n - sum); }
            vec![top, last]
        } else {
            vec![last]
        };
        match dt {
            0 => check_pool::<f32>(&lengths, width, pad, seed),
            1 => check_pool::<f64>(&lengths, width, pad, seed),
            2 => check_pool::<f16>(&lengths, width, pad, seed),
            _ => check_pool::<bf16>(&lengths, width, pad, seed),
        }
    }

    #[test]
    fn pad_unpad_match_reference(n in 1usize..40, big in any::<bool>(), width in 1usize..5, seed in any::<u64>(),
                                 dt in 0usize..10, extra in 0usize..3, step_pad in any::<bool>()) {
        let n = if big { n * 50 } else { n };
        let dtype = DType::ALL[dt];
        let lengths = random_lengths(n, 6, seed);
        let l = Lod::from_lengths(std::slice::from_ref(&lengths)).unwrap();
        let rows = l.rows().unwrap();
        let row = width * dtype.size();
        let mut s = seed | 1;
        let bytes: Vec<u8> = (0..rows * row).map(|_| xorshift(&mut s) as u8).collect();
        let x = LoDTensor::new(Tensor::from_bytes(dtype, Dim::new(&[rows, width]).unwrap(), &bytes).unwrap(), l.clone()).unwrap();
        let pad_bytes: Vec<u8> = (0..if step_pad { row } else { dtype.size() }).map(|i| 0xA0 ^ i as u8).collect();
        let pad_dims: Vec<usize> = if step_pad { vec![width] } else { vec![1] };
        let pad = LoDTensor::dense(Tensor::from_bytes(dtype, Dim::new(&pad_dims).unwrap(), &pad_bytes).unwrap());
        let pad_row = if step_pad { pad_bytes.clone() } else { pad_bytes.repeat(width) };
        let longest = *lengths.iter().max().unwrap();
        let padded = longest + extra;
        let (out, length) = sequence_pad(&x, &pad, if extra == 0 { -1 } else { padded as i64 }).unwrap();
        prop_assert_eq!(out.dims().as_slice(), &[n, padded, width]);
        let want = pad_reference(&bytes, row, l.level(0).unwrap(), padded, &pad_row);
        prop_assert_eq!(out.tensor().bytes().unwrap(), want.as_slice());
        let want_len: Vec<i64> = lengths.iter().map(|&v| v as i64).collect();
        prop_assert_eq!(length.tensor().as_slice::<i64>().unwrap(), want_len.as_slice());
        // Unpad of the padded tensor (viewed as [n, padded * width] when width > 1 is not the
        // op's shape, so unpad the 3-D result) gives x back.
        let back = sequence_unpad(&out, &length).unwrap();
        prop_assert_eq!(back.tensor().bytes().unwrap(), bytes.as_slice());
        prop_assert_eq!(back.lod(), &l);
        prop_assert_eq!(back.dims().as_slice(), &[rows, width]);
    }
}

#[test]
fn thousands_of_sequences_and_thread_count_determinism() {
    let n = 12_000;
    let width = 16;
    let lengths = random_lengths(n, 6, 11);
    let l = Lod::from_lengths(std::slice::from_ref(&lengths)).unwrap();
    let rows = l.rows().unwrap();
    let data: Vec<f32> = (0..rows * width).map(|i| ((i * 7919) % 1013) as f32 * 0.37).collect();
    let x = LoDTensor::new(Tensor::from_slice(&data, &[rows, width]).unwrap(), l.clone()).unwrap();
    let pad = LoDTensor::dense(Tensor::from_slice(&[0f32], &[1]).unwrap());
    let run = || {
        let pools: Vec<Vec<u8>> =
            POOLS.iter().map(|&p| sequence_pool(&x, p, 0.0).unwrap().out.tensor().bytes().unwrap().to_vec()).collect();
        let (padded, len) = sequence_pad(&x, &pad, -1).unwrap();
        let back = sequence_unpad(&padded, &len).unwrap();
        (pools, padded.tensor().bytes().unwrap().to_vec(), back.tensor().bytes().unwrap().to_vec())
    };
    let (a, b) = with_1_and_4_threads(run);
    assert!(a.1.len() > 256 * 1024);
    assert!(a.0[0].len() > 256 * 1024 / 2);
    assert_eq!(a, b);
    // Every pooling and the padding, in many tasks of whole sequences, against plain loops.
    let f32s =
        |b: &[u8]| -> Vec<f32> { b.chunks_exact(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap())).collect() };
    for (&p, got) in POOLS.iter().zip(&a.0) {
        let (want, _) = pool_reference(&data, width, l.level(0).unwrap(), p, 0.0);
        assert!(f32s(got) == want, "{p:?} differs from the reference");
    }
    let longest = lengths.iter().copied().max().unwrap();
    let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_ne_bytes()).collect();
    assert!(
        a.1 == pad_reference(&bytes, width * 4, l.level(0).unwrap(), longest, &[0; 64]),
        "pad differs from the reference"
    );
    assert!(a.2 == bytes, "unpad does not give back x");
}

/// sequence_unpad of slots of 4 KiB or more (which its copy prefetches piece by piece) in many
/// tasks, streamed and not, against a plain loop over the slots, with 1 and 4 threads; int32
/// lengths as well as int64.
#[test]
fn unpad_of_wide_slots_in_many_tasks() {
    for (n, width) in [(300usize, 64usize), (1200, 256)] {
        let padded = 16;
        let row = width * 4;
        let lengths = random_lengths(n, padded, n as u64);
        let mut s = 77;
        let bytes: Vec<u8> = (0..n * padded * row).map(|_| xorshift(&mut s) as u8).collect();
        let x =
            LoDTensor::dense(Tensor::from_bytes(DType::F32, Dim::new(&[n, padded, width]).unwrap(), &bytes).unwrap());
        let want: Vec<u8> = lengths
            .iter()
            .enumerate()
            .flat_map(|(i, &len)| &bytes[i * padded * row..(i * padded + len) * row])
            .copied()
            .collect();
        assert!(want.len() > 256 * 1024, "one task");
        let l64: Vec<i64> = lengths.iter().map(|&v| v as i64).collect();
        let l32: Vec<i32> = lengths.iter().map(|&v| v as i32).collect();
        let l64 = LoDTensor::dense(Tensor::from_slice(&l64, &[n]).unwrap());
        let l32 = LoDTensor::dense(Tensor::from_slice(&l32, &[n]).unwrap());
        let want_lod = Lod::from_lengths(std::slice::from_ref(&lengths)).unwrap();
        for length in [&l64, &l32] {
            let (one, four) = with_1_and_4_threads(|| sequence_unpad(&x, length).unwrap());
            for got in [one, four] {
                assert!(got.tensor().bytes().unwrap() == want, "{n} slots of {width} columns: rows differ");
                assert_eq!(got.lod(), &want_lod);
            }
        }
    }
}

/// sequence_pad's Length for a batch whose lengths are written in many tasks on the pool: the
/// lengths the LoD was made from, with 1 and 4 threads.
#[test]
fn lengths_of_many_sequences() {
    let lengths = random_lengths(100_000, 3, 5);
    let l = Lod::from_lengths(std::slice::from_ref(&lengths)).unwrap();
    let rows = l.rows().unwrap();
    let x = LoDTensor::new(Tensor::zeros(DType::I8, Dim::new(&[rows, 1]).unwrap()).unwrap(), l).unwrap();
    let pad = LoDTensor::dense(Tensor::from_slice(&[1i8], &[1]).unwrap());
    let run = || sequence_pad(&x, &pad, -1).unwrap().1.tensor().as_slice::<i64>().unwrap().to_vec();
    let (one, four) = with_1_and_4_threads(run);
    assert!(one.len() * 8 > 256 * 1024, "the lengths are not written on the pool");
    let want: Vec<i64> = lengths.iter().map(|&n| n as i64).collect();
    assert!(one == want, "Length differs from the lengths, 1 thread");
    assert!(four == want, "Length differs from the lengths, 4 threads");
}
