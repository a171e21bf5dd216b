//! The sequence operators of §6 of the semantics spec (softmax, concat, slice, reverse, mask,
//! enumerate, erase, reshape): every worked example, property tests against plain loops written
//! here on random LoDs and every supported dtype, thread-count determinism, and the errors.

mod common;

use common::with_1_and_4_threads;
use half::{bf16, f16};
use lodtensor::ops::{
    sequence_concat, sequence_conv, sequence_enumerate, sequence_erase, sequence_mask, sequence_reshape,
    sequence_reverse, sequence_slice, sequence_softmax,
};
use lodtensor::{DType, Dim, Element, Error, LoDTensor, Lod, Tensor};
use proptest::prelude::*;

fn offsets(lengths: &[usize]) -> Vec<usize> {
    let mut o = vec![0];
    for &l in lengths {
        o.push(o.last().unwrap() + l);
    }
    o
}

fn lt<T: Element>(data: &[T], dims: &[usize], levels: Vec<Vec<usize>>) -> LoDTensor {
    LoDTensor::from_slice(data, dims, levels).unwrap()
}

fn dense<T: Element>(data: &[T], dims: &[usize]) -> LoDTensor {
    LoDTensor::dense(Tensor::from_slice(data, dims).unwrap())
}

fn vals<T: Element>(t: &LoDTensor) -> Vec<T> {
    t.tensor().as_slice::<T>().unwrap().to_vec()
}

fn dims(t: &LoDTensor) -> Vec<usize> {
    t.dims().as_slice().to_vec()
}

fn levels(t: &LoDTensor) -> Vec<Vec<usize>> {
    t.lod().levels().to_vec()
}

/// A deterministic byte stream for random tensor contents.
fn bytes(seed: u64, n: usize, dtype: DType) -> Vec<u8> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            if dtype == DType::Bool {
                (s & 1) as u8
            } else {
                (s >> 24) as u8
            }
        })
        .collect()
}

/// A tensor of `dtype` and `dims` with random contents and the given LoD.
fn random(dtype: DType, dims: &[usize], levels: Vec<Vec<usize>>, seed: u64) -> LoDTensor {
    let d = Dim::new(dims).unwrap();
    let b = bytes(seed, d.numel() * dtype.size(), dtype);
    let lod = if levels.is_empty() { Lod::empty() } else { Lod::from_offsets(levels).unwrap() };
    LoDTensor::new(Tensor::from_bytes(dtype, d, &b).unwrap(), lod).unwrap()
}

fn raw(t: &LoDTensor) -> Vec<u8> {
    t.tensor().bytes().unwrap().to_vec()
}

fn i64s(v: &[i64]) -> LoDTensor {
    dense(v, &[v.len(), 1])
}

fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol, "element {i}: got {g}, want {w}");
    }
}

fn is_unsupported<T: std::fmt::Debug>(r: Result<T, Error>) -> bool {
    matches!(r, Err(Error::Unsupported(_)))
}

fn err_text<T: std::fmt::Debug>(r: Result<T, Error>) -> String {
    r.unwrap_err().to_string()
}

// ---- worked examples ---------------------------------------------------------------------

const SOFTMAX_X: [f64; 15] = [0.7, 1., 0.6, 1.5, 1.1, 1.2, 0.2, 0.6, 1.9, 3.1, 2.5, 0.8, 0.1, 2.4, 1.3];
const SOFTMAX_OUT: [f64; 15] = [
    0.30724832, 0.41474187, 0.2780098, 0.59868765, 0.40131235, 0.2544242, 0.09359743, 0.13963096, 0.5123474, 1.0,
    0.84553474, 0.15446526, 0.06995796, 0.69777346, 0.23226859,
];

// sequence_softmax doc example, in every float dtype, as [N] and [N, 1].
#[test]
fn softmax_doc_example() {
    let lod = vec![vec![0, 3, 5, 9, 10, 12, 15]];
    let x64 = lt(&SOFTMAX_X, &[15, 1], lod.clone());
    let out = sequence_softmax(&x64).unwrap();
    assert_close(&vals::<f64>(&out), &SOFTMAX_OUT, 1e-7);
    assert_eq!(dims(&out), [15, 1]);
    assert_eq!(levels(&out), lod);
    let x32: Vec<f32> = SOFTMAX_X.iter().map(|&v| v as f32).collect();
    let out = sequence_softmax(&lt(&x32, &[15], lod.clone())).unwrap();
    assert_close(&vals::<f32>(&out).iter().map(|&v| v as f64).collect::<Vec<_>>(), &SOFTMAX_OUT, 1e-6);
    assert_eq!(dims(&out), [15]);
    let xh: Vec<f16> = SOFTMAX_X.iter().map(|&v| f16::from_f64(v)).collect();
    let out = sequence_softmax(&lt(&xh, &[15, 1], lod.clone())).unwrap();
    assert_close(&vals::<f16>(&out).iter().map(|v| v.to_f64()).collect::<Vec<_>>(), &SOFTMAX_OUT, 2e-3);
    let xb: Vec<bf16> = SOFTMAX_X.iter().map(|&v| bf16::from_f64(v)).collect();
    let out = sequence_softmax(&lt(&xb, &[15, 1], lod)).unwrap();
    assert_close(&vals::<bf16>(&out).iter().map(|v| v.to_f64()).collect::<Vec<_>>(), &SOFTMAX_OUT, 1e-2);
}

// Our rule: the maximum is subtracted, so inputs whose exp overflows still work; empty sequences
// hold no rows and the sequences of a 2-level LoD's last level are used.
#[test]
fn softmax_large_inputs_and_empty_sequences() {
    let x = lt(&[1000f32, 1000., 5., -1000.], &[4, 1], vec![vec![0, 2, 2, 3, 4]]);
    let out = vals::<f32>(&sequence_softmax(&x).unwrap());
    assert_eq!(out, [0.5, 0.5, 1.0, 1.0]);
    let x = lt(&[0f64, 0., 1., 1.], &[4], vec![vec![0, 1, 3], vec![0, 2, 2, 4]]);
    let out = sequence_softmax(&x).unwrap();
    assert_eq!(vals::<f64>(&out), [0.5, 0.5, 0.5, 0.5]);
    assert_eq!(levels(&out), levels(&x));
}

