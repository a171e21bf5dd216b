//! The worked examples of §5 of the semantics spec (TensorArray family), each under the name of
//! the Paddle test or document it comes from, plus property tests against plain references.

mod common;

use common::nested_lengths;
use lodtensor::backend::cpu::pool::set_num_threads;
use lodtensor::{
    array_to_lod_tensor, dynamic_rnn, lod_tensor_to_array, reorder_lod_tensor_by_rank, shrink_rnn_memory,
    tensor_array_to_tensor, unstack, DType, Dim, Error, LoDTensor, Lod, RankItem, RankTable, Tensor, TensorArray,
};
use proptest::prelude::*;

fn lens(levels: &[&[usize]]) -> Vec<Vec<usize>> {
    levels.iter().map(|l| l.to_vec()).collect()
}

/// X of the lod_tensor_array tests: `arange(rows)` as a float32 column, with a length LoD.
fn arange_x(lengths: &[&[usize]]) -> LoDTensor {
    let lod = Lod::from_lengths(&lens(lengths)).unwrap();
    let rows = lod.rows().unwrap();
    let data: Vec<f32> = (0..rows).map(|i| i as f32).collect();
    LoDTensor::new(Tensor::from_slice(&data, &[rows, 1]).unwrap(), lod).unwrap()
}

fn values(t: &LoDTensor) -> Vec<f32> {
    t.tensor().as_slice::<f32>().unwrap().to_vec()
}

/// `a..=b` as floats, for writing the spec's `a..b` (inclusive) ranges.
fn r(a: usize, b: usize) -> Vec<f32> {
    (a..=b).map(|i| i as f32).collect()
}

fn cat(parts: &[Vec<f32>]) -> Vec<f32> {
    parts.concat()
}

fn v(xs: &[usize]) -> Vec<f32> {
    xs.iter().map(|&x| x as f32).collect()
}

/// Unpacks, compares every step with `(values, lengths)`, and checks the round trip.
fn check_unpack(x: &LoDTensor, level: usize, max_len: usize, expected: &[(Vec<f32>, Vec<Vec<usize>>)]) {
    let table = RankTable::from_lod_tensor(x, level).unwrap();
    assert_eq!(table.max_sequence_len(), max_len);
    let array = lod_tensor_to_array(x, &table).unwrap();
    assert_eq!(array.len(), max_len);
    for (t, (vals, lengths)) in expected.iter().enumerate() {
        let step = array.get(t).unwrap();
        assert_eq!(&values(step), vals, "step {t}");
        assert_eq!(&step.lod().lengths(), lengths, "step {t}");
        assert_eq!(step.dims().as_slice(), &[vals.len(), 1], "step {t}");
    }
    let back = array_to_lod_tensor(&array, &table).unwrap();
    assert_eq!(back.lod(), x.lod());
    assert_eq!(back.dims(), x.dims());
    assert_eq!(values(&back), values(x));
}

// §5.3, test_lod_tensor_array_ops.py: level_0.
#[test]
fn lod_tensor_to_array_level_0() {
    let x = arange_x(&[&[3, 6, 1]]);
    let e = [v(&[3, 0, 9]), v(&[4, 1]), v(&[5, 2]), v(&[6]), v(&[7]), v(&[8])];
    let expected: Vec<_> = e.iter().map(|s| (s.clone(), vec![])).collect();
    check_unpack(&x, 0, 6, &expected);
}

// §5.3: level_0_empty_seq.
#[test]
fn lod_tensor_to_array_level_0_empty_seq() {
    let x = arange_x(&[&[3, 6, 0, 1]]);
    let e = [v(&[3, 0, 9]), v(&[4, 1]), v(&[5, 2]), v(&[6]), v(&[7]), v(&[8])];
    let expected: Vec<_> = e.iter().map(|s| (s.clone(), vec![])).collect();
    check_unpack(&x, 0, 6, &expected);
}

// §5.3: level_1 (and its trace).
#[test]
fn lod_tensor_to_array_level_1() {
    let x = arange_x(&[&[2, 3], &[3, 6, 2, 6, 3]]);
    let expected = [
        (v(&[9, 10, 0, 1, 2]), lens(&[&[2, 3]])),
        (cat(&[r(11, 16), r(3, 8)]), lens(&[&[6, 6]])),
        (v(&[17, 18, 19]), lens(&[&[3]])),
    ];
    check_unpack(&x, 0, 3, &expected);
}

// §5.3: level_1_empty_seq.
#[test]
fn lod_tensor_to_array_level_1_empty_seq() {
    let x = arange_x(&[&[3, 2, 4, 2], &[3, 4, 4, 0, 1, 5, 2, 2, 2, 7, 1]]);
    let expected = [
        (cat(&[r(12, 16), r(0, 2), r(23, 29)]), lens(&[&[5, 3, 0, 7]])),
        (cat(&[v(&[17, 18]), r(3, 6), v(&[11, 30])]), lens(&[&[2, 4, 1, 1]])),
        (cat(&[v(&[19, 20]), r(7, 10)]), lens(&[&[2, 4]])),
        (v(&[21, 22]), lens(&[&[2]])),
    ];
    check_unpack(&x, 0, 4, &expected);
}

