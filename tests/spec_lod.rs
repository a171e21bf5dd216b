//! The worked examples of §1 of the semantics spec ("LoD itself"), each under the name of the
//! Paddle test or document it comes from.

use lodtensor::{
    append_lod, check_abs_lod, check_lod, lengths_to_offsets, offsets_to_lengths, DType, Dim, Error, LoDTensor, Lod,
    Tensor,
};

fn lod(levels: &[&[usize]]) -> Vec<Vec<usize>> {
    levels.iter().map(|l| l.to_vec()).collect()
}

/// A float32 [rows, 1] tensor whose row i holds i, so row ranges are visible in the data.
fn iota(rows: usize) -> Tensor {
    let data: Vec<f32> = (0..rows).map(|i| i as f32).collect();
    Tensor::from_slice(&data, &[rows, 1]).unwrap()
}

fn values(t: &LoDTensor) -> Vec<f32> {
    t.tensor().as_slice::<f32>().unwrap().to_vec()
}

fn range_values(r: std::ops::Range<usize>) -> Vec<f32> {
    r.map(|i| i as f32).collect()
}

fn is_invalid_lod<T: std::fmt::Debug>(r: Result<T, Error>) -> bool {
    matches!(r, Err(Error::InvalidLod(_)))
}

// §1.1: accessors on the header-comment LoD.
#[test]
fn header_comment_lod_accessors() {
    let l = Lod::from_offsets(lod(&[&[0, 2, 3], &[0, 2, 4, 7], &[0, 2, 5, 7, 10, 12, 15, 20]])).unwrap();
    assert_eq!(l.num_levels(), 3);
    assert_eq!(l.num_sequences(0).unwrap(), 2);
    assert_eq!(l.num_sequences(1).unwrap(), 3);
    assert_eq!(l.num_sequences(2).unwrap(), 7);
    assert_eq!(l.element(1, 2).unwrap(), (4, 7));
    assert!(l.num_sequences(3).is_err());
    assert!(l.element(0, 2).is_err());
    assert_eq!(l.rows(), Some(20));
}

// §1.2: lod_tensor_test.cc ConvertToLengthBasedLoD / ConvertToOffsetBasedLoD, and pybind docs.
#[test]
fn conversions() {
    let offsets = lod(&[&[0, 2], &[0, 1, 3], &[0, 2, 4, 5]]);
    let lengths = lod(&[&[2], &[1, 2], &[2, 2, 1]]);
    assert_eq!(offsets_to_lengths(&offsets).unwrap(), lengths);
    assert_eq!(lengths_to_offsets(&lengths).unwrap(), offsets);
    assert_eq!(Lod::from_offsets(offsets.clone()).unwrap().lengths(), lengths);

    let l = Lod::from_lengths(&lod(&[&[2, 1], &[2, 2, 3]])).unwrap();
    assert_eq!(l.levels(), lod(&[&[0, 2, 3], &[0, 2, 4, 7]]).as_slice());
    assert!(LoDTensor::new(Tensor::zeros(DType::F32, Dim::new(&[7, 2]).unwrap()).unwrap(), l).is_ok());

    // An empty length level becomes [0]; an empty offset level is an error, not a 2^64 loop.
    assert_eq!(lengths_to_offsets(&lod(&[&[]])).unwrap(), lod(&[&[0]]));
    assert!(is_invalid_lod(offsets_to_lengths(&lod(&[&[]]))));
    assert!(is_invalid_lod(offsets_to_lengths(&lod(&[&[0, 3, 2]]))));
    assert!(is_invalid_lod(lengths_to_offsets(&lod(&[&[usize::MAX, 1]]))));
}