// sequence_concat: test_sequence_concat.py LoDs and the op doc's offsets.
#[test]
fn concat_examples() {
    for (l1, l2, want) in [
        (vec![7, 3], vec![12, 8], vec![19, 11]),
        (vec![10, 0], vec![12, 8], vec![22, 8]),
        (vec![0, 10], vec![20, 0], vec![20, 10]),
    ] {
        let x1: Vec<f32> = (0..10 * 2).map(|v| v as f32).collect();
        let x2: Vec<f32> = (0..20 * 2).map(|v| 1000. + v as f32).collect();
        let a = lt(&x1, &[10, 2], vec![offsets(&l1)]);
        let b = lt(&x2, &[20, 2], vec![offsets(&l2)]);
        let out = sequence_concat(&[&a, &b]).unwrap();
        assert_eq!(levels(&out), vec![offsets(&want)]);
        assert_eq!(dims(&out), [30, 2]);
        let (o1, o2) = (offsets(&l1), offsets(&l2));
        let mut expect = Vec::new();
        for i in 0..2 {
            expect.extend_from_slice(&x1[o1[i] * 2..o1[i + 1] * 2]);
            expect.extend_from_slice(&x2[o2[i] * 2..o2[i + 1] * 2]);
        }
        assert_eq!(vals::<f32>(&out), expect);
    }
    // Op doc: offsets [0,3,7] and [0,7,9] -> [0,10,16].
    let a = lt(&[0i64; 7], &[7], vec![vec![0, 3, 7]]);
    let b = lt(&[0i64; 9], &[9, 1], vec![vec![0, 7, 9]]);
    let out = sequence_concat(&[&a, &b]).unwrap();
    assert_eq!(levels(&out), vec![vec![0, 10, 16]]);
    assert_eq!(dims(&out), [16]);
}

// sequence_slice doc and test_sequence_slice_op.py.
#[test]
fn slice_examples() {
    // a..e as rows 1..5.
    let x = lt(&[1f32, 2., 3., 4., 5.], &[5, 1], vec![vec![0, 3, 5]]);
    let out = sequence_slice(&x, &i64s(&[0, 1]), &i64s(&[2, 1])).unwrap();
    assert_eq!(vals::<f32>(&out), [1., 2., 5.]);
    assert_eq!(levels(&out), vec![vec![0, 2, 3]]);
    // X [100,3,2], lengths [[20]*5], offsets 1..5, lengths 10,8,6,4,2.
    let data: Vec<i32> = (0..600).collect();
    let x = lt(&data, &[100, 3, 2], vec![offsets(&[20; 5])]);
    let out = sequence_slice(&x, &i64s(&[1, 2, 3, 4, 5]), &dense(&[10i64, 8, 6, 4, 2], &[5])).unwrap();
    assert_eq!(levels(&out), vec![offsets(&[10, 8, 6, 4, 2])]);
    assert_eq!(dims(&out), [30, 3, 2]);
    let mut expect = Vec::new();
    for (i, (o, l)) in [(1, 10), (2, 8), (3, 6), (4, 4), (5, 2)].into_iter().enumerate() {
        let start = i * 20 + o;
        expect.extend_from_slice(&data[start * 6..(start + l) * 6]);
    }
    assert_eq!(vals::<i32>(&out), expect);
    // Zero-length sequences and slices: [[0,70,0,30,0]], offsets [0,2,0,4,0], lengths [0,8,0,4,0].
    let data: Vec<f64> = (0..100).map(|v| v as f64).collect();
    let x = lt(&data, &[100, 1], vec![offsets(&[0, 70, 0, 30, 0])]);
    let out = sequence_slice(&x, &i64s(&[0, 2, 0, 4, 0]), &i64s(&[0, 8, 0, 4, 0])).unwrap();
    assert_eq!(levels(&out), vec![offsets(&[0, 8, 0, 4, 0])]);
    let expect: Vec<f64> = (2..10).chain(74..78).map(|v| v as f64).collect();
    assert_eq!(vals::<f64>(&out), expect);
    // int32 offsets/lengths are accepted too.
    let out = sequence_slice(&x, &dense(&[0i32, 2, 0, 4, 0], &[5]), &dense(&[0i32, 8, 0, 4, 0], &[5, 1])).unwrap();
    assert_eq!(vals::<f64>(&out), expect);
}

#[test]
fn slice_errors_name_the_sequence() {
    let x = lt(&[1f32, 2., 3., 4., 5.], &[5, 1], vec![vec![0, 3, 5]]);
    let e = sequence_slice(&x, &i64s(&[0, -1]), &i64s(&[1, 1]));
    assert!(matches!(&e, Err(Error::InvalidArgument(m)) if m.contains("offset[1] = -1") && m.contains("sequence 1")));
    let e = sequence_slice(&x, &i64s(&[0, 0]), &i64s(&[-2, 1]));
    assert!(matches!(&e, Err(Error::InvalidArgument(m)) if m.contains("length[0] = -2") && m.contains("sequence 0")));
    let e = sequence_slice(&x, &i64s(&[0, 1]), &i64s(&[3, 2]));
    assert!(matches!(&e, Err(Error::OutOfRange(m)) if m.contains("sequence 1")), "{e:?}");
    let e = sequence_slice(&x, &i64s(&[i64::MAX, 0]), &i64s(&[i64::MAX, 1]));
    assert!(matches!(&e, Err(Error::OutOfRange(m)) if m.contains("sequence 0")), "{e:?}");
    assert!(sequence_slice(&x, &i64s(&[0, 2]), &i64s(&[3, 0])).is_ok());
    // Shapes, dtypes, LoD levels.
    assert!(matches!(sequence_slice(&x, &i64s(&[0]), &i64s(&[1, 1])), Err(Error::InvalidArgument(_))));
    assert!(matches!(sequence_slice(&x, &dense(&[0i64, 0], &[1, 2]), &i64s(&[1, 1])), Err(Error::InvalidArgument(_))));
    assert!(is_unsupported(sequence_slice(&x, &dense(&[0f32, 0.], &[2]), &i64s(&[1, 1]))));
    assert!(is_unsupported(sequence_slice(&x, &i64s(&[0, 0]), &dense(&[1i16, 1], &[2]))));
    let two = lt(&[1f32, 2., 3.], &[3, 1], vec![vec![0, 1], vec![0, 3]]);
    assert!(matches!(sequence_slice(&two, &i64s(&[0]), &i64s(&[1])), Err(Error::InvalidLod(_))));
    assert!(matches!(sequence_slice(&dense(&[1f32], &[1]), &i64s(&[0]), &i64s(&[1])), Err(Error::InvalidLod(_))));
}