// §5.3: level_2.
#[test]
fn lod_tensor_to_array_level_2() {
    let x = arange_x(&[&[2, 3, 1], &[2, 3, 1, 4, 2, 1], &[3, 4, 4, 6, 4, 1, 1, 4, 4, 8, 6, 1, 4]]);
    let expected = [
        (cat(&[v(&[21]), r(0, 6), r(46, 49)]), lens(&[&[1, 2, 1], &[1, 3, 4, 4]])),
        (cat(&[r(22, 38), r(7, 20)]), lens(&[&[4, 3], &[1, 4, 4, 8, 4, 6, 4]])),
        (r(39, 45), lens(&[&[2], &[6, 1]])),
    ];
    check_unpack(&x, 0, 3, &expected);
}

// §5.3: level_2_skip_level (arrays not checked by Paddle; max_len and the round trip are).
#[test]
fn lod_tensor_to_array_level_2_skip_level() {
    let x = arange_x(&[&[2, 3, 1], &[2, 3, 1, 4, 2, 1], &[3, 4, 4, 6, 4, 1, 1, 4, 4, 8, 6, 1, 4]]);
    let table = RankTable::from_lod_tensor(&x, 1).unwrap();
    assert_eq!(table.max_sequence_len(), 4);
    assert_eq!(table.coarse_lod(), &[vec![0, 2, 5, 6]]);
    let array = lod_tensor_to_array(&x, &table).unwrap();
    assert_eq!(array.len(), 4);
    // Step 3: only the length-4 sequence (index 3 of level 1), its 4th child = level-2 entry 9.
    assert_eq!(values(array.get(3).unwrap()), r(31, 38));
    assert_eq!(array.get(3).unwrap().lod().lengths(), lens(&[&[8]]));
    let back = array_to_lod_tensor(&array, &table).unwrap();
    assert_eq!(back.lod(), x.lod());
    assert_eq!(values(&back), values(&x));
}

// Ranking the last level: elements are rows without LoD.
#[test]
fn lod_tensor_to_array_last_level() {
    let x = arange_x(&[&[2, 1], &[1, 3, 2]]);
    let table = RankTable::from_lod_tensor(&x, 1).unwrap();
    let array = lod_tensor_to_array(&x, &table).unwrap();
    assert_eq!(array.len(), 3);
    assert_eq!(values(array.get(0).unwrap()), v(&[1, 4, 0]));
    assert!(array.get(0).unwrap().lod().is_empty());
    assert_eq!(values(array.get(2).unwrap()), v(&[3]));
    let back = array_to_lod_tensor(&array, &table).unwrap();
    assert_eq!(back.lod(), x.lod());
    assert_eq!(values(&back), values(&x));
}

// §5.1, test_lod_rank_table.py.
#[test]
fn lod_rank_table() {
    let x = arange_x(&[&[1, 2], &[5, 1, 1], &[3, 1, 5, 1, 3, 3, 1]]);
    let table = RankTable::from_lod_tensor(&x, 1).unwrap();
    let items: Vec<(usize, usize)> = table.items().iter().map(|i| (i.index, i.length)).collect();
    assert_eq!(items, [(0, 5), (1, 1), (2, 1)]);
    assert_eq!(table.level(), 1);
    assert_eq!(table.coarse_lod(), &[vec![0, 1, 3]]);
    assert_eq!(table.max_sequence_len(), 5);
    assert_eq!(table.items()[0], RankItem { index: 0, length: 5 });
    // Level 0 counts entries of level 1; stable for equal lengths.
    let t0 = RankTable::from_lod_tensor(&arange_x(&[&[2, 3, 2], &[1; 7]]), 0).unwrap();
    let items: Vec<(usize, usize)> = t0.items().iter().map(|i| (i.index, i.length)).collect();
    assert_eq!(items, [(1, 3), (0, 2), (2, 2)]);
    // The level must exist (so X needs a LoD).
    assert!(matches!(RankTable::from_lod_tensor(&x, 3), Err(Error::InvalidArgument(_))));
    let dense = LoDTensor::dense(Tensor::from_slice(&[1f32], &[1]).unwrap());
    assert!(matches!(RankTable::from_lod_tensor(&dense, 0), Err(Error::InvalidArgument(_))));
}

// §5.2 and §5.3 Our rules: an empty table has max length 0 and unpacks to an empty array; an
// empty array does not pack (no dtype or shape to build from).
#[test]
fn empty_table() {
    let x = LoDTensor::new(
        Tensor::zeros(DType::F32, Dim::new(&[0, 3]).unwrap()).unwrap(),
        Lod::from_offsets(vec![vec![0, 0], vec![0]]).unwrap(),
    )
    .unwrap();
    let table = RankTable::from_lod_tensor(&x, 1).unwrap();
    assert!(table.is_empty());
    assert_eq!(table.max_sequence_len(), 0);
    let array = lod_tensor_to_array(&x, &table).unwrap();
    assert!(array.is_empty());
    assert!(matches!(array_to_lod_tensor(&array, &table), Err(Error::InvalidArgument(_))));
}

// §5.3: the table must rank x's own sequences (Our rule: Paddle trusts it).
#[test]
fn unpack_rejects_a_foreign_table() {
    let x = arange_x(&[&[3, 6, 1]]);
    let other = RankTable::from_lod_tensor(&arange_x(&[&[3, 5, 2]]), 0).unwrap();
    assert!(matches!(lod_tensor_to_array(&x, &other), Err(Error::InvalidArgument(_))));
    let fewer = RankTable::from_lod_tensor(&arange_x(&[&[3, 6]]), 0).unwrap();
    assert!(matches!(lod_tensor_to_array(&x, &fewer), Err(Error::InvalidArgument(_))));
    // Same lengths from another tensor is fine (one table drives several inputs).
    let same = RankTable::from_lod_tensor(&arange_x(&[&[3, 6, 1]]), 0).unwrap();
    assert!(lod_tensor_to_array(&x, &same).is_ok());
    let deep = RankTable::from_lod_tensor(&arange_x(&[&[1], &[3]]), 1).unwrap();
    assert!(matches!(lod_tensor_to_array(&x, &deep), Err(Error::InvalidArgument(_))));
}

