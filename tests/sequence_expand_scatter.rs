//! sequence_expand, sequence_expand_as and sequence_scatter: the worked examples of spec §2 and §3
//! (under the names of the Paddle tests or docs they come from), property tests against plain
//! reference loops written here on random LoDs and every dtype, and thread-count determinism.

mod common;

use common::with_1_and_4_threads;
use lodtensor::dtype::Scalar;
use lodtensor::{
    sequence_expand, sequence_expand_as, sequence_scatter, sequence_scatter_inplace, DType, Dim, Error, LoDTensor, Lod,
    Tensor,
};
use proptest::prelude::*;

fn lod(levels: &[&[usize]]) -> Vec<Vec<usize>> {
    levels.iter().map(|l| l.to_vec()).collect()
}

/// A float32 [rows, width] tensor whose row r holds r*100 + c, so rows are recognisable.
fn rows_tensor(rows: usize, width: usize, lengths: &[&[usize]]) -> LoDTensor {
    let data: Vec<f32> = (0..rows * width).map(|i| ((i / width) * 100 + i % width) as f32).collect();
    let l = if lengths.is_empty() { Lod::empty() } else { Lod::from_lengths(&lod(lengths)).unwrap() };
    LoDTensor::new(Tensor::from_slice(&data, &[rows, width]).unwrap(), l).unwrap()
}

/// Which source row each output row holds (rows made by `rows_tensor`).
fn row_ids(t: &LoDTensor) -> Vec<usize> {
    let w = t.dims().row_width();
    let v = t.tensor().as_slice::<f32>().unwrap();
    (0..t.dims().rows().unwrap()).map(|r| (v[r * w] / 100.0) as usize).collect()
}

/// A tensor of `rows` rows with the given LoD whose data is never read (the role of Y).
fn y_with(lengths: &[&[usize]]) -> LoDTensor {
    let l = Lod::from_lengths(&lod(lengths)).unwrap();
    let rows = l.rows().unwrap();
    LoDTensor::new(Tensor::zeros(DType::F32, Dim::new(&[rows, 1]).unwrap()).unwrap(), l).unwrap()
}

fn chars(t: &LoDTensor) -> Vec<f32> {
    t.tensor().as_slice::<f32>().unwrap().to_vec()
}

// §2.1 op doc case 1: repeats count sub-sequences of level 0, not rows.
#[test]
fn expand_doc_case_1() {
    let x = LoDTensor::from_slice(&[1f32, 2., 3., 4.], &[4, 1], lod(&[&[0, 2, 4]])).unwrap();
    let y = LoDTensor::new(
        Tensor::zeros(DType::F32, Dim::new(&[8, 1]).unwrap()).unwrap(),
        Lod::from_offsets(lod(&[&[0, 2, 4], &[0, 3, 6, 7, 8]])).unwrap(),
    )
    .unwrap();
    let out = sequence_expand(&x, &y, 0).unwrap();
    assert_eq!(chars(&out), [1., 2., 1., 2., 3., 4., 3., 4.]);
    assert_eq!(out.lod().levels(), lod(&[&[0, 2, 4, 6, 8]]).as_slice());
    assert_eq!(out.dims().as_slice(), &[8, 1]);
}

// §2.1 op doc case 2.
#[test]
fn expand_doc_case_2() {
    let x = LoDTensor::from_slice(&[1f32, 2., 3., 4.], &[4, 1], lod(&[&[0, 1, 4]])).unwrap();
    let y = LoDTensor::new(
        Tensor::zeros(DType::F32, Dim::new(&[8, 1]).unwrap()).unwrap(),
        Lod::from_offsets(lod(&[&[0, 2, 4], &[0, 3, 6, 6, 8]])).unwrap(),
    )
    .unwrap();
    let out = sequence_expand(&x, &y, 0).unwrap();
    assert_eq!(chars(&out), [1., 1., 2., 3., 4., 2., 3., 4.]);
    assert_eq!(out.lod().levels(), lod(&[&[0, 1, 2, 5, 8]]).as_slice());
}