// sequence_reverse doc: lod [[0,2,5]], rows r0..r4 -> r1,r0,r4,r3,r2; with an empty sequence too.
#[test]
fn reverse_examples() {
    let x = lt(&[0u8, 0, 1, 1, 2, 2, 3, 3, 4, 4], &[5, 2], vec![vec![0, 2, 5]]);
    let out = sequence_reverse(&x).unwrap();
    assert_eq!(vals::<u8>(&out), [1, 1, 0, 0, 4, 4, 3, 3, 2, 2]);
    assert_eq!(levels(&out), vec![vec![0, 2, 5]]);
    let x = lt(&[0i64, 1, 2, 3], &[4, 1], vec![vec![0, 0, 3, 3, 4]]);
    assert_eq!(vals::<i64>(&sequence_reverse(&x).unwrap()), [2, 1, 0, 3]);
    assert!(matches!(sequence_reverse(&lt(&[0i64, 1], &[2], vec![vec![0, 2]])), Err(Error::InvalidArgument(_))));
    let two = lt(&[1f32, 2., 3.], &[3, 1], vec![vec![0, 1], vec![0, 3]]);
    assert!(matches!(sequence_reverse(&two), Err(Error::InvalidLod(_))));
}

// sequence_mask doc: x = [3,1,1,0], maxlen 4; maxlen -1 = max(x); Our rule: empty x -> maxlen 0.
#[test]
fn mask_examples() {
    let x = dense(&[3i64, 1, 1, 0], &[4]);
    let want4 = [1i64, 1, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0];
    let out = sequence_mask(&x, 4, DType::I64).unwrap();
    assert_eq!(dims(&out), [4, 4]);
    assert_eq!(vals::<i64>(&out), want4);
    assert!(out.lod().is_empty());
    let out = sequence_mask(&x, -1, DType::F32).unwrap();
    assert_eq!(dims(&out), [4, 3]);
    assert_eq!(vals::<f32>(&out), [1., 1., 1., 1., 0., 0., 1., 0., 0., 0., 0., 0.]);
    let out = sequence_mask(&dense(&[3i32, 1, 1, 0], &[2, 2]), 4, DType::Bool).unwrap();
    assert_eq!(dims(&out), [2, 2, 4]);
    assert_eq!(raw(&out), want4.iter().map(|&v| v as u8).collect::<Vec<_>>());
    let empty = dense::<f64>(&[], &[0]);
    let out = sequence_mask(&empty, -1, DType::I64).unwrap();
    assert_eq!(dims(&out), [0, 0]);
    assert_eq!(dims(&sequence_mask(&empty, 5, DType::I32).unwrap()), [0, 5]);
    // Fractions compare as numbers (j < 2.5 for j = 0, 1, 2); maxlen -1 truncates max(x) to 2.
    let out = sequence_mask(&dense(&[2.5f32, -1.], &[2]), -1, DType::U8).unwrap();
    assert_eq!(vals::<u8>(&out), [1, 1, 0, 0]);
    assert_eq!(vals::<u8>(&sequence_mask(&dense(&[-3i8], &[1]), -1, DType::U8).unwrap()), Vec::<u8>::new());
    assert!(matches!(sequence_mask(&x, 0, DType::I64), Err(Error::InvalidArgument(_))));
    let nine = random(DType::I32, &[1; 9], vec![], 1);
    assert!(matches!(sequence_mask(&nine, 2, DType::I64), Err(Error::InvalidArgument(_))));
    assert!(is_unsupported(sequence_mask(&random(DType::Bool, &[2], vec![], 1), 2, DType::I64)));
}

// sequence_enumerate doc, and the LoDs of test_sequence_enumerate_op.py against the reference.
#[test]
fn enumerate_examples() {
    let x = lt(&[1i64, 2, 3, 4, 5], &[5, 1], vec![vec![0, 3, 5]]);
    let out = sequence_enumerate(&x, 2, 0).unwrap();
    assert_eq!(vals::<i64>(&out), [1, 2, 2, 3, 3, 0, 4, 5, 5, 0]);
    assert_eq!(dims(&out), [5, 2]);
    assert_eq!(levels(&out), vec![vec![0, 3, 5]]);
    for lengths in [vec![9, 4, 11, 6], vec![0, 14, 0, 16, 0]] {
        let o = offsets(&lengths);
        let n = *o.last().unwrap();
        let data: Vec<i32> = (0..n as i32).map(|v| v * 7 % 13).collect();
        for (win, pad) in [(2, 0), (5, 5), (30, 0), (30, 5)] {
            let out = sequence_enumerate(&lt(&data, &[n, 1], vec![o.clone()]), win, pad).unwrap();
            assert_eq!(vals::<i32>(&out), enumerate_ref(&data, &o, win as usize, pad as i32));
        }
    }
}