// §5.4 errors.
#[test]
fn array_to_lod_tensor_errors() {
    let x = arange_x(&[&[3, 6, 1]]);
    let table = RankTable::from_lod_tensor(&x, 0).unwrap();
    let array = lod_tensor_to_array(&x, &table).unwrap();
    let items = array.clone().into_vec();
    // Too few elements for the longest sequence.
    let five = TensorArray::from_vec(items[..5].to_vec());
    assert!(matches!(array_to_lod_tensor(&five, &table), Err(Error::InvalidArgument(_))));
    // Another dtype.
    let mut wrong = array.clone();
    wrong.write(2, LoDTensor::dense(Tensor::from_slice(&[1i32, 2], &[2, 1]).unwrap())).unwrap();
    assert!(matches!(array_to_lod_tensor(&wrong, &table), Err(Error::InvalidArgument(_))));
    // Another row shape.
    let mut wrong = array.clone();
    wrong.write(2, LoDTensor::dense(Tensor::from_slice(&[1f32, 2.], &[1, 2]).unwrap())).unwrap();
    assert!(matches!(array_to_lod_tensor(&wrong, &table), Err(Error::InvalidArgument(_))));
    // Wrong unit count at a step.
    let mut wrong = array.clone();
    wrong.write(1, LoDTensor::dense(Tensor::from_slice(&[1f32, 2., 3.], &[3, 1]).unwrap())).unwrap();
    assert!(matches!(array_to_lod_tensor(&wrong, &table), Err(Error::InvalidArgument(_))));
    // Another number of LoD levels.
    let mut wrong = array.clone();
    wrong.write(1, LoDTensor::from_slice(&[1f32, 2.], &[2, 1], vec![vec![0, 1, 2]]).unwrap()).unwrap();
    assert!(matches!(array_to_lod_tensor(&wrong, &table), Err(Error::InvalidLod(_))));
    // Extra elements past the longest length are not read.
    let mut longer = array.clone();
    longer.push(LoDTensor::dense(Tensor::from_slice(&[7f32; 4], &[4, 1]).unwrap()));
    assert_eq!(values(&array_to_lod_tensor(&longer, &table).unwrap()), values(&x));
    // 1-D elements give a 1-D result (Our rule: Paddle gives [N, 0]).
    let flat = TensorArray::from_vec(
        array
            .as_slice()
            .iter()
            .map(|e| LoDTensor::dense(Tensor::from_slice(&values(e), &[e.dims().as_slice()[0]]).unwrap()))
            .collect(),
    );
    let packed = array_to_lod_tensor(&flat, &table).unwrap();
    assert_eq!(packed.dims().as_slice(), &[10]);
    assert_eq!(values(&packed), values(&x));
}

// §5.5, test_shrink_rnn_memory.py.
#[test]
fn shrink_rnn_memory_sequence() {
    let table = RankTable::new(&Lod::from_lengths(&lens(&[&[1, 2, 3]])).unwrap(), 0).unwrap();
    let items: Vec<(usize, usize)> = table.items().iter().map(|i| (i.index, i.length)).collect();
    assert_eq!(items, [(2, 3), (1, 2), (0, 1)]);
    let x = arange_x(&[&[2, 3, 1]]);
    let mem1 = shrink_rnn_memory(&x, &table, 0).unwrap();
    assert_eq!(values(&mem1), r(0, 5));
    assert_eq!(mem1.lod().levels(), &[vec![0, 2, 5, 6]]);
    let mem2 = shrink_rnn_memory(&mem1, &table, 1).unwrap();
    assert_eq!(values(&mem2), r(0, 4));
    assert_eq!(mem2.lod().levels(), &[vec![0, 2, 5]]);
    let mem3 = shrink_rnn_memory(&mem2, &table, 2).unwrap();
    assert_eq!(values(&mem3), r(0, 1));
    assert_eq!(mem3.lod().levels(), &[vec![0, 2]]);
    assert!(mem3.tensor().shares_memory_with(x.tensor()));
    // Without LoD: rows.
    let dense = LoDTensor::dense(Tensor::from_slice(&[0f32, 1., 2.], &[3, 1]).unwrap());
    for (step, rows) in [(0, 3), (1, 2), (2, 1), (3, 0)] {
        let m = shrink_rnn_memory(&dense, &table, step).unwrap();
        assert_eq!(m.dims().as_slice(), &[rows, 1]);
        assert!(m.lod().is_empty());
    }
    // n == 0 with a LoD: a 0-row tensor without LoD (Our rule).
    let none = shrink_rnn_memory(&x, &table, 3).unwrap();
    assert_eq!(none.dims().as_slice(), &[0, 1]);
    assert!(none.lod().is_empty());
    // Fewer sequences than live ones: InvalidArgument (Our rule), also for too few rows.
    let two = arange_x(&[&[2, 3]]);
    assert!(matches!(shrink_rnn_memory(&two, &table, 0), Err(Error::InvalidArgument(_))));
    assert!(shrink_rnn_memory(&two, &table, 1).is_ok());
    let one_row = LoDTensor::dense(Tensor::from_slice(&[0f32], &[1, 1]).unwrap());
    assert!(matches!(shrink_rnn_memory(&one_row, &table, 0), Err(Error::InvalidArgument(_))));
}