// §2.1 op doc cases 3 and 4: a dense X, ref_level -1; the result has no LoD.
#[test]
fn expand_doc_cases_3_and_4() {
    for width in [1, 2] {
        let x = rows_tensor(3, width, &[]);
        let y = LoDTensor::new(
            Tensor::zeros(DType::F32, Dim::new(&[6, 1]).unwrap()).unwrap(),
            Lod::from_offsets(lod(&[&[0, 2, 3, 6]])).unwrap(),
        )
        .unwrap();
        let out = sequence_expand(&x, &y, -1).unwrap();
        assert_eq!(row_ids(&out), [0, 0, 1, 2, 2, 2]);
        assert_eq!(out.dims().as_slice(), &[6, width]);
        assert!(out.lod().is_empty());
        let v = chars(&out);
        assert_eq!(v[v.len() - 1], (200 + width - 1) as f32);
    }
}

// §2.1 TestSequenceExpandCase5: a dense X, ref_level 1 (the last of 2), row 3 dropped.
#[test]
fn expand_case_5_dense_x_ref_level_1() {
    let x = rows_tensor(6, 20, &[]);
    let y = y_with(&[&[2, 4], &[2, 2, 3, 0, 3, 3]]);
    let out = sequence_expand(&x, &y, 1).unwrap();
    assert_eq!(out.dims().as_slice(), &[13, 20]);
    assert_eq!(row_ids(&out), [0, 0, 1, 1, 2, 2, 2, 4, 4, 4, 5, 5, 5]);
    assert!(out.lod().is_empty());
    // -1 names the same (last) level.
    assert_eq!(row_ids(&sequence_expand(&x, &y, -1).unwrap()), row_ids(&out));
}

// §2.1 TestSequenceExpandCase6: empty X sequence repeated gives empty entries.
#[test]
fn expand_case_6_empty_sequence() {
    let x = rows_tensor(4, 25, &[&[1, 1, 0, 1, 1]]);
    let y = y_with(&[&[0, 2, 4, 2, 0]]);
    let out = sequence_expand(&x, &y, -1).unwrap();
    assert_eq!(row_ids(&out), [1, 1, 2, 2]);
    assert_eq!(out.lod().lengths(), lod(&[&[1, 1, 0, 0, 0, 0, 1, 1]]));
    assert_eq!(out.dims().as_slice(), &[4, 25]);
}

// §2.1 TestSequenceExpandCase2: a 3-D X.
#[test]
fn expand_case_2_rank_3() {
    let data: Vec<f32> = (0..100).map(|i| i as f32).collect();
    let x = LoDTensor::from_slice(&data, &[1, 2, 50], lod(&[&[0, 1]])).unwrap();
    let y = LoDTensor::new(
        Tensor::zeros(DType::F32, Dim::new(&[2, 2, 2]).unwrap()).unwrap(),
        Lod::from_lengths(&lod(&[&[2], &[1, 1]])).unwrap(),
    )
    .unwrap();
    let out = sequence_expand(&x, &y, 0).unwrap();
    assert_eq!(out.dims().as_slice(), &[2, 2, 50]);
    assert_eq!(out.lod().lengths(), lod(&[&[1, 1]]));
    assert_eq!(chars(&out), [data.clone(), data].concat());
}