fn enumerate_ref<T: Copy>(x: &[T], o: &[usize], win: usize, pad: T) -> Vec<T> {
    let mut out = Vec::new();
    for s in 0..o.len() - 1 {
        for r in o[s]..o[s + 1] {
            for k in 0..win {
                out.push(if r + k < o[s + 1] { x[r + k] } else { pad });
            }
        }
    }
    out
}

// sequence_erase doc, 2-level, empty sequences, empty token list.
#[test]
fn erase_examples() {
    let data = [2i32, 2, 6, 1, 3, 9, 6, 1, 0, 1];
    let out = sequence_erase(&lt(&data, &[10, 1], vec![vec![0, 3, 6, 10]]), &[2, 3, 5]).unwrap();
    assert_eq!(vals::<i32>(&out), [6, 1, 9, 6, 1, 0, 1]);
    assert_eq!(levels(&out), vec![vec![0, 1, 3, 7]]);
    assert_eq!(dims(&out), [7, 1]);
    let data: Vec<i64> = (0..30).map(|v| v % 7).collect();
    let two = vec![offsets(&[1, 3]), offsets(&[9, 4, 11, 6])];
    let out = sequence_erase(&lt(&data, &[30], two.clone()), &[0, 3]).unwrap();
    assert_eq!(vals::<i64>(&out), erase_ref(&data, &two[1], &[0, 3]).0);
    assert_eq!(levels(&out), vec![two[0].clone(), erase_ref(&data, &two[1], &[0, 3]).1]);
    assert_eq!(dims(&out).len(), 1);
    let o = offsets(&[0, 9, 0, 0, 10, 11, 0]);
    let out = sequence_erase(&lt(&data, &[30, 1], vec![o.clone()]), &[1, 2, 6]).unwrap();
    let (want, want_lod) = erase_ref(&data, &o, &[1, 2, 6]);
    assert_eq!(vals::<i64>(&out), want);
    assert_eq!(levels(&out), vec![want_lod]);
    let out = sequence_erase(&lt(&data, &[30, 1], vec![o.clone()]), &[]).unwrap();
    assert_eq!(vals::<i64>(&out), data);
    assert_eq!(levels(&out), vec![o]);
}

fn erase_ref<T: Copy + Into<i64>>(x: &[T], o: &[usize], tokens: &[i64]) -> (Vec<T>, Vec<usize>) {
    let mut out = Vec::new();
    let mut lod = vec![0];
    for s in 0..o.len() - 1 {
        for &v in &x[o[s]..o[s + 1]] {
            if !tokens.contains(&v.into()) {
                out.push(v);
            }
        }
        lod.push(out.len());
    }
    (out, lod)
}

// sequence_reshape doc: lod [[0,2,6]], 6x2 of 1..12, new_dim 4 -> 3x4, lod [[0,1,3]].
#[test]
fn reshape_examples() {
    let data: Vec<f32> = (1..=12).map(|v| v as f32).collect();
    let x = lt(&data, &[6, 2], vec![vec![0, 2, 6]]);
    let out = sequence_reshape(&x, 4).unwrap();
    assert_eq!(dims(&out), [3, 4]);
    assert_eq!(vals::<f32>(&out), data);
    assert_eq!(levels(&out), vec![vec![0, 1, 3]]);
    assert_eq!(levels(&sequence_reshape(&x, 2).unwrap()), vec![vec![0, 2, 6]]);
    assert_eq!(levels(&sequence_reshape(&x, 1).unwrap()), vec![vec![0, 4, 12]]);
    let e = sequence_reshape(&x, 3);
    assert!(matches!(&e, Err(Error::InvalidArgument(m)) if m.contains("sequence 0")), "{e:?}");
    let x = lt(&data, &[6, 2], vec![vec![0, 0, 2, 6]]);
    assert_eq!(levels(&sequence_reshape(&x, 4).unwrap()), vec![vec![0, 0, 1, 3]]);
    assert!(matches!(sequence_reshape(&x, 0), Err(Error::InvalidArgument(_))));
    assert!(matches!(sequence_reshape(&lt(&data, &[12], vec![vec![0, 12]]), 4), Err(Error::InvalidArgument(_))));
}

// ---- errors of the remaining operators ----------------------------------------------------------