/// A rank table whose order is `perm` (built from lengths that sort that way).
fn table_for(perm: &[usize]) -> RankTable {
    let n = perm.len();
    let mut lengths = vec![0; n];
    for (k, &p) in perm.iter().enumerate() {
        lengths[p] = n - k;
    }
    let t = RankTable::new(&Lod::from_lengths(&[lengths]).unwrap(), 0).unwrap();
    assert_eq!(t.items().iter().map(|i| i.index).collect::<Vec<_>>(), perm);
    t
}

// §5.6, the doc example of reorder_lod_tensor_by_rank.
#[test]
fn reorder_doc_example() {
    let table = table_for(&[3, 0, 2, 1]);
    // Two levels: 4 top-level sequences of 1, 2, 0, 1 sub-sequences.
    let x = arange_x(&[&[1, 2, 0, 1], &[2, 1, 3, 2]]);
    let out = reorder_lod_tensor_by_rank(&x, &table).unwrap();
    assert_eq!(out.lod().lengths(), lens(&[&[1, 1, 0, 2], &[2, 2, 1, 3]]));
    assert_eq!(values(&out), cat(&[r(6, 7), r(0, 1), r(2, 5)]));
    // Without LoD, rows; an all-ones LoD gives the same data.
    let dense = LoDTensor::dense(Tensor::from_slice(&[0f32, 1., 2., 3.], &[4, 1]).unwrap());
    assert_eq!(values(&reorder_lod_tensor_by_rank(&dense, &table).unwrap()), v(&[3, 0, 2, 1]));
    let ones = arange_x(&[&[1, 1, 1, 1]]);
    let o = reorder_lod_tensor_by_rank(&ones, &table).unwrap();
    assert_eq!(values(&o), v(&[3, 0, 2, 1]));
    assert_eq!(o.lod().lengths(), lens(&[&[1, 1, 1, 1]]));
    // The indices must be a permutation of x's units (Our rule).
    let three = LoDTensor::dense(Tensor::from_slice(&[0f32, 1., 2.], &[3, 1]).unwrap());
    assert!(matches!(reorder_lod_tensor_by_rank(&three, &table), Err(Error::InvalidArgument(_))));
}

// §5.7: write/read, test_while_loop_case, read past the end.
#[test]
fn write_read_while_loop_case() {
    let data: Vec<f32> = (0..24).map(|i| i as f32 * 0.5).collect();
    let x = LoDTensor::dense(Tensor::from_slice(&data, &[2, 3, 4]).unwrap());
    let mut array = TensorArray::new();
    array.write(0, x.copy().unwrap()).unwrap();
    for i in 1..10 {
        let prev = array.read(i - 1).unwrap();
        array.write(i, prev.copy().unwrap()).unwrap();
    }
    assert_eq!(array.len(), 10);
    assert_eq!(values(&array.read_copy(9).unwrap()), data);
    assert_eq!(array.get(9).unwrap().dims(), x.dims());
    assert!(matches!(array.read(10), Err(Error::OutOfRange(_))));
    assert!(matches!(array.get(usize::MAX), Err(Error::OutOfRange(_))));
    // Growing past the end leaves 0-row slots of the written tensor's dtype and row shape.
    array.write(12, x.clone()).unwrap();
    assert_eq!(array.len(), 13);
    assert_eq!(array.get(11).unwrap().dims().as_slice(), &[0, 3, 4]);
    assert!(array.get(12).unwrap().tensor().shares_memory_with(x.tensor()));
    assert!(!array.read_copy(12).unwrap().tensor().shares_memory_with(x.tensor()));
    assert!(array.write(usize::MAX, x.clone()).is_err());
    array.clear();
    assert!(array.is_empty());
}

fn f32_tensor(data: &[f32], dims: &[usize]) -> LoDTensor {
    LoDTensor::dense(Tensor::from_slice(data, dims).unwrap())
}