// §1.3: lod_tensor_test.cc CheckLoD, the whole table.
#[test]
fn check_lod_table() {
    let h = |x: i64| if x < 0 { None } else { Some(x as usize) };
    let cases: &[(&[&[usize]], i64, bool)] = &[
        (&[&[0, 2], &[0, 1, 3], &[0, 2, 4, 5]], -1, true),
        (&[&[0, 2], &[0, 1, 4], &[0, 2, 4, 5]], -1, false),
        (&[], -1, true),
        (&[&[0]], -1, false),
        (&[&[0, 2], &[0, 1, 3], &[0, 2, 4, 5]], 5, true),
        (&[&[0, 2], &[0, 1, 3], &[0, 2, 4, 5]], 9, false),
        (&[&[0, 1, 2, 3, 4, 5]], 5, true),
        (&[&[0, 1, 3, 3, 4, 5]], 5, true),
        (&[&[0, 1, 3, 2, 5]], 5, false),
    ];
    for (levels, height, valid) in cases {
        let r = check_lod(&lod(levels), h(*height));
        assert_eq!(r.is_ok(), *valid, "CheckLoD({levels:?}, {height}) gave {r:?}");
        if !valid {
            assert!(is_invalid_lod(r));
        }
    }
}

// §1.3: each failure names the level, the index and the rule.
#[test]
fn check_lod_messages_name_level_index_and_rule() {
    let msg = |levels: &[&[usize]], height| check_lod(&lod(levels), height).unwrap_err().to_string();
    let m = msg(&[&[0]], None);
    assert!(m.contains("level 0") && m.contains("at least 2"), "{m}");
    let m = msg(&[&[0, 2], &[1, 2, 3]], None);
    assert!(m.contains("level 1") && m.contains("start at 0"), "{m}");
    let m = msg(&[&[0, 1, 3, 2, 5]], None);
    assert!(m.contains("level 0") && m.contains("offset[3]") && m.contains("non-decreasing"), "{m}");
    let m = msg(&[&[0, 2], &[0, 1, 3], &[0, 2, 4, 5]], Some(9));
    assert!(m.contains("level 2") && m.contains("9 rows"), "{m}");
    let m = msg(&[&[0, 2], &[0, 1, 4], &[0, 2, 4, 5]], None);
    assert!(m.contains("level 1 ends at offset 4") && m.contains("level 2 has 3 sequences"), "{m}");
}

// §1.3: lod_tensor_test.cc CheckAbsLoD.
#[test]
fn check_abs_lod_cases() {
    let rel = Lod::from_offsets(lod(&[&[0, 2], &[0, 1, 3], &[0, 2, 4, 5]])).unwrap();
    let abs = rel.abs_offsets();
    assert!(check_abs_lod(&abs, None).is_ok());
    assert!(check_abs_lod(&abs, Some(5)).is_ok());
    let mut bumped = abs.clone();
    *bumped.last_mut().unwrap().last_mut().unwrap() += 1;
    assert!(is_invalid_lod(check_abs_lod(&bumped, None)));
    assert!(is_invalid_lod(check_abs_lod(&lod(&[&[0]]), None)));
    // Our rule: non-decreasing, so the absolute form of empty sequences is accepted.
    assert!(check_abs_lod(&lod(&[&[0, 2, 2, 5], &[0, 1, 2, 2, 5]]), None).is_ok());
    assert!(is_invalid_lod(check_abs_lod(&lod(&[&[0, 3, 2, 5]]), None)));
    assert!(check_abs_lod(&[], None).is_ok());
}

// §1.3: test_lod_tensor.py, the Python-level enforcement (lengths set on a tensor of given rows).
#[test]
fn python_level_enforcement() {
    let with_rows = |lengths: &[&[usize]], rows: usize| {
        let t = Tensor::zeros(DType::F32, Dim::new(&[rows, 1]).unwrap()).unwrap();
        Lod::from_lengths(&lod(lengths)).and_then(|l| LoDTensor::new(t, l))
    };
    assert!(is_invalid_lod(Lod::from_lengths(&lod(&[&[], &[1], &[3]]))));
    assert!(is_invalid_lod(Lod::from_lengths(&lod(&[&[0], &[2], &[3]]))));
    assert!(with_rows(&[&[1, 2, 3]], 6).is_ok());
    assert!(is_invalid_lod(with_rows(&[&[1, 2, 3]], 9)));
    assert!(with_rows(&[&[2, 3], &[1, 3, 1, 2, 2]], 9).is_ok());
    assert!(is_invalid_lod(with_rows(&[&[2, 3], &[1, 3, 1, 2, 2]], 8)));
    assert!(with_rows(&[&[2, 3], &[1, 3, 1, 2, 1]], 8).is_ok());
    // set_recursive_sequence_lengths([]) on an empty tensor.
    assert!(with_rows(&[], 0).is_ok());
    // Our rule: a 0-row tensor is height-checked too.
    assert!(is_invalid_lod(with_rows(&[&[2]], 0)));
    assert!(with_rows(&[&[0, 0]], 0).is_ok());
}