#[test]
fn expand_errors() {
    let x = rows_tensor(2, 1, &[&[1, 1]]);
    let y = y_with(&[&[1, 1]]);
    assert!(matches!(sequence_expand(&x, &y, 1), Err(Error::OutOfRange(m)) if m.contains("ref_level")));
    assert!(matches!(sequence_expand(&x, &y, -2), Err(Error::OutOfRange(_))));
    assert!(matches!(sequence_expand(&x, &rows_tensor(2, 1, &[]), 0), Err(Error::InvalidLod(m)) if m.contains("y")));
    assert!(matches!(sequence_expand(&x, &y_with(&[&[1, 1, 1]]), 0), Err(Error::InvalidLod(m)) if m.contains("x")));
    assert!(
        matches!(sequence_expand(&rows_tensor(3, 1, &[]), &y, 0), Err(Error::InvalidArgument(m)) if m.contains("x"))
    );
    let two_levels = rows_tensor(2, 1, &[&[2], &[1, 1]]);
    assert!(matches!(sequence_expand(&two_levels, &y, 0), Err(Error::InvalidLod(_))));
    let rank1 = LoDTensor::from_slice(&[1f32, 2.], &[2], lod(&[&[0, 1, 2]])).unwrap();
    assert!(matches!(sequence_expand(&rank1, &y, 0), Err(Error::InvalidArgument(m)) if m.contains("rank")));
    // More copies than the output's LoD could list: an error, not an abort (y's rows are empty).
    let huge = 1usize << 60;
    let y_huge = LoDTensor::new(
        Tensor::zeros(DType::F32, Dim::new(&[huge, 0]).unwrap()).unwrap(),
        Lod::from_offsets(vec![vec![0, huge]]).unwrap(),
    )
    .unwrap();
    let one = rows_tensor(1, 1, &[&[1]]);
    assert!(
        matches!(sequence_expand(&one, &y_huge, 0), Err(Error::OutOfMemory(m)) if m.contains("cannot be listed")),
        "{:?}",
        sequence_expand(&one, &y_huge, 0)
    );
    // Copies whose rows add up past usize (rows of zero width take no memory): an error too.
    // Bytes: a tensor's non-zero dims times its element size must fit in isize, so U8 rows.
    let long = LoDTensor::new(
        Tensor::zeros(DType::U8, Dim::new(&[huge, 0]).unwrap()).unwrap(),
        Lod::from_offsets(vec![vec![0, huge]]).unwrap(),
    )
    .unwrap();
    let sixteen = LoDTensor::new(
        Tensor::zeros(DType::U8, Dim::new(&[16, 0]).unwrap()).unwrap(),
        Lod::from_offsets(vec![vec![0, 16]]).unwrap(),
    )
    .unwrap();
    assert!(
        matches!(sequence_expand(&long, &sixteen, 0), Err(Error::OutOfMemory(m)) if m.contains("row count overflows")),
        "{:?}",
        sequence_expand(&long, &sixteen, 0)
    );
    // Rows that fit in usize but not in int64 (dims as the C API reports them) are refused too:
    // seven copies of 2^60 rows are the most that fit.
    let copies = |n: usize| {
        LoDTensor::new(sixteen.tensor().slice_rows(0..n).unwrap(), Lod::from_offsets(vec![vec![0, n]]).unwrap())
            .unwrap()
    };
    assert_eq!(sequence_expand(&long, &copies(7), 0).unwrap().lod().levels()[0].last(), Some(&(7 * huge)));
    let eight = sequence_expand(&long, &copies(8), 0);
    assert!(matches!(&eight, Err(Error::OutOfMemory(m)) if m.contains("overflows") && m.contains("dims")), "{eight:?}");
    // x's rows times the copies overflow, but the copies' rows fit: x's long sequence copied 3
    // times among 300,000 empty ones copied once each (enough to be made in many chunks). Then
    // the overflow found among those many chunks.
    for long_copies in [3, 16] {
        common::expand_of_a_huge_sequence(long_copies, lodtensor::Place::Cpu);
    }
    // Zero copies in all: a 0-row result, and (our rule) no LoD since [0] is no valid top level.
    let none = sequence_expand(&x, &y_with(&[&[0, 0]]), 0).unwrap();
    assert_eq!(none.dims().as_slice(), &[0, 1]);
    assert!(none.lod().is_empty());
}

// §2.2 op doc case 1.
#[test]
fn expand_as_doc_case_1() {
    let x = rows_tensor(4, 1, &[]);
    let y = LoDTensor::new(
        Tensor::zeros(DType::F32, Dim::new(&[8, 1]).unwrap()).unwrap(),
        Lod::from_offsets(lod(&[&[0, 3, 6, 7, 8]])).unwrap(),
    )
    .unwrap();
    let out = sequence_expand_as(&x, &y).unwrap();
    assert_eq!(row_ids(&out), [0, 0, 0, 1, 1, 1, 2, 3]);
    assert_eq!(out.lod(), y.lod());
}

// §2.2 TestSequenceExpandAsCase1: X's own LoD ignored, row 2 dropped.
#[test]
fn expand_as_case_1() {
    let x = rows_tensor(5, 20, &[&[2, 3]]);
    let y = y_with(&[&[2, 2, 0, 3, 3]]);
    let out = sequence_expand_as(&x, &y).unwrap();
    assert_eq!(row_ids(&out), [0, 0, 1, 1, 3, 3, 3, 4, 4, 4]);
    assert_eq!(out.lod().lengths(), lod(&[&[2, 2, 0, 3, 3]]));
    assert_eq!(out.dims().as_slice(), &[10, 20]);
}