// §5.8, test_tensor_array_to_tensor.py and the op's doc.
#[test]
fn tensor_array_to_tensor_examples() {
    // Doc case 1: concat along axis 1.
    let a = TensorArray::from_vec(vec![
        f32_tensor(&[0.6, 0.1, 0.3, 0.5, 0.3, 0.2], &[2, 3]),
        f32_tensor(&[1.3, 1.8], &[2, 1]),
        f32_tensor(&[2.3, 2.1, 2.5, 2.4], &[2, 2]),
    ]);
    for axis in [1, -1] {
        let (out, sizes) = tensor_array_to_tensor(&a, axis, false).unwrap();
        assert_eq!(out.dims().as_slice(), &[2, 6]);
        assert_eq!(values(&out), [0.6, 0.1, 0.3, 1.3, 2.3, 2.1, 0.5, 0.3, 0.2, 1.8, 2.5, 2.4]);
        assert_eq!(sizes, [3, 1, 2]);
    }
    // Doc case 2: three 2x2 stacked along axis 1.
    let b = TensorArray::from_vec(vec![
        f32_tensor(&[1., 2., 3., 4.], &[2, 2]),
        f32_tensor(&[5., 6., 7., 8.], &[2, 2]),
        f32_tensor(&[9., 10., 11., 12.], &[2, 2]),
    ]);
    let (out, sizes) = tensor_array_to_tensor(&b, 1, true).unwrap();
    assert_eq!(out.dims().as_slice(), &[2, 3, 2]);
    assert_eq!(values(&out), [1., 2., 5., 6., 9., 10., 3., 4., 7., 8., 11., 12.]);
    assert_eq!(sizes, [2, 2, 2]);
    // Stacking at the end (axis == ndim, or -1): sizes are 1.
    let (out, sizes) = tensor_array_to_tensor(&b, -1, true).unwrap();
    assert_eq!(out.dims().as_slice(), &[2, 2, 3]);
    assert_eq!(values(&out)[..3], [1., 5., 9.]);
    assert_eq!(sizes, [1, 1, 1]);
    // TestPirArrayOp.test_array.
    let c = TensorArray::from_vec(vec![f32_tensor(&[5.; 3], &[1, 3]), f32_tensor(&[6.; 3], &[1, 3])]);
    let (out, sizes) = tensor_array_to_tensor(&c, 1, false).unwrap();
    assert_eq!(values(&out), [5., 5., 5., 6., 6., 6.]);
    assert_eq!(sizes, [3, 3]);
    // test_array_stack_backward: two [1,4] stacked along axis 0.
    let d = TensorArray::from_vec(vec![f32_tensor(&[5.; 4], &[1, 4]), f32_tensor(&[6.; 4], &[1, 4])]);
    let (out, _) = tensor_array_to_tensor(&d, 0, true).unwrap();
    assert_eq!(out.dims().as_slice(), &[2, 1, 4]);
    assert_eq!(values(&out), [5., 5., 5., 5., 6., 6., 6., 6.]);
    // Unstack undoes stack.
    let parts = unstack(&out, 0).unwrap();
    assert_eq!(parts.len(), 2);
    assert_eq!(parts.get(1).unwrap().dims().as_slice(), &[1, 4]);
    assert_eq!(values(parts.get(1).unwrap()), [6.; 4]);
    let (out, _) = tensor_array_to_tensor(&b, 1, true).unwrap();
    let parts = unstack(&out, -2).unwrap();
    for i in 0..3 {
        assert_eq!(values(parts.get(i).unwrap()), values(b.get(i).unwrap()));
    }
    // Errors.
    assert!(matches!(tensor_array_to_tensor(&TensorArray::new(), 0, false), Err(Error::InvalidArgument(_))));
    assert!(matches!(tensor_array_to_tensor(&a, 2, false), Err(Error::InvalidArgument(_))));
    assert!(matches!(tensor_array_to_tensor(&a, -3, false), Err(Error::InvalidArgument(_))));
    assert!(matches!(tensor_array_to_tensor(&a, 0, false), Err(Error::InvalidArgument(_))));
    assert!(matches!(tensor_array_to_tensor(&a, 1, true), Err(Error::InvalidArgument(_))));
    assert!(matches!(tensor_array_to_tensor(&b, 3, true), Err(Error::InvalidArgument(_))));
    let mixed = TensorArray::from_vec(vec![
        f32_tensor(&[1.], &[1]),
        LoDTensor::dense(Tensor::from_slice(&[1i32], &[1]).unwrap()),
    ]);
    assert!(matches!(tensor_array_to_tensor(&mixed, 0, false), Err(Error::InvalidArgument(_))));
    let scalar = TensorArray::from_vec(vec![LoDTensor::dense(Tensor::from_slice(&[1f32], &[]).unwrap()); 3]);
    assert!(matches!(tensor_array_to_tensor(&scalar, 0, false), Err(Error::InvalidArgument(_))));
    let (stacked, _) = tensor_array_to_tensor(&scalar, 0, true).unwrap();
    assert_eq!(stacked.dims().as_slice(), &[3]);
    assert!(matches!(unstack(&scalar.get(0).unwrap().clone(), 0), Err(Error::InvalidArgument(_))));
    assert!(matches!(unstack(&out, 3), Err(Error::InvalidArgument(_))));
}

/// A per-sequence reference of a tiny RNN over the last LoD level: h = 0.5 h + x (row-wise,
/// width w); output = h.
fn rnn_reference(x: &LoDTensor, init: &[f32], w: usize) -> Vec<f32> {
    let data = values(x);
    let mut out = vec![0f32; data.len()];
    let offsets = x.lod().levels().last().unwrap();
    for s in 0..offsets.len() - 1 {
        let mut h = init[s * w..(s + 1) * w].to_vec();
        for row in offsets[s]..offsets[s + 1] {
            for c in 0..w {
                h[c] = 0.5 * h[c] + data[row * w + c];
                out[row * w + c] = h[c];
            }
        }
    }
    out
}

fn rnn_step(_: usize, input: &LoDTensor, prev: &LoDTensor) -> lodtensor::Result<(LoDTensor, LoDTensor)> {
    let (xi, hp) = (values(input), values(prev));
    let h: Vec<f32> = xi.iter().zip(&hp).map(|(x, h)| 0.5 * h + x).collect();
    let t = LoDTensor::dense(Tensor::from_slice(&h, input.dims().as_slice())?);
    Ok((t.clone(), t))
}