// §1.4: lod_tensor_test.cc ToAbsOffset.
#[test]
fn to_abs_offset() {
    let l = Lod::from_offsets(lod(&[&[0, 2], &[0, 1, 3], &[0, 2, 4, 5]])).unwrap();
    assert_eq!(l.abs_offsets(), lod(&[&[0, 5], &[0, 2, 5], &[0, 2, 4, 5]]));
    let one = Lod::from_offsets(lod(&[&[0, 3, 3, 4]])).unwrap();
    assert_eq!(one.abs_offsets(), one.levels());
    assert!(Lod::empty().abs_offsets().is_empty());
}

// §1.5: SliceInLevel, the hand-derived example, and its checks.
#[test]
fn slice_in_level() {
    let l = Lod::from_offsets(lod(&[&[0, 2, 3], &[0, 2, 4, 7], &[0, 2, 5, 7, 10, 12, 15, 20]])).unwrap();
    let s = l.slice_in_level(0, 1, 2).unwrap();
    assert_eq!(s.levels(), lod(&[&[0, 1], &[0, 3], &[0, 2, 5, 10]]).as_slice());
    let s = l.slice_in_level(1, 0, 2).unwrap();
    assert_eq!(s.levels(), lod(&[&[0, 2, 4], &[0, 2, 5, 7, 10]]).as_slice());
    assert!(matches!(l.slice_in_level(3, 0, 1), Err(Error::OutOfRange(_))));
    assert!(matches!(l.slice_in_level(0, 1, 1), Err(Error::OutOfRange(_))));
    assert!(matches!(l.slice_in_level(0, 1, 3), Err(Error::OutOfRange(_))));

    // The sub-LoDTensor: rows 10..20 of the parent, sharing its memory.
    let t = LoDTensor::new(iota(20), l).unwrap();
    let p = t.slice(0, 1, 2).unwrap();
    assert_eq!(p.lod().levels(), lod(&[&[0, 1], &[0, 3], &[0, 2, 5, 10]]).as_slice());
    assert_eq!(values(&p), range_values(10..20));
    assert!(p.tensor().shares_memory_with(t.tensor()));
    assert_eq!(t.sequence_rows(0, 1).unwrap(), 10..20);
    assert_eq!(t.sequence_rows(1, 1).unwrap(), 5..10);
}

// §1.6: lod_tensor_test.cc GetFineGrainedLoDLength and the lod_tensor.h header example.
#[test]
fn sub_lod_and_abs_offset() {
    let l =
        Lod::from_offsets(lod(&[&[0, 2, 4, 5], &[0, 1, 6, 8, 10, 11], &[0, 2, 5, 7, 10, 12, 15, 17, 20, 24, 26, 29]]))
            .unwrap();
    let (lengths, rows) = l.sub_lod_and_abs_offset(1, 2, 0).unwrap();
    assert_eq!(lengths, lod(&[&[2], &[2, 2], &[2, 3, 4, 2]]));
    assert_eq!(rows, 15..26);

    let l = Lod::from_offsets(lod(&[&[0, 3, 4, 8], &[0, 9, 10, 11, 13, 17, 19, 22, 24]])).unwrap();
    let (lengths, rows) = l.sub_lod_and_abs_offset(1, 3, 0).unwrap();
    assert_eq!(lengths, lod(&[&[1, 4], &[2, 4, 2, 3, 2]]));
    assert_eq!(rows, 11..24);

    // Empty ranges are allowed; a level past the last returns the indices as rows.
    let (lengths, rows) = l.sub_lod_and_abs_offset(2, 2, 0).unwrap();
    assert_eq!(lengths, vec![Vec::<usize>::new(), vec![]]);
    assert_eq!(rows, 13..13);
    let (lengths, rows) = l.sub_lod_and_abs_offset(3, 7, 2).unwrap();
    assert!(lengths.is_empty());
    assert_eq!(rows, 3..7);
    assert!(matches!(l.sub_lod_and_abs_offset(2, 1, 0), Err(Error::OutOfRange(_))));
    assert!(matches!(l.sub_lod_and_abs_offset(0, 4, 0), Err(Error::OutOfRange(_))));
    assert!(matches!(l.sub_lod_and_abs_offset(0, 1, 3), Err(Error::OutOfRange(_))));
}