#[test]
fn argument_errors_and_unsupported_dtypes() {
    let ints = lt(&[1i32, 2, 3], &[3, 1], vec![vec![0, 3]]);
    let floats = lt(&[1f32, 2., 3.], &[3, 1], vec![vec![0, 3]]);
    let wide = lt(&[1f32; 6], &[3, 2], vec![vec![0, 3]]);
    let plain = dense(&[1f32, 2., 3.], &[3, 1]);
    // softmax
    assert!(is_unsupported(sequence_softmax(&ints)));
    assert!(matches!(sequence_softmax(&wide), Err(Error::InvalidArgument(_))));
    assert!(matches!(sequence_softmax(&plain), Err(Error::InvalidLod(_))));
    // concat
    assert!(err_text(sequence_concat(&[&floats])).contains("at least 2"));
    assert!(matches!(sequence_concat(&[&floats, &ints]), Err(Error::InvalidArgument(m)) if m.contains("xs[1]")));
    assert!(matches!(sequence_concat(&[&floats, &wide]), Err(Error::InvalidArgument(m)) if m.contains("xs[1]")));
    assert!(matches!(sequence_concat(&[&floats, &plain]), Err(Error::InvalidLod(m)) if m.contains("xs[1]")));
    let two_seq = lt(&[1f32, 2., 3.], &[3, 1], vec![vec![0, 1, 3]]);
    assert!(matches!(sequence_concat(&[&floats, &floats, &two_seq]), Err(Error::InvalidLod(m)) if m.contains("xs[2]")));
    // Zero-width rows take no memory, so their counts can overflow when added.
    // Here the sum fits in usize but not in int64, as the C API reports dims.
    let huge = 1usize << 62;
    let zero_width = LoDTensor::from_slice::<u8>(&[], &[huge, 0], vec![vec![0, huge]]).unwrap();
    let sum = sequence_concat(&[&zero_width, &zero_width]);
    assert!(matches!(&sum, Err(Error::OutOfMemory(m)) if m.contains("overflows")), "{sum:?}");
    // enumerate
    assert!(is_unsupported(sequence_enumerate(&floats, 2, 0)));
    assert!(matches!(sequence_enumerate(&ints, 1, 0), Err(Error::InvalidArgument(m)) if m.contains("win_size")));
    assert!(matches!(sequence_enumerate(&ints, 2, 1 << 40), Err(Error::InvalidArgument(m)) if m.contains("pad_value")));
    assert!(matches!(sequence_enumerate(&dense(&[1i32], &[1]), 2, 0), Err(Error::InvalidLod(_))));
    assert!(matches!(
        sequence_enumerate(&lt(&[1i64; 6], &[3, 2], vec![vec![0, 3]]), 2, 0),
        Err(Error::InvalidArgument(_))
    ));
    // erase
    assert!(is_unsupported(sequence_erase(&floats, &[1])));
    assert!(matches!(sequence_erase(&dense(&[1i32], &[1]), &[1]), Err(Error::InvalidLod(_))));
    assert!(matches!(sequence_erase(&lt(&[1i64; 6], &[3, 2], vec![vec![0, 3]]), &[1]), Err(Error::InvalidArgument(_))));
    // int32 x: tokens outside int32 never match.
    assert_eq!(vals::<i32>(&sequence_erase(&ints, &[1 << 33, 2]).unwrap()), [1, 3]);
}

// ---- properties against plain loops ----------------------------------------------------------

const ALL: [DType; 10] = DType::ALL;

/// Row-byte reference: the rows of `t` as byte vectors.
fn rows_of(t: &LoDTensor) -> Vec<Vec<u8>> {
    let rb = t.tensor().row_bytes();
    let b = raw(t);
    (0..t.dims().rows().unwrap()).map(|r| b[r * rb..(r + 1) * rb].to_vec()).collect()
}

fn lengths_strategy(max_seqs: usize) -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(prop_oneof![Just(0usize), 1usize..6], 1..max_seqs)
}