#[test]
fn dynamic_rnn_matches_a_per_sequence_loop() {
    let w = 3;
    let lengths = [4usize, 0, 7, 1, 3];
    let rows: usize = lengths.iter().sum();
    let data: Vec<f32> = (0..rows * w).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
    let x =
        LoDTensor::new(Tensor::from_slice(&data, &[rows, w]).unwrap(), Lod::from_lengths(&[lengths.to_vec()]).unwrap())
            .unwrap();
    let init: Vec<f32> = (0..lengths.len() * w).map(|i| i as f32).collect();
    let init_t = f32_tensor(&init, &[lengths.len(), w]);
    let mut calls = 0;
    let out = dynamic_rnn(&x, 0, &init_t, |_, i, p| {
        calls += 1;
        rnn_step(0, i, p)
    })
    .unwrap();
    assert_eq!(calls, 7);
    assert_eq!(out.lod(), x.lod());
    assert_eq!(values(&out), rnn_reference(&x, &init, w));

    // Ranking the last level of a 2-level LoD: the output keeps the level above (coarse LoD).
    let x2 =
        LoDTensor::new(x.tensor().clone(), Lod::from_lengths(&[vec![2, 0, 3], lengths.to_vec()]).unwrap()).unwrap();
    let out2 = dynamic_rnn(&x2, 1, &init_t, rnn_step).unwrap();
    assert_eq!(out2.lod(), x2.lod());
    assert_eq!(values(&out2), rnn_reference(&x2, &init, w));

    // A failing step stops the loop and its error comes back.
    let mut calls = 0;
    let e = dynamic_rnn(&x, 0, &init_t, |t, i, p| {
        calls += 1;
        if t == 2 {
            return Err(Error::CallbackFailed("stop".into()));
        }
        rnn_step(0, i, p)
    })
    .unwrap_err();
    assert_eq!(calls, 3);
    assert!(matches!(e, Error::CallbackFailed(_)));
    // A step result with the wrong row count.
    let e = dynamic_rnn(&x, 0, &init_t, |_, i, _| Ok((i.clone(), f32_tensor(&[0.; 3], &[1, 3])))).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(ref m) if m.contains("new state")), "{e}");
    // An initial state without one row per sequence.
    let e = dynamic_rnn(&x, 0, &f32_tensor(&[0.; 3], &[1, 3]), rnn_step).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(ref m) if m.starts_with("init_state")), "{e}");
    // Every sequence empty: the step never runs, the output's shape is unknown.
    let empty = LoDTensor::new(
        Tensor::zeros(DType::F32, Dim::new(&[0, 3]).unwrap()).unwrap(),
        Lod::from_lengths(&[vec![0, 0]]).unwrap(),
    )
    .unwrap();
    assert!(matches!(dynamic_rnn(&empty, 0, &f32_tensor(&[0.; 6], &[2, 3]), rnn_step), Err(Error::InvalidArgument(_))));
}

// ------------------------------------------------------------------------------------------------
// Property tests
// ------------------------------------------------------------------------------------------------

/// A tensor of `dtype` with rows of `width` elements holding pseudo-random bytes.
fn random_tensor(lod: Lod, dtype: DType, width: usize, seed: u64) -> LoDTensor {
    let rows = lod.rows().unwrap();
    let n = rows * width * dtype.size();
    let mut s = seed | 1;
    let mut bytes = vec![0u8; n];
    for b in bytes.iter_mut() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        *b = s as u8;
    }
    if dtype == DType::Bool {
        bytes.iter_mut().for_each(|b| *b &= 1);
    }
    let t = Tensor::from_bytes(dtype, Dim::new(&[rows, width]).unwrap(), &bytes).unwrap();
    LoDTensor::new(t, lod).unwrap()
}

fn bytes(t: &LoDTensor) -> Vec<u8> {
    t.tensor().bytes().unwrap().to_vec()
}