// §1.7: lod_tensor_test.cc AppendLoD.
#[test]
fn append() {
    let mut origin = lod(&[&[0, 2], &[0, 1, 6], &[0, 2, 5, 7, 10, 12, 15]]);
    append_lod(&mut origin, &lod(&[&[2], &[2, 2], &[2, 3, 4, 2]])).unwrap();
    assert_eq!(origin, lod(&[&[0, 2, 4], &[0, 1, 6, 8, 10], &[0, 2, 5, 7, 10, 12, 15, 17, 20, 24, 26]]));

    let mut empty = Vec::new();
    append_lod(&mut empty, &[]).unwrap();
    assert!(empty.is_empty());
    append_lod(&mut empty, &lod(&[&[2, 1]])).unwrap();
    assert_eq!(empty, lod(&[&[0, 2, 3]]));

    let mut two = lod(&[&[0, 1], &[0, 2]]);
    assert!(matches!(append_lod(&mut two, &lod(&[&[1]])), Err(Error::InvalidArgument(_))));
    assert_eq!(two, lod(&[&[0, 1], &[0, 2]]));
}

// §1.8: lod_tensor_test.cc SplitLoDTensor, MergeLoDTensor and the zero-batch case.
#[test]
fn split_and_merge() {
    let t = LoDTensor::new(iota(20), Lod::from_offsets(lod(&[&[0, 2, 4, 5, 6], &[0, 1, 6, 8, 13, 15, 20]])).unwrap())
        .unwrap();
    let pieces = t.split(2).unwrap();
    assert_eq!(pieces.len(), 2);
    assert_eq!(pieces[0].lod().levels(), lod(&[&[0, 2, 4], &[0, 1, 6, 8, 13]]).as_slice());
    assert_eq!(values(&pieces[0]), range_values(0..13));
    assert_eq!(pieces[1].lod().levels(), lod(&[&[0, 1, 2], &[0, 2, 7]]).as_slice());
    assert_eq!(values(&pieces[1]), range_values(13..20));
    assert!(pieces.iter().all(|p| p.tensor().shares_memory_with(t.tensor())));

    let merged = LoDTensor::merge(&[&pieces[0], &pieces[1]]).unwrap();
    assert_eq!(merged.lod(), t.lod());
    assert_eq!(values(&merged), values(&t));
    assert!(!merged.tensor().shares_memory_with(t.tensor()));

    // Zero batch: a 0-row dense tensor splits into n copies of itself. (Paddle's `[[0]]` LoD for
    // this case is invalid under CheckLoD, so a LoDTensor cannot carry it.)
    let empty = LoDTensor::dense(Tensor::zeros(DType::F32, Dim::new(&[0, 5]).unwrap()).unwrap());
    let pieces = empty.split(2).unwrap();
    assert_eq!(pieces.len(), 2);
    assert!(pieces.iter().all(|p| p.dims().as_slice() == [0, 5]));
    assert!(is_invalid_lod(Lod::from_offsets(lod(&[&[0]]))));

    assert!(matches!(t.split(0), Err(Error::InvalidArgument(_))));
}

// §1.8: the new algorithm, batch 5 on 2 places -> [0,3) + [3,5), and more places than sequences.
#[test]
fn split_step_rule() {
    let t = LoDTensor::new(iota(5), Lod::from_offsets(lod(&[&[0, 1, 2, 3, 4, 5]])).unwrap()).unwrap();
    let rows: Vec<Vec<f32>> = t.split(2).unwrap().iter().map(values).collect();
    assert_eq!(rows, vec![range_values(0..3), range_values(3..5)]);
    // batch 5 on 4 places: step 2, so 3 pieces.
    assert_eq!(t.split(4).unwrap().len(), 3);
    assert_eq!(t.split(9).unwrap().len(), 5);
    // A dense tensor splits by rows.
    let d = LoDTensor::dense(iota(5));
    let rows: Vec<Vec<f32>> = d.split(2).unwrap().iter().map(values).collect();
    assert_eq!(rows, vec![range_values(0..3), range_values(3..5)]);
}