// §2.2 TestSequenceExpandAsCase3.
#[test]
fn expand_as_case_3() {
    let data: Vec<f32> = (0..100).map(|i| i as f32).collect();
    let x = LoDTensor::dense(Tensor::from_slice(&data, &[1, 2, 50]).unwrap());
    let out = sequence_expand_as(&x, &y_with(&[&[2]])).unwrap();
    assert_eq!(out.dims().as_slice(), &[2, 2, 50]);
    assert_eq!(chars(&out), [data.clone(), data].concat());
}

#[test]
fn expand_as_errors() {
    let x = rows_tensor(2, 1, &[]);
    assert!(matches!(sequence_expand_as(&x, &y_with(&[&[1, 1, 1]])), Err(Error::InvalidArgument(_))));
    assert!(matches!(sequence_expand_as(&x, &y_with(&[&[2], &[1, 1]])), Err(Error::InvalidLod(_))));
    assert!(matches!(sequence_expand_as(&x, &rows_tensor(2, 1, &[])), Err(Error::InvalidLod(_))));
    let rank1 = LoDTensor::dense(Tensor::from_slice(&[1f32, 2.], &[2]).unwrap());
    assert!(matches!(sequence_expand_as(&rank1, &y_with(&[&[1, 1]])), Err(Error::InvalidArgument(_))));
}

/// An int64 [m, 1] ids tensor with the given sequence lengths.
fn ids_tensor(ids: &[i64], lengths: &[usize]) -> LoDTensor {
    LoDTensor::new(Tensor::from_slice(ids, &[ids.len(), 1]).unwrap(), Lod::from_lengths(&[lengths.to_vec()]).unwrap())
        .unwrap()
}

fn updates_tensor<T: lodtensor::Element>(v: &[T], lengths: &[usize]) -> LoDTensor {
    LoDTensor::new(Tensor::from_slice(v, &[v.len(), 1]).unwrap(), Lod::from_lengths(&[lengths.to_vec()]).unwrap())
        .unwrap()
}

// §3 op doc example (identical to the Python API doc).
#[test]
fn scatter_doc_example() {
    let x = LoDTensor::dense(Tensor::from_slice(&[1f32; 18], &[3, 6]).unwrap());
    let ids = ids_tensor(&[0, 1, 2, 5, 4, 3, 2, 1, 3, 2, 5, 4], &[3, 5, 4]);
    let upd = updates_tensor(&[0.3f32, 0.3, 0.4, 0.1, 0.2, 0.3, 0.4, 0.0, 0.2, 0.3, 0.1, 0.4], &[3, 5, 4]);
    let want = [[1.3f32, 1.3, 1.4, 1.0, 1.0, 1.0], [1.0, 1.0, 1.4, 1.3, 1.2, 1.1], [1.0, 1.0, 1.3, 1.2, 1.4, 1.1]];
    let out = sequence_scatter(&x, &ids, &upd).unwrap();
    assert!(out.lod().is_empty());
    let got = chars(&out);
    for (g, w) in got.iter().zip(want.iter().flatten()) {
        assert!((g - w).abs() < 1e-6, "{got:?}");
    }
    assert_eq!(chars(&x), [1f32; 18], "x is not modified");
    // In place gives the same values.
    let mut y = x.copy().unwrap();
    sequence_scatter_inplace(&mut y, &ids, &upd).unwrap();
    assert_eq!(chars(&y), got);
}

/// Plain-loop reference of §3: row i of x gets updates of ids sequence i.
fn scatter_reference<T: Scalar>(x: &[T], width: usize, ids: &[i64], offsets: &[usize], upd: &[T]) -> Vec<T> {
    let mut out = x.to_vec();
    for i in 0..offsets.len() - 1 {
        for p in offsets[i]..offsets[i + 1] {
            let at = i * width + ids[p] as usize;
            out[at] = out[at].add(upd[p]);
        }
    }
    out
}