/// Paddle's algorithm for step `t`, literally: GetSubLoDAndAbsoluteOffset + AppendLoD per item.
fn reference_step(x: &LoDTensor, table: &RankTable, t: usize) -> (Vec<u8>, Vec<Vec<usize>>) {
    let r = table.level();
    let lod = x.lod();
    let row_bytes = x.tensor().row_bytes();
    let src = x.tensor().bytes().unwrap();
    let mut data = Vec::new();
    let mut out_lod: Vec<Vec<usize>> = Vec::new();
    for item in table.items() {
        if item.length <= t {
            break;
        }
        let c = lod.levels()[r][item.index] + t;
        let (lengths, rows) = lod.sub_lod_and_abs_offset(c, c + 1, r + 1).unwrap();
        lodtensor::append_lod(&mut out_lod, &lengths).unwrap();
        data.extend_from_slice(&src[rows.start * row_bytes..rows.end * row_bytes]);
    }
    (data, out_lod)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn unpack_matches_paddle_and_pack_inverts_it(
        lengths in nested_lengths(12, 4),
        level_pick in 0usize..4,
        dtype_pick in 0usize..10,
        width in 0usize..3,
        seed in any::<u64>(),
    ) {
        let lod = Lod::from_lengths(&lengths).unwrap();
        let level = level_pick % lod.num_levels();
        let dtype = DType::ALL[dtype_pick];
        let x = random_tensor(lod, dtype, width, seed);
        let table = RankTable::from_lod_tensor(&x, level).unwrap();
        let array = lod_tensor_to_array(&x, &table).unwrap();
        prop_assert_eq!(array.len(), table.max_sequence_len());
        for t in 0..array.len() {
            let (data, lod) = reference_step(&x, &table, t);
            let step = array.get(t).unwrap();
            prop_assert_eq!(bytes(step), data);
            prop_assert_eq!(step.lod().levels(), lod.as_slice());
            prop_assert_eq!(step.tensor().dtype(), dtype);
        }
        if array.is_empty() {
            prop_assert!(array_to_lod_tensor(&array, &table).is_err());
        } else {
            let back = array_to_lod_tensor(&array, &table).unwrap();
            prop_assert_eq!(back.lod(), x.lod());
            prop_assert_eq!(back.dims(), x.dims());
            prop_assert_eq!(bytes(&back), bytes(&x));
        }
    }

    #[test]
    fn reorder_by_permutation_then_inverse_is_identity(
        lengths in nested_lengths(40, 3),
        shuffle in any::<u64>(),
        dtype_pick in 0usize..10,
        dense in any::<bool>(),
    ) {
        let mut x = random_tensor(Lod::from_lengths(&lengths).unwrap(), DType::ALL[dtype_pick], 2, shuffle);
        if dense {
            x.clear_lod();
        }
        let n = if dense { x.dims().as_slice()[0] } else { lengths[0].len() };
        prop_assume!(n > 0);
        let mut perm: Vec<usize> = (0..n).collect();
        let mut s = shuffle | 1;
        for i in (1..n).rev() {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            perm.swap(i, (s % (i as u64 + 1)) as usize);
        }
        let mut inverse = vec![0; n];
        for (k, &p) in perm.iter().enumerate() {
            inverse[p] = k;
        }
        let once = reorder_lod_tensor_by_rank(&x, &table_for(&perm)).unwrap();
        // Unit k of `once` is unit perm[k] of x: check against a plain slice of x.
        for (k, &p) in perm.iter().enumerate().take(5) {
            let (a, b) = if dense { (p..p + 1, k..k + 1) } else { (x.sequence_rows(0, p).unwrap(), once.sequence_rows(0, k).unwrap()) };
            let rb = x.tensor().row_bytes();
            prop_assert_eq!(&bytes(&x)[a.start * rb..a.end * rb], &bytes(&once)[b.start * rb..b.end * rb]);
        }
        let back = reorder_lod_tensor_by_rank(&once, &table_for(&inverse)).unwrap();
        prop_assert_eq!(back.lod(), x.lod());
        prop_assert_eq!(bytes(&back), bytes(&x));
    }

    #[test]
    fn concat_and_stack_match_a_plain_loop(
        n in 1usize..5,
        d0 in 0usize..4,
        d1 in 1usize..4,
        axis_pick in 0usize..3,
        seed in any::<u64>(),
    ) {
        // Concat along axis 1 of [d0, k_i] pieces; stack along axis_pick of [d0, d1] pieces.
        let pieces: Vec<LoDTensor> = (0..n).map(|i| {
            let k = (i % 3) + 1;
            let data: Vec<i32> = (0..d0 * k).map(|j| (seed as i32).wrapping_add((i * 1000 + j) as i32)).collect();
            LoDTensor::dense(Tensor::from_slice(&data, &[d0, k]).unwrap())
        }).collect();
        let (out, sizes) = tensor_array_to_tensor(&TensorArray::from_vec(pieces.clone()), 1, false).unwrap();
        let mut expected = Vec::new();
        for r in 0..d0 {
            for p in &pieces {
                let k = p.dims().as_slice()[1];
                expected.extend_from_slice(&p.tensor().as_slice::<i32>().unwrap()[r * k..(r + 1) * k]);
            }
        }
        prop_assert_eq!(out.tensor().as_slice::<i32>().unwrap(), expected.as_slice());
        prop_assert_eq!(sizes, pieces.iter().map(|p| p.dims().as_slice()[1]).collect::<Vec<_>>());

        let same: Vec<LoDTensor> = (0..n).map(|i| {
            let data: Vec<i32> = (0..d0 * d1).map(|j| (i * 1000 + j) as i32).collect();
            LoDTensor::dense(Tensor::from_slice(&data, &[d0, d1]).unwrap())
        }).collect();
        let (stacked, _) = tensor_array_to_tensor(&TensorArray::from_vec(same.clone()), axis_pick as i64, true).unwrap();
        let mut dims = vec![d0, d1];
        dims.insert(axis_pick, n);
        prop_assert_eq!(stacked.dims().as_slice(), dims.as_slice());
        let got = stacked.tensor().as_slice::<i32>().unwrap();
        for (i, p) in same.iter().enumerate() {
            let src = p.tensor().as_slice::<i32>().unwrap();
            for a in 0..d0 {
                for b in 0..d1 {
                    let idx = [a, b];
                    let flat = match axis_pick {
                        0 => (i * d0 + a) * d1 + b,
                        1 => (a * n + i) * d1 + b,
                        _ => (a * d1 + b) * n + i,
                    };
                    prop_assert_eq!(got[flat], src[idx[0] * d1 + idx[1]]);
                }
            }
        }
        let parts = unstack(&stacked, axis_pick as i64).unwrap();
        prop_assert_eq!(parts.len(), n);
        for (i, p) in same.iter().enumerate() {
            prop_assert_eq!(parts.get(i).unwrap().tensor().as_slice::<i32>().unwrap(), p.tensor().as_slice::<i32>().unwrap());
        }
    }
}