fn many_lengths() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![lengths_strategy(12), lengths_strategy(3000)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::rounds(48) as u32, ..ProptestConfig::default() })]

    #[test]
    fn reverse_matches_reference(lengths in many_lengths(), width in 0usize..4, seed in any::<u64>()) {
        let o = offsets(&lengths);
        for dtype in ALL {
            let x = random(dtype, &[*o.last().unwrap(), width], vec![o.clone()], seed);
            let out = sequence_reverse(&x).unwrap();
            let rows = rows_of(&x);
            let mut want = Vec::new();
            for s in 0..lengths.len() {
                for r in (o[s]..o[s + 1]).rev() {
                    want.extend_from_slice(&rows[r]);
                }
            }
            prop_assert_eq!(raw(&out), want);
            prop_assert_eq!(levels(&out), vec![o.clone()]);
        }
    }

    #[test]
    fn concat_matches_reference(l1 in many_lengths(), extra in prop::collection::vec(0usize..6, 3000), inputs in 2usize..4, seed in any::<u64>()) {
        let n = l1.len();
        for dtype in ALL {
            let xs: Vec<LoDTensor> = (0..inputs)
                .map(|j| {
                    let l: Vec<usize> = if j == 0 { l1.clone() } else { extra[..n].iter().map(|&v| (v + j) % 5).collect() };
                    let o = offsets(&l);
                    random(dtype, &[*o.last().unwrap(), 3], vec![o], seed + j as u64)
                })
                .collect();
            let refs: Vec<&LoDTensor> = xs.iter().collect();
            let out = sequence_concat(&refs).unwrap();
            let all_rows: Vec<Vec<Vec<u8>>> = xs.iter().map(rows_of).collect();
            let mut want = Vec::new();
            let mut lod = vec![0];
            for s in 0..n {
                for (x, rows) in xs.iter().zip(&all_rows) {
                    let o = &x.lod().levels()[0];
                    for row in &rows[o[s]..o[s + 1]] {
                        want.extend_from_slice(row);
                    }
                }
                lod.push(want.len() / (3 * dtype.size()));
            }
            prop_assert_eq!(raw(&out), want);
            prop_assert_eq!(levels(&out), vec![lod]);
        }
    }

    #[test]
    fn slice_matches_reference(lengths in many_lengths(), picks in prop::collection::vec((any::<u16>(), any::<u16>()), 3000), seed in any::<u64>()) {
        let o = offsets(&lengths);
        let n = lengths.len();
        let (mut off, mut len) = (Vec::new(), Vec::new());
        for (s, &(a, b)) in picks[..n].iter().enumerate() {
            let a = a as usize % (lengths[s] + 1);
            off.push(a as i64);
            len.push((b as usize % (lengths[s] - a + 1)) as i64);
        }
        for dtype in ALL {
            let x = random(dtype, &[*o.last().unwrap(), 2], vec![o.clone()], seed);
            let out = sequence_slice(&x, &i64s(&off), &dense(&len, &[n])).unwrap();
            let rows = rows_of(&x);
            let mut want = Vec::new();
            let mut lod = vec![0];
            for s in 0..n {
                for row in &rows[o[s] + off[s] as usize..o[s] + (off[s] + len[s]) as usize] {
                    want.extend_from_slice(row);
                }
                lod.push(lod[s] + len[s] as usize);
            }
            prop_assert_eq!(raw(&out), want);
            prop_assert_eq!(levels(&out), vec![lod]);
        }
    }

    #[test]
    fn reshape_matches_reference(lengths in many_lengths(), m in 1usize..4, new_dim in 1usize..7, seed in any::<u64>()) {
        // Scale lengths so every sequence's element count is a multiple of new_dim.
        let lengths: Vec<usize> = lengths.iter().map(|&l| l * new_dim).collect();
        let o = offsets(&lengths);
        for dtype in ALL {
            let x = random(dtype, &[*o.last().unwrap(), m], vec![o.clone()], seed);
            let out = sequence_reshape(&x, new_dim as i64).unwrap();
            prop_assert_eq!(raw(&out), raw(&x));
            prop_assert_eq!(dims(&out), vec![o.last().unwrap() * m / new_dim, new_dim]);
            let want: Vec<usize> = o.iter().map(|&v| v * m / new_dim).collect();
            prop_assert_eq!(levels(&out), vec![want]);
        }
    }

    #[test]
    fn softmax_matches_reference(lengths in many_lengths(), seed in any::<u64>()) {
        let o = offsets(&lengths);
        let n = *o.last().unwrap();
        let xs: Vec<f64> = bytes(seed, n, DType::U8).iter().map(|&b| (b as f64 - 128.) / 8.).collect();
        let mut want = vec![0f64; n];
        for s in 0..lengths.len() {
            let seq = &xs[o[s]..o[s + 1]];
            let m = seq.iter().cloned().fold(f64::MIN, f64::max);
            let sum: f64 = seq.iter().map(|v| (v - m).exp()).sum();
            for (k, v) in seq.iter().enumerate() {
                want[o[s] + k] = (v - m).exp() / sum;
            }
        }
        let lod = vec![o.clone()];
        let got = vals::<f64>(&sequence_softmax(&lt(&xs, &[n, 1], lod.clone())).unwrap());
        assert_close(&got, &want, 1e-12);
        let x32: Vec<f32> = xs.iter().map(|&v| v as f32).collect();
        let got: Vec<f64> = vals::<f32>(&sequence_softmax(&lt(&x32, &[n], lod.clone())).unwrap()).iter().map(|&v| v as f64).collect();
        assert_close(&got, &want, 1e-6);
        let xh: Vec<f16> = xs.iter().map(|&v| f16::from_f64(v)).collect();
        let got: Vec<f64> = vals::<f16>(&sequence_softmax(&lt(&xh, &[n], lod.clone())).unwrap()).iter().map(|v| v.to_f64()).collect();
        assert_close(&got, &want, 1e-3);
        let xb: Vec<bf16> = xs.iter().map(|&v| bf16::from_f64(v)).collect();
        let got: Vec<f64> = vals::<bf16>(&sequence_softmax(&lt(&xb, &[n], lod)).unwrap()).iter().map(|v| v.to_f64()).collect();
        assert_close(&got, &want, 4e-3);
    }

    #[test]
    fn enumerate_and_erase_match_reference(lengths in many_lengths(), top in 1usize..4, win in 2i64..6, pad in -3i64..3, tokens in prop::collection::vec(0i64..8, 0..4), seed in any::<u64>()) {
        // A 2-level LoD: `top` upper sequences over the random lower ones (the first takes the rest).
        let n_lower = lengths.len();
        let mut upper = vec![0];
        for t in 1..top { upper.push((n_lower * t / top).max(upper[t - 1])); }
        upper.push(n_lower);
        let o = offsets(&lengths);
        let n = *o.last().unwrap();
        let data: Vec<i64> = bytes(seed, n, DType::U8).iter().map(|&b| (b % 8) as i64).collect();
        let data32: Vec<i32> = data.iter().map(|&v| v as i32).collect();
        for lod in [vec![o.clone()], vec![upper.clone(), o.clone()]] {
            let out = sequence_enumerate(&lt(&data, &[n, 1], lod.clone()), win, pad).unwrap();
            prop_assert_eq!(vals::<i64>(&out), enumerate_ref(&data, &o, win as usize, pad));
            prop_assert_eq!(levels(&out), lod.clone());
            let out = sequence_enumerate(&lt(&data32, &[n], lod.clone()), win, pad).unwrap();
            prop_assert_eq!(vals::<i32>(&out), enumerate_ref(&data32, &o, win as usize, pad as i32));
            let (want, last) = erase_ref(&data, &o, &tokens);
            let mut want_lod = lod.clone();
            *want_lod.last_mut().unwrap() = last;
            let out = sequence_erase(&lt(&data, &[n, 1], lod.clone()), &tokens).unwrap();
            prop_assert_eq!(vals::<i64>(&out), want.clone());
            prop_assert_eq!(levels(&out), want_lod.clone());
            let out = sequence_erase(&lt(&data32, &[n], lod.clone()), &tokens).unwrap();
            prop_assert_eq!(vals::<i32>(&out), want.iter().map(|&v| v as i32).collect::<Vec<_>>());
            prop_assert_eq!(levels(&out), want_lod);
        }
    }

    #[test]
    fn mask_matches_reference(x in prop::collection::vec(-20i64..90, 0..40), maxlen in prop_oneof![Just(-1i64), 1i64..12]) {
        // Tenths, so float inputs have fractions.
        let x: Vec<f64> = x.iter().map(|&v| v as f64 / 10.).collect();
        for xd in [DType::U8, DType::I8, DType::I16, DType::I32, DType::I64, DType::F16, DType::BF16, DType::F32, DType::F64] {
            let xt = lodtensor::ops::cast(&dense(&x, &[x.len()]), xd).unwrap();
            // The values as x's dtype holds them (integers truncate, uint8 wraps -1 to 255).
            let xv = vals::<f64>(&lodtensor::ops::cast(&xt, DType::F64).unwrap());
            let m = if maxlen < 0 { xv.iter().map(|&v| v.trunc() as i64).max().unwrap_or(0).max(0) as usize } else { maxlen as usize };
            let want: Vec<f64> = xv.iter().flat_map(|&v| (0..m).map(move |j| if (j as f64) < v { 1. } else { 0. })).collect();
            for od in ALL {
                let out = sequence_mask(&xt, maxlen, od).unwrap();
                prop_assert_eq!(dims(&out), vec![x.len(), m]);
                let as_f64 = lodtensor::ops::cast(&out, DType::F64).unwrap();
                prop_assert_eq!(vals::<f64>(&as_f64), want.clone());
            }
        }
    }
}