// §1.8: merge checks.
#[test]
fn merge_rules() {
    let a = LoDTensor::new(iota(3), Lod::from_offsets(lod(&[&[0, 3]])).unwrap()).unwrap();
    let empty = LoDTensor::new(
        Tensor::zeros(DType::F64, Dim::new(&[0, 7]).unwrap()).unwrap(),
        Lod::from_offsets(lod(&[&[0, 0]])).unwrap(),
    )
    .unwrap();
    // 0-row parts are not checked for dtype or row shape, but their LoD levels are appended.
    let m = LoDTensor::merge(&[&empty, &a, &empty]).unwrap();
    assert_eq!(m.lod().levels(), lod(&[&[0, 0, 3, 3]]).as_slice());
    assert_eq!(m.tensor().dtype(), DType::F32);
    assert_eq!(values(&m), range_values(0..3));

    let dense = LoDTensor::dense(iota(2));
    assert!(is_invalid_lod(LoDTensor::merge(&[&a, &dense])));
    let wide = LoDTensor::new(
        Tensor::zeros(DType::F32, Dim::new(&[1, 2]).unwrap()).unwrap(),
        Lod::from_offsets(lod(&[&[0, 1]])).unwrap(),
    )
    .unwrap();
    assert!(matches!(LoDTensor::merge(&[&a, &wide]), Err(Error::InvalidArgument(m)) if m.contains("row width")));
    // Rows of the same width merge whatever their shape (Paddle checks numel / dims[0]): the
    // output takes the first part's row shape.
    let six = |rows: usize, shape: &[usize]| {
        let data: Vec<f32> = (0..rows * 6).map(|i| i as f32).collect();
        LoDTensor::dense(Tensor::from_slice(&data, &[&[rows][..], shape].concat()).unwrap())
    };
    let m = LoDTensor::merge(&[&six(0, &[7]), &six(2, &[6]), &six(3, &[2, 3])]).unwrap();
    assert_eq!(m.dims().as_slice(), &[5, 6]);
    assert_eq!(values(&m), [range_values(0..12), range_values(0..18)].concat());
    let ints =
        LoDTensor::new(Tensor::from_slice(&[1i32], &[1, 1]).unwrap(), Lod::from_offsets(lod(&[&[0, 1]])).unwrap())
            .unwrap();
    assert!(matches!(LoDTensor::merge(&[&a, &ints]), Err(Error::InvalidArgument(_))));
    assert!(matches!(LoDTensor::merge(&[]), Err(Error::InvalidArgument(_))));
}