fn xorshift(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

fn check_scatter<T: Scalar>(rows: usize, width: usize, lengths: &[usize], seed: u64) {
    let mut s = seed | 1;
    let x: Vec<T> = (0..rows * width).map(|_| T::cast_f64((xorshift(&mut s) % 50) as f64)).collect();
    let m: usize = lengths.iter().sum();
    let ids: Vec<i64> = (0..m).map(|_| (xorshift(&mut s) % width as u64) as i64).collect();
    let upd: Vec<T> = (0..m).map(|_| T::cast_f64((xorshift(&mut s) % 7) as f64)).collect();
    let offsets = lodtensor::lengths_to_offsets(&[lengths.to_vec()]).unwrap().remove(0);
    let want = scatter_reference(&x, width, &ids, &offsets, &upd);
    let xt = LoDTensor::dense(Tensor::from_slice(&x, &[rows, width]).unwrap());
    let (idt, ut) = (ids_tensor(&ids, lengths), updates_tensor(&upd, lengths));
    let out = sequence_scatter(&xt, &idt, &ut).unwrap();
    assert_eq!(out.tensor().as_slice::<T>().unwrap(), want.as_slice());
    // int32 ids give the same result.
    let ids32: Vec<i32> = ids.iter().map(|&v| v as i32).collect();
    let id32 = LoDTensor::new(Tensor::from_slice(&ids32, &[m]).unwrap(), idt.lod().clone()).unwrap();
    let mut inplace = xt.copy().unwrap();
    sequence_scatter_inplace(&mut inplace, &id32, &ut).unwrap();
    assert_eq!(inplace.tensor().as_slice::<T>().unwrap(), want.as_slice());
}

// §3: the test's LoDs with empty sequences (X [3, 6], 120 ids), every numeric dtype.
#[test]
fn scatter_test_lods_with_empty_sequences() {
    let lods: [&[usize]; 7] =
        [&[30, 50, 40], &[60, 60, 0], &[0, 60, 60], &[60, 0, 60], &[120, 0, 0], &[0, 120, 0], &[0, 0, 120]];
    for (k, l) in lods.iter().enumerate() {
        let seed = 7 + k as u64;
        check_scatter::<f32>(3, 6, l, seed);
        check_scatter::<f64>(3, 6, l, seed);
        check_scatter::<i32>(3, 6, l, seed);
        check_scatter::<i64>(3, 6, l, seed);
        check_scatter::<half::f16>(3, 6, l, seed);
        check_scatter::<half::bf16>(3, 6, l, seed);
        check_scatter::<u8>(3, 6, l, seed);
        check_scatter::<i8>(3, 6, l, seed);
        check_scatter::<i16>(3, 6, l, seed);
    }
}

#[test]
fn scatter_errors() {
    let x = LoDTensor::dense(Tensor::from_slice(&[0f32; 12], &[2, 6]).unwrap());
    let upd = updates_tensor(&[1f32, 1., 1.], &[2, 1]);
    // Our rule: an id outside [0, 6) is OutOfRange naming the index, the value and the row.
    let e = sequence_scatter(&x, &ids_tensor(&[0, 1, 6], &[2, 1]), &upd).unwrap_err();
    assert!(
        matches!(&e, Error::OutOfRange(m) if m.contains("ids[2] = 6") && m.contains("[0, 6)") && m.contains("row 1")),
        "{e}"
    );
    let e = sequence_scatter(&x, &ids_tensor(&[-1, 1, 2], &[2, 1]), &upd).unwrap_err();
    assert!(matches!(&e, Error::OutOfRange(m) if m.contains("ids[0] = -1")), "{e}");
    // Our rule: more ids sequences than rows of x.
    let e = sequence_scatter(&x, &ids_tensor(&[0, 1, 2], &[1, 1, 1]), &updates_tensor(&[1f32, 1., 1.], &[1, 1, 1]))
        .unwrap_err();
    assert!(matches!(&e, Error::OutOfRange(m) if m.contains("3 sequences")), "{e}");
    let ids = ids_tensor(&[0, 1, 2], &[2, 1]);
    // updates: wrong count, wrong dtype, no LoD.
    assert!(matches!(sequence_scatter(&x, &ids, &updates_tensor(&[1f32, 1.], &[2])), Err(Error::InvalidArgument(_))));
    assert!(matches!(
        sequence_scatter(&x, &ids, &updates_tensor(&[1f64, 1., 1.], &[2, 1])),
        Err(Error::InvalidArgument(_))
    ));
    let dense_upd = LoDTensor::dense(Tensor::from_slice(&[1f32, 1., 1.], &[3, 1]).unwrap());
    assert!(matches!(sequence_scatter(&x, &ids, &dense_upd), Err(Error::InvalidLod(_))));
    // ids: no LoD, wrong dtype, not one id per row.
    let dense_ids = LoDTensor::dense(Tensor::from_slice(&[0i64, 1, 2], &[3, 1]).unwrap());
    assert!(matches!(sequence_scatter(&x, &dense_ids, &upd), Err(Error::InvalidLod(_))));
    let f_ids = LoDTensor::from_slice(&[0f32, 1., 2.], &[3, 1], lod(&[&[0, 2, 3]])).unwrap();
    assert!(matches!(sequence_scatter(&x, &f_ids, &upd), Err(Error::Unsupported(_))));
    let wide_ids = LoDTensor::from_slice(&[0i64, 1, 2, 3, 4, 5], &[3, 2], lod(&[&[0, 2, 3]])).unwrap();
    assert!(matches!(sequence_scatter(&x, &wide_ids, &upd), Err(Error::InvalidArgument(_))));
    // bool x is unsupported (no arithmetic on bools).
    let bx = LoDTensor::dense(Tensor::from_bytes(DType::Bool, Dim::new(&[2, 6]).unwrap(), &[0u8; 12]).unwrap());
    let bu = LoDTensor::new(
        Tensor::from_bytes(DType::Bool, Dim::new(&[3, 1]).unwrap(), &[1u8; 3]).unwrap(),
        Lod::from_lengths(&[vec![2, 1]]).unwrap(),
    )
    .unwrap();
    assert!(matches!(sequence_scatter(&bx, &ids, &bu), Err(Error::Unsupported(m)) if m.contains("bool")));
    // Refused as bool before its ids are read, as on a device, which reads them only in its kernel.
    let bad_ids = ids_tensor(&[0, 1, 9], &[2, 1]);
    assert!(matches!(sequence_scatter(&bx, &bad_ids, &bu), Err(Error::Unsupported(m)) if m.contains("bool")));
    // The safe in-place call refuses memory shared with another tensor; x is unchanged on error.
    let mut shared = x.clone();
    assert!(matches!(sequence_scatter_inplace(&mut shared, &ids, &upd), Err(Error::InvalidArgument(_))));
    let mut own = x.copy().unwrap();
    assert!(sequence_scatter_inplace(&mut own, &ids_tensor(&[0, 1, 9], &[2, 1]), &upd).is_err());
    assert_eq!(chars(&own), [0f32; 12]);
    // The C API's variant writes through shared memory, and refuses to read from what it writes.
    let mut via = x.copy().unwrap();
    let watcher = via.clone();
    unsafe { lodtensor::ops::scatter::sequence_scatter_inplace_shared(&mut via, &ids, &upd).unwrap() };
    assert_eq!(chars(&watcher)[..3], [1., 1., 0.]);
    let self_ids =
        LoDTensor::new(Tensor::from_slice(&[0f32; 3], &[3, 1]).unwrap(), Lod::from_lengths(&[vec![2, 1]]).unwrap())
            .unwrap();
    let mut z = self_ids.copy().unwrap();
    let z_share = z.clone();
    let r = unsafe {
        lodtensor::ops::scatter::sequence_scatter_inplace_shared(&mut z, &ids_tensor(&[0, 0, 0], &[2, 1]), &z_share)
    };
    assert!(matches!(r, Err(Error::InvalidArgument(m)) if m.contains("updates")));
}

/// Random lengths (empty sequences included) of `n` sequences.
fn random_lengths(n: usize, max: usize, seed: u64) -> Vec<usize> {
    let mut s = seed | 1;
    (0..n).map(|_| (xorshift(&mut s) % (max as u64 + 1)) as usize).collect()
}

/// Plain-loop reference of §2.1 on bytes: sequence i of x (rows) written repeat_i times.
fn expand_reference(x: &[u8], row_bytes: usize, x_seqs: &[std::ops::Range<usize>], repeat: &[usize]) -> Vec<u8> {
    let mut out = Vec::new();
    for (s, &r) in x_seqs.iter().zip(repeat) {
        for _ in 0..r {
            out.extend_from_slice(&x[s.start * row_bytes..s.end * row_bytes]);
        }
    }
    out
}

fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut s = seed | 1;
    (0..n).map(|_| xorshift(&mut s) as u8).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::rounds(64) as u32, ..ProptestConfig::default() })]

    #[test]
    fn expand_matches_reference(n in 0usize..40, big in any::<bool>(), seed in any::<u64>(), dt in 0usize..10,
                                with_lod in any::<bool>(), width in 1usize..4) {
        let n = if big { n * 100 } else { n };
        let dtype = DType::ALL[dt];
        let x_lengths = random_lengths(n.max(1), 3, seed);
        let repeat = random_lengths(n.max(1), 3, seed ^ 0x55);
        let (x_seqs, x_rows, x_lod) = if with_lod {
            let l = Lod::from_lengths(std::slice::from_ref(&x_lengths)).unwrap();
            let o = l.level(0).unwrap().to_vec();
            ((0..o.len() - 1).map(|i| o[i]..o[i + 1]).collect::<Vec<_>>(), o[o.len() - 1], l)
        } else {
            ((0..repeat.len()).map(|i| i..i + 1).collect(), repeat.len(), Lod::empty())
        };
        let row_bytes = width * dtype.size();
        let bytes = random_bytes(x_rows * row_bytes, seed);
        let x = LoDTensor::new(Tensor::from_bytes(dtype, Dim::new(&[x_rows, width]).unwrap(), &bytes).unwrap(), x_lod).unwrap();
        // Y: the repeat counts as level 1 under one top sequence (ref_level 1 and -1), and as
        // level 0 above a level of anything (ref_level 0 counts children, not rows).
        let y = y_with(&[&[repeat.len()], &repeat]);
        let want = expand_reference(&bytes, row_bytes, &x_seqs, &repeat);
        for level in [-1i64, 1] {
            let out = sequence_expand(&x, &y, level).unwrap();
            prop_assert_eq!(out.tensor().bytes().unwrap(), want.as_slice());
            if with_lod {
                let lengths: Vec<usize> = x_seqs.iter().zip(&repeat).flat_map(|(s, &r)| std::iter::repeat_n(s.len(), r)).collect();
                if lengths.is_empty() { prop_assert!(out.lod().is_empty()); } else { prop_assert_eq!(out.lod().lengths(), vec![lengths]); }
            } else {
                prop_assert!(out.lod().is_empty());
            }
        }
        let y0 = y_with(&[&repeat, &vec![1; repeat.iter().sum()]]);
        let out0 = sequence_expand(&x, &y0, 0).unwrap();
        prop_assert_eq!(out0.tensor().bytes().unwrap(), want.as_slice());
        // expand_as on a dense view: every row of x once per y row.
        if !with_lod {
            let out = sequence_expand_as(&x, &y_with(&[&repeat])).unwrap();
            prop_assert_eq!(out.tensor().bytes().unwrap(), want.as_slice());
            prop_assert_eq!(out.lod().lengths(), vec![repeat.clone()]);
        }
    }

    #[test]
    fn scatter_matches_reference(n in 1usize..30, width in 1usize..9, seed in any::<u64>(), dt in 0usize..4) {
        let lengths = random_lengths(n, 6, seed);
        let rows = n + (seed % 3) as usize;
        match dt {
            0 => check_scatter::<f32>(rows, width, &lengths, seed),
            1 => check_scatter::<f64>(rows, width, &lengths, seed),
            2 => check_scatter::<i32>(rows, width, &lengths, seed),
            _ => check_scatter::<i64>(rows, width, &lengths, seed),
        }
    }
}