// ---- thread-count determinism ------------------------------------------------------------------

#[test]
fn results_do_not_depend_on_the_thread_count() {
    // > 256 KiB of output in each op, over many sequences and a few long ones.
    let mut lengths: Vec<usize> = (0..40_000).map(|i| i * 7 % 13).collect();
    lengths.extend([100_000, 0, 70_000]);
    let o = offsets(&lengths);
    let n = *o.last().unwrap();
    let run = || {
        let x = random(DType::F32, &[n, 1], vec![o.clone()], 7);
        let xf = lodtensor::ops::cast(&random(DType::U8, &[n, 1], vec![o.clone()], 9), DType::F32).unwrap();
        let xi = lodtensor::ops::cast(&random(DType::U8, &[n, 1], vec![o.clone()], 11), DType::I64).unwrap();
        let ns = lengths.len();
        let xc = lodtensor::ops::cast(&random(DType::I8, &[n, 2], vec![o.clone()], 5), DType::F32).unwrap();
        let fc = lodtensor::ops::cast(&random(DType::I8, &[6, 4], vec![], 6), DType::F32).unwrap();
        let off: Vec<i64> = lengths.iter().map(|&l| (l / 3) as i64).collect();
        let len: Vec<i64> = lengths.iter().map(|&l| (l / 2) as i64).collect();
        vec![
            raw(&sequence_softmax(&xf).unwrap()),
            raw(&sequence_concat(&[&x, &x, &xf]).unwrap()),
            raw(&sequence_slice(&x, &i64s(&off), &dense(&len, &[ns])).unwrap()),
            raw(&sequence_reverse(&x).unwrap()),
            raw(&sequence_mask(&xi, -1, DType::F32).unwrap()),
            raw(&sequence_enumerate(&xi, 3, -1).unwrap()),
            raw(&sequence_erase(&xi, &[0, 5, 7]).unwrap()),
            raw(&sequence_reshape(&random(DType::I16, &[n, 4], vec![o.clone()], 3), 2).unwrap()),
            raw(&sequence_conv(&xc, &fc, None, 3, -1, 1, false).unwrap()),
        ]
    };
    let (one, four) = with_1_and_4_threads(run);
    assert!(one == four, "results differ between 1 and 4 threads");

    // The kernels that split the work into chunks of whole sequences, against plain loops: at
    // this size they make many chunks, on the pool.
    let x = random(DType::F32, &[n, 1], vec![o.clone()], 7);
    let xr = rows_of(&x);
    let mut want = Vec::new();
    for s in 0..lengths.len() {
        (o[s]..o[s + 1]).rev().for_each(|r| want.extend_from_slice(&xr[r]));
    }
    assert!(one[3] == want, "sequence_reverse differs from the reference");
    let xf = lodtensor::ops::cast(&random(DType::U8, &[n, 1], vec![o.clone()], 9), DType::F32).unwrap();
    let xfr = rows_of(&xf);
    want.clear();
    for s in 0..lengths.len() {
        for part in [&xr, &xr, &xfr] {
            (o[s]..o[s + 1]).for_each(|r| want.extend_from_slice(&part[r]));
        }
    }
    assert!(one[1] == want, "sequence_concat differs from the reference");
    let xi = lodtensor::ops::cast(&random(DType::U8, &[n, 1], vec![o.clone()], 11), DType::I64).unwrap();
    let xiv = vals::<i64>(&xi);
    let as_bytes = |v: &[i64]| v.iter().flat_map(|e| e.to_ne_bytes()).collect::<Vec<u8>>();
    assert!(one[5] == as_bytes(&enumerate_ref(&xiv, &o, 3, -1)), "sequence_enumerate differs from the reference");
    assert!(one[6] == as_bytes(&erase_ref(&xiv, &o, &[0, 5, 7]).0), "sequence_erase differs from the reference");
    let xc = lodtensor::ops::cast(&random(DType::I8, &[n, 2], vec![o.clone()], 5), DType::F64).unwrap();
    let fc = lodtensor::ops::cast(&random(DType::I8, &[6, 4], vec![], 6), DType::F64).unwrap();
    let want = conv_ref(&vals::<f64>(&xc), &o, 2, &vals::<f64>(&fc), 4, 3, -1, None);
    let got: Vec<f64> = one[8].chunks_exact(4).map(|b| f32::from_ne_bytes(b.try_into().unwrap()) as f64).collect();
    assert_close(&got, &want, 1e-3);
}

// ---- sequence_conv -------------------------------------------------------------------------------

/// The context rows of the spec's reference, then the matrix product, in plain loops.
#[allow(clippy::too_many_arguments)]
fn conv_ref(
    x: &[f64],
    o: &[usize],
    n: usize,
    filter: &[f64],
    m: usize,
    length: usize,
    start: i64,
    padding: Option<&[f64]>,
) -> Vec<f64> {
    let up = (-start).max(0);
    let mut out = Vec::new();
    for s in 0..o.len() - 1 {
        let len = (o[s + 1] - o[s]) as i64;
        for r in 0..len {
            let mut ctx = vec![0.0; length * n];
            for j in 0..length {
                let p = r + start + j as i64;
                for c in 0..n {
                    ctx[j * n + c] = if 0 <= p && p < len {
                        x[(o[s] + p as usize) * n + c]
                    } else if let Some(pad) = padding {
                        let k = if p < 0 { up + p } else { up + p - len };
                        pad[k as usize * n + c]
                    } else {
                        0.0
                    };
                }
            }
            for col in 0..m {
                out.push((0..length * n).map(|k| ctx[k] * filter[k * m + col]).sum());
            }
        }
    }
    out
}