// §1.11: lod_reset.
#[test]
fn lod_reset() {
    let x = LoDTensor::new(iota(6), Lod::from_offsets(lod(&[&[0, 2, 6]])).unwrap()).unwrap();

    // target_lod attribute, replace.
    let out = x.lod_reset(None, &[0, 1, 4, 6], false).unwrap();
    assert_eq!(out.lod().levels(), lod(&[&[0, 1, 4, 6]]).as_slice());
    assert_eq!(values(&out), values(&x));
    assert!(out.tensor().shares_memory_with(x.tensor()));

    // Y with a LoD: its whole LoD (last level ends at x's rows).
    let y = LoDTensor::new(iota(6), Lod::from_offsets(lod(&[&[0, 1, 2], &[0, 3, 6]])).unwrap()).unwrap();
    let out = x.lod_reset(Some(&y), &[], false).unwrap();
    assert_eq!(out.lod(), y.lod());
    let short = LoDTensor::new(iota(5), Lod::from_offsets(lod(&[&[0, 5]])).unwrap()).unwrap();
    assert!(is_invalid_lod(x.lod_reset(Some(&short), &[], false)));

    // Y without a LoD: its int32 data is the target level (Y wins over target_lod).
    let y = LoDTensor::dense(Tensor::from_slice(&[0i32, 3, 6], &[3]).unwrap());
    let out = x.lod_reset(Some(&y), &[0, 6], false).unwrap();
    assert_eq!(out.lod().levels(), lod(&[&[0, 3, 6]]).as_slice());
    let y64 = LoDTensor::dense(Tensor::from_slice(&[0i64, 6], &[2]).unwrap());
    assert_eq!(x.lod_reset(Some(&y64), &[], false).unwrap().lod().levels(), lod(&[&[0, 6]]).as_slice());
    let yf = LoDTensor::dense(Tensor::from_slice(&[0f32, 6.], &[2]).unwrap());
    assert!(matches!(x.lod_reset(Some(&yf), &[], false), Err(Error::Unsupported(_))));

    // append: the new level goes below x's LoD, whose last level (ending at 6) then counts the
    // new level's sequences, so the target must have 6 of them.
    let out = x.lod_reset(None, &[0, 1, 2, 3, 4, 5, 6], true).unwrap();
    assert_eq!(out.lod().levels(), lod(&[&[0, 2, 6], &[0, 1, 2, 3, 4, 5, 6]]).as_slice());
    // Our rule: the appended result is validated (Paddle does not).
    assert!(is_invalid_lod(x.lod_reset(None, &[0, 2, 6], true)));
    // A dense x with append just gets the level.
    let d = LoDTensor::dense(iota(6));
    assert_eq!(d.lod_reset(None, &[0, 6], true).unwrap().lod().levels(), lod(&[&[0, 6]]).as_slice());

    // The target checks.
    for bad in [&[0i64][..], &[1, 6], &[0, 4, 3, 6], &[0, 5], &[0, -1, 6], &[]] {
        assert!(is_invalid_lod(x.lod_reset(None, bad, false)), "target {bad:?}");
    }
}

// Our rule (see `check_lod`): a level below the top may hold zero sequences when every sequence
// above it is empty, so slices and split pieces of valid LoDTensors stay valid.
#[test]
fn empty_lower_levels_under_empty_sequences() {
    assert!(check_lod(&lod(&[&[0, 0], &[0]]), Some(0)).is_ok());
    assert!(check_lod(&lod(&[&[0, 0], &[0], &[0]]), Some(0)).is_ok());
    assert!(is_invalid_lod(check_lod(&lod(&[&[0, 1], &[0]]), None)));
    assert!(is_invalid_lod(check_lod(&lod(&[&[0, 0], &[0]]), Some(3))));
    let m = check_lod(&lod(&[&[0, 0], &[]]), None).unwrap_err().to_string();
    assert!(m.contains("level 1") && m.contains("at least 1"), "{m}");

    // Paragraph 0 has no sentences; paragraph 1 has one sentence of 2 rows.
    let t = LoDTensor::new(iota(2), Lod::from_lengths(&lod(&[&[0, 1], &[2]])).unwrap()).unwrap();
    let pieces = t.split(2).unwrap();
    assert_eq!(pieces[0].lod().levels(), lod(&[&[0, 0], &[0]]).as_slice());
    assert_eq!(pieces[0].dims().rows(), Some(0));
    assert_eq!(pieces[1].lod().levels(), lod(&[&[0, 1], &[0, 2]]).as_slice());
    let merged = LoDTensor::merge(&[&pieces[0], &pieces[1]]).unwrap();
    assert_eq!(merged.lod(), t.lod());
    let first = t.slice(0, 0, 1).unwrap();
    assert_eq!(first.lod().levels(), lod(&[&[0, 0], &[0]]).as_slice());
}

// Huge counts fail with an error instead of aborting on allocation.
#[test]
fn huge_piece_count_of_an_empty_batch() {
    let empty = LoDTensor::dense(Tensor::zeros(DType::F32, Dim::new(&[0, 5]).unwrap()).unwrap());
    assert!(matches!(empty.split(usize::MAX), Err(Error::OutOfMemory(_))));
    assert!(matches!(empty.split(usize::MAX / 64), Err(Error::OutOfMemory(_))));
}