#[test]
fn thousands_of_sequences_and_thread_count_determinism() {
    // > 256 KiB of output so the kernels go parallel.
    let n = 20_000;
    let width = 8;
    let x_lengths = random_lengths(n, 4, 3);
    let repeat = random_lengths(n, 3, 4);
    let x_lod = Lod::from_lengths(std::slice::from_ref(&x_lengths)).unwrap();
    let x_rows = x_lod.rows().unwrap();
    let data: Vec<f32> = (0..x_rows * width).map(|i| i as f32).collect();
    let x = LoDTensor::new(Tensor::from_slice(&data, &[x_rows, width]).unwrap(), x_lod).unwrap();
    let y = y_with(&[&repeat]);
    let dense = LoDTensor::dense(Tensor::from_slice(&data[..n * width], &[n, width]).unwrap());
    let ids_len = random_lengths(n, 30, 5);
    let m: usize = ids_len.iter().sum();
    let mut s = 9u64;
    let ids: Vec<i64> = (0..m).map(|_| (xorshift(&mut s) % width as u64) as i64).collect();
    let upd: Vec<f32> = (0..m).map(|i| (i % 13) as f32 * 0.1).collect();
    let (idt, ut) = (ids_tensor(&ids, &ids_len), updates_tensor(&upd, &ids_len));
    let run = || {
        (
            sequence_expand(&x, &y, -1).unwrap(),
            sequence_expand_as(&dense, &y).unwrap(),
            sequence_scatter(&dense, &idt, &ut).unwrap(),
        )
    };
    let (a, b) = with_1_and_4_threads(run);
    assert!(a.0.tensor().nbytes() > 256 * 1024);
    assert_eq!(a.0.tensor().bytes().unwrap(), b.0.tensor().bytes().unwrap());
    assert_eq!(a.0.lod(), b.0.lod());
    assert_eq!(a.1.tensor().bytes().unwrap(), b.1.tensor().bytes().unwrap());
    assert_eq!(a.2.tensor().bytes().unwrap(), b.2.tensor().bytes().unwrap());
    let x_seqs: Vec<_> = (0..n).map(|i| x.sequence_rows(0, i).unwrap()).collect();
    let want = expand_reference(x.tensor().bytes().unwrap(), width * 4, &x_seqs, &repeat);
    assert_eq!(a.0.tensor().bytes().unwrap(), want.as_slice());
    let offsets = idt.lod().level(0).unwrap().to_vec();
    let want = scatter_reference(&data[..n * width], width, &ids, &offsets, &upd);
    assert_eq!(a.2.tensor().as_slice::<f32>().unwrap(), want.as_slice());
}