// sequence_conv doc: rows [1,1],[2,2],[3,3],[4,4], lod [[0,3,4]], start -1, length 3; with an
// identity filter the output is the context rows themselves.
#[test]
fn conv_doc_example() {
    let x = lt(&[1f32, 1., 2., 2., 3., 3., 4., 4.], &[4, 2], vec![vec![0, 3, 4]]);
    let identity: Vec<f32> = (0..36).map(|k| if k / 6 == k % 6 { 1. } else { 0. }).collect();
    let filter = dense(&identity, &[6, 6]);
    let out = sequence_conv(&x, &filter, None, 3, -1, 1, false).unwrap();
    assert_eq!(
        vals::<f32>(&out),
        [0., 0., 1., 1., 2., 2., 1., 1., 2., 2., 3., 3., 2., 2., 3., 3., 0., 0., 0., 0., 4., 4., 0., 0.]
    );
    assert_eq!(levels(&out), vec![vec![0, 3, 4]]);
    // Trainable padding: 1 row before (p = -1), 1 row after (p = len).
    let pad = dense(&[-1f32, -2., -3., -4.], &[2, 2]);
    let out = sequence_conv(&x, &filter, Some(&pad), 3, -1, 1, true).unwrap();
    assert_eq!(
        vals::<f32>(&out),
        [-1., -2., 1., 1., 2., 2., 1., 1., 2., 2., 3., 3., 2., 2., 3., 3., -3., -4., -1., -2., 4., 4., -3., -4.]
    );
    // Errors.
    let e = |r: Result<LoDTensor, Error>| r.unwrap_err();
    assert!(
        matches!(e(sequence_conv(&x, &filter, None, 3, -1, 1, true)), Error::NullArgument(m) if m.contains("padding_data"))
    );
    assert!(
        matches!(e(sequence_conv(&x, &filter, None, 3, -1, 2, false)), Error::InvalidArgument(m) if m.contains("context_stride"))
    );
    assert!(
        matches!(e(sequence_conv(&x, &filter, None, 0, -1, 1, false)), Error::InvalidArgument(m) if m.contains("context_length"))
    );
    assert!(
        matches!(e(sequence_conv(&x, &filter, None, 2, -1, 1, false)), Error::InvalidArgument(m) if m.contains("filter"))
    );
    let f2 = dense(&[1f32, 0., 0., 1.], &[2, 2]);
    assert!(
        matches!(e(sequence_conv(&x, &f2, Some(&pad), 1, 0, 1, true)), Error::InvalidArgument(m) if m.contains("padding_trainable"))
    );
    assert!(
        matches!(e(sequence_conv(&x, &filter, Some(&f2), 3, -3, 1, true)), Error::InvalidArgument(m) if m.contains("padding_data"))
    );
    assert!(
        matches!(e(sequence_conv(&x, &dense(&[0f64; 36], &[6, 6]), None, 3, -1, 1, false)), Error::InvalidArgument(m) if m.contains("dtype"))
    );
    assert!(matches!(e(sequence_conv(&x, &filter, None, 3, i64::MIN, 1, false)), Error::InvalidArgument(_)));
    let xi = lt(&[1i32, 1], &[1, 2], vec![vec![0, 1]]);
    assert!(is_unsupported(sequence_conv(&xi, &dense(&[0i32; 12], &[6, 2]), None, 3, -1, 1, false)));
    let two = lt(&[1f32, 1.], &[1, 2], vec![vec![0, 1], vec![0, 1]]);
    assert!(matches!(e(sequence_conv(&two, &filter, None, 3, -1, 1, false)), Error::InvalidLod(_)));
    // Padding is ignored unless trainable.
    assert_eq!(vals::<f32>(&sequence_conv(&x, &filter, Some(&f2), 3, -1, 1, false).unwrap())[0], 0.);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::rounds(64) as u32, ..ProptestConfig::default() })]

    #[test]
    fn conv_matches_reference(lengths in lengths_strategy(20), n in 1usize..4, m in 1usize..4, length in 1usize..5, start in -4i64..3, trainable in any::<bool>(), seed in any::<u64>()) {
        prop_assume!(!(trainable && start == 0 && length == 1));
        let o = offsets(&lengths);
        let rows = *o.last().unwrap();
        let num = |k: usize, salt: u64| bytes(seed ^ salt, k, DType::U8).iter().map(|&b| (b as f64 - 128.) / 16.).collect::<Vec<f64>>();
        let x = num(rows * n, 1);
        let filter = num(length * n * m, 2);
        let pad_rows = ((-start).max(0) + (start + length as i64 - 1).max(0)) as usize;
        let pad = num(pad_rows * n, 3);
        let want = conv_ref(&x, &o, n, &filter, m, length, start, trainable.then_some(pad.as_slice()));
        let pad_t = dense(&pad, &[pad_rows, n]);
        let got = sequence_conv(&lt(&x, &[rows, n], vec![o.clone()]), &dense(&filter, &[length * n, m]), Some(&pad_t), length as i64, start, 1, trainable).unwrap();
        prop_assert_eq!(dims(&got), vec![rows, m]);
        assert_close(&vals::<f64>(&got), &want, 1e-9);
        let f32s = |v: &[f64]| v.iter().map(|&a| a as f32).collect::<Vec<f32>>();
        let pad32 = dense(&f32s(&pad), &[pad_rows, n]);
        let got = sequence_conv(&lt(&f32s(&x), &[rows, n], vec![o.clone()]), &dense(&f32s(&filter), &[length * n, m]), Some(&pad32), length as i64, start, 1, trainable).unwrap();
        assert_close(&vals::<f32>(&got).iter().map(|&v| v as f64).collect::<Vec<_>>(), &want, 1e-3);
    }
}