/// unstack of parts whose rows are 1 KiB or more, which are gathered many parts at a time (2100
/// parts of 32 rows of 1 KiB: more parts than one batch of ranges holds), of one row a part, and
/// of rows of one element, equals the parts read element by element.
#[test]
fn unstack_equals_the_parts_element_by_element() {
    for (dims, axis) in [([32usize, 2100, 256], 1usize), ([300, 4, 256], 0), ([3, 5, 300], 2)] {
        let n: usize = dims.iter().product();
        let x: Vec<i32> = (0..n as i32).map(|v| v.wrapping_mul(2_654_435_761u32 as i32)).collect();
        let parts = unstack(&LoDTensor::dense(Tensor::from_slice(&x, &dims).unwrap()), axis as i64).unwrap();
        assert_eq!(parts.len(), dims[axis]);
        let mut want: Vec<Vec<i32>> = vec![vec![]; dims[axis]];
        for (flat, &v) in x.iter().enumerate() {
            let idx = [flat / (dims[1] * dims[2]), flat / dims[2] % dims[1], flat % dims[2]];
            want[idx[axis]].push(v);
        }
        let part_dims: Vec<usize> = (0..3).filter(|&k| k != axis).map(|k| dims[k]).collect();
        for (i, w) in want.iter().enumerate() {
            let got = parts.get(i).unwrap();
            assert_eq!(got.dims().as_slice(), part_dims.as_slice(), "{dims:?} axis {axis}, part {i}");
            assert!(got.tensor().as_slice::<i32>().unwrap() == &w[..], "{dims:?} axis {axis}, part {i}");
        }
    }
}

/// Thousands of sequences and > 256 KiB of output: the parallel path gives the same bytes as one
/// thread.
#[test]
fn large_inputs_are_identical_with_1_and_4_threads() {
    let mut s = 12345u64;
    let mut next = |n: u64| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s % n) as usize
    };
    let top: Vec<usize> = (0..3000).map(|_| next(6)).collect();
    let below: Vec<usize> = (0..top.iter().sum::<usize>()).map(|_| next(9)).collect();
    let lod = Lod::from_lengths(&[top.clone(), below]).unwrap();
    let x = random_tensor(lod, DType::F32, 16, 7);
    assert!(x.tensor().nbytes() > 256 * 1024);
    let run = |threads: usize| {
        set_num_threads(threads).unwrap();
        let table = RankTable::from_lod_tensor(&x, 0).unwrap();
        let array = lod_tensor_to_array(&x, &table).unwrap();
        let packed = array_to_lod_tensor(&array, &table).unwrap();
        let steps: Vec<Vec<u8>> = array.as_slice().iter().map(bytes).collect();
        let reordered = reorder_lod_tensor_by_rank(&x, &table).unwrap();
        let (concat, _) = tensor_array_to_tensor(&array, 0, false).unwrap();
        (steps, bytes(&packed), bytes(&reordered), bytes(&concat))
    };
    let one = run(1);
    let four = run(4);
    set_num_threads(0).unwrap();
    assert_eq!(one, four);
    assert_eq!(one.1, bytes(&x));
}

/// A rough timing, not a benchmark (run with `cargo test --release --test tensor_array --
/// --ignored --nocapture`): unpack and pack of ~128 MiB against a plain copy of the same bytes
/// into a fresh allocation, with 1 thread and with the default pool.
#[test]
#[ignore]
fn timing_unpack_pack_vs_memcpy() {
    use std::time::Instant;
    let (seqs, width) = (20_000usize, 32usize);
    let mut s = 99u64;
    let lengths: Vec<usize> = (0..seqs)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            1 + (s % 100) as usize
        })
        .collect();
    let x = random_tensor(Lod::from_lengths(&[lengths]).unwrap(), DType::F32, width, 5);
    let table = RankTable::from_lod_tensor(&x, 0).unwrap();
    let nbytes = x.tensor().nbytes();
    let best = |f: &mut dyn FnMut()| {
        (0..5)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    for threads in [1, 0] {
        set_num_threads(threads).unwrap();
        let src = x.tensor().bytes().unwrap();
        let copy = best(&mut || {
            let mut v = Tensor::zeros(DType::F32, *x.dims()).unwrap();
            v.bytes_mut().unwrap().copy_from_slice(src);
            std::hint::black_box(&v);
        });
        let mut warm_dst = vec![0u8; nbytes];
        let warm = best(&mut || {
            warm_dst.copy_from_slice(src);
            std::hint::black_box(&warm_dst);
        });
        let mut array = TensorArray::new();
        let unpack = best(&mut || array = lod_tensor_to_array(&x, &table).unwrap());
        let pack = best(&mut || {
            std::hint::black_box(array_to_lod_tensor(&array, &table).unwrap());
        });
        let gbs = |t: f64| nbytes as f64 / t / 1e9;
        println!(
            "threads {}: {} MiB, {} rows of {} B: memcpy {:.1} ms ({:.1} GB/s; {:.1} ms into a warm buffer), unpack {:.1} ms ({:.1} GB/s, {:.0}% of memcpy), pack {:.1} ms ({:.1} GB/s, {:.0}% of memcpy)",
            lodtensor::backend::cpu::pool::num_threads().unwrap(),
            nbytes >> 20,
            x.dims().as_slice()[0],
            width * 4,
            copy * 1e3,
            gbs(copy),
            warm * 1e3,
            unpack * 1e3,
            gbs(unpack),
            100.0 * copy / unpack,
            pack * 1e3,
            gbs(pack),
            100.0 * copy / pack
        );
    }
    set_num_threads(0).unwrap();
}