/// Batches large enough that the output's offsets are made in many chunks and its rows in many
/// tasks, on 1 and 4 threads: many short sequences copied 0-3 times; a sequence copied far more
/// times than a chunk holds, among sequences copied none; long runs of sequences copied none;
/// sequences longer than a task, so that tasks start inside a copy; copies of 256-byte rows
/// making an output large enough to be written with streaming stores. Each equals the reference.
#[test]
fn expand_of_large_batches_equals_reference() {
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut below = |n: u64| (xorshift(&mut seed) % n) as usize;
    let short: Vec<(usize, usize)> = (0..150_000).map(|_| (below(3), below(4))).collect();
    let mut one_long: Vec<(usize, usize)> = (0..2000).map(|_| (1 + below(2), 0)).collect();
    one_long[700].1 = 300_000;
    one_long[1999].1 = 5;
    let mut none: Vec<(usize, usize)> = (0..200_000).map(|_| (below(2), 0)).collect();
    none[100_000].1 = 2;
    none[150_000].1 = 70_000;
    let long_rows = vec![(40_000, 3), (3, 2), (0, 5), (50_001, 1), (7, 0), (20_000, 2)];
    let wide: Vec<(usize, usize)> = (0..2000).map(|_| (below(21), below(4))).collect();
    let cases = [("short", short, 1), ("one long", one_long, 1), ("none copied", none, 1)];
    for (what, runs, width) in cases.into_iter().chain([("long rows", long_rows, 1), ("wide", wide, 64)]) {
        let (lengths, repeat): (Vec<usize>, Vec<usize>) = runs.into_iter().unzip();
        let x = rows_tensor(lengths.iter().sum(), width, &[&lengths]);
        let y = y_with(&[&repeat]);
        let x_seqs: Vec<_> = (0..lengths.len()).map(|i| x.sequence_rows(0, i).unwrap()).collect();
        let want = expand_reference(x.tensor().bytes().unwrap(), 4 * width, &x_seqs, &repeat);
        let want_lengths: Vec<usize> =
            lengths.iter().zip(&repeat).flat_map(|(&len, &r)| std::iter::repeat_n(len, r)).collect();
        with_1_and_4_threads(|| {
            let got = sequence_expand(&x, &y, 0).unwrap();
            assert!(got.lod().lengths() == [want_lengths.clone()], "{what}: LoD");
            assert!(got.tensor().bytes().unwrap() == want, "{what}: rows");
        });
    }
}
