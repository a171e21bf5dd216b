//! Spec §4: top_k, beam_search (the six cases of Paddle's test), the fused step against top_k +
//! beam_search, beam_search_decode (the worked trace), gather_tree, the state gather, and the
//! decoder against exhaustive search and greedy decoding written plainly here.

mod common;

use common::{with_1_and_4_threads, Rng};
use half::{bf16, f16};
use lodtensor::backend::cpu::pool::set_num_threads;
use lodtensor::{
    beam_search_decode, beam_search_fused_step, beam_search_gather_state, beam_search_gather_states,
    beam_search_gather_tree, beam_search_step, sequence_expand, top_k, Decoder, DecoderOptions, Element, Error,
    LoDTensor, Lod, StepInfo, Tensor, TensorArray,
};
use proptest::prelude::*;

fn lt<T: Element>(data: &[T], dims: &[usize], offsets: Vec<Vec<usize>>) -> LoDTensor {
    LoDTensor::from_slice(data, dims, offsets).unwrap()
}

fn dense<T: Element>(data: &[T], dims: &[usize]) -> LoDTensor {
    LoDTensor::dense(Tensor::from_slice(data, dims).unwrap())
}

fn v<T: Element>(t: &LoDTensor) -> Vec<T> {
    t.tensor().as_slice::<T>().unwrap().to_vec()
}

// ---- top_k -------------------------------------------------------------------------------------

#[test]
fn top_k_doc_examples() {
    let (val, idx) = top_k(&dense(&[1f32, 4., 5., 7.], &[4]), 1, true).unwrap();
    assert_eq!((v::<f32>(&val), v::<i64>(&idx)), (vec![7.], vec![3]));
    assert_eq!(val.dims().as_slice(), &[1]);
    let (val, idx) = top_k(&dense(&[1f32, 4., 5., 7., 2., 6., 2., 5.], &[2, 4]), 1, true).unwrap();
    assert_eq!((v::<f32>(&val), v::<i64>(&idx)), (vec![7., 6.], vec![3, 1]));
    assert_eq!(idx.dims().as_slice(), &[2, 1]);
}

#[test]
fn top_k_nan_ties_smallest_and_lod() {
    let nan = f32::NAN;
    let x = lt(&[3f32, nan, 3., 1., 5., 3., 1., 1., 2., 2.], &[2, 5], vec![vec![0, 2], vec![0, 1, 2]]);
    let (val, idx) = top_k(&x, 3, true).unwrap();
    let got = v::<f32>(&val);
    assert!(got[0].is_nan());
    assert_eq!(&got[1..], &[5., 3., 3., 2., 2.]);
    assert_eq!(v::<i64>(&idx), vec![1, 4, 0, 0, 3, 4]);
    assert_eq!(val.lod(), x.lod());
    assert_eq!(idx.lod(), x.lod());
    let (val, idx) = top_k(&x, 4, false).unwrap();
    assert_eq!(v::<f32>(&val), vec![1., 3., 3., 5., 1., 1., 2., 2.]);
    assert_eq!(v::<i64>(&idx), vec![3, 0, 2, 4, 1, 2, 3, 4]);
    // A NaN never beats a NaN: the smaller index stays first.
    let (_, idx) = top_k(&dense(&[nan, 0f32, nan], &[3]), 3, true).unwrap();
    assert_eq!(v::<i64>(&idx), vec![0, 2, 1]);
    let (_, idx) = top_k(&dense(&[nan, 0f32, nan], &[3]), 3, false).unwrap();
    assert_eq!(v::<i64>(&idx), vec![1, 0, 2]);
}

#[test]
fn top_k_errors() {
    let x = dense(&[1f32, 2., 3.], &[1, 3]);
    assert!(matches!(top_k(&x, 4, true), Err(Error::InvalidArgument(m)) if m.contains("k: 4")));
    assert!(matches!(top_k(&x, 0, true), Err(Error::InvalidArgument(m)) if m.contains("k:")));
    assert!(matches!(top_k(&dense(&[1f32], &[]), 1, true), Err(Error::InvalidArgument(m)) if m.contains("x:")));
    // 1-D with a LoD: the last axis is the rows the LoD describes, so no result could keep it
    // (k equal to the length too: the values are sorted, no longer the sequences' rows).
    let row =
        LoDTensor::new(Tensor::from_slice(&[3f32, 1., 2.], &[3]).unwrap(), Lod::from_lengths(&[vec![1, 2]]).unwrap())
            .unwrap();
    for k in [1, 3] {
        assert!(
            matches!(top_k(&row, k, true), Err(Error::InvalidArgument(m)) if m.contains("x: is 1-D with a LoD")),
            "k = {k}"
        );
    }
    // Without a LoD a 1-D x is one row.
    assert_eq!(top_k(&dense(&[3f32, 1., 2.], &[3]), 2, true).unwrap().0.tensor().as_slice::<f32>().unwrap(), &[3., 2.]);
    let b = LoDTensor::dense(Tensor::zeros(lodtensor::DType::Bool, lodtensor::Dim::new(&[2, 2]).unwrap()).unwrap());
    assert!(matches!(top_k(&b, 1, true), Err(Error::Unsupported(_))));
    // Zero rows are fine.
    let (val, _) = top_k(&dense::<f32>(&[], &[0, 3]), 2, true).unwrap();
    assert_eq!(val.dims().as_slice(), &[0, 2]);
}

/// Reference: a stable sort of each row by the rule (NaN above numbers, equal by index).
fn ref_top_k(row: &[f64], k: usize, largest: bool) -> Vec<usize> {
    let key = |x: f64| if x.is_nan() { f64::INFINITY } else { x };
    let mut idx: Vec<usize> = (0..row.len()).collect();
    idx.sort_by(|&a, &b| {
        let (ka, kb) = (key(row[a]), key(row[b]));
        let (na, nb) = (row[a].is_nan(), row[b].is_nan());
        let ord = if na != nb {
            if na {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Less
            }
        } else {
            ka.partial_cmp(&kb).unwrap()
        };
        if largest {
            ord.reverse()
        } else {
            ord
        }
    });
    idx.truncate(k);
    idx
}

fn check_top_k_dtype<T: Element + lodtensor::dtype::Scalar>(
    rows: usize,
    width: usize,
    k: usize,
    largest: bool,
    seed: u64,
    nan: bool,
) {
    let mut rng = Rng(seed | 1);
    let vals: Vec<f64> = (0..rows * width)
        .map(|_| if nan && rng.below(13) == 0 { f64::NAN } else { (rng.below(9) as f64) - 4.0 })
        .collect();
    check_top_k_values::<T>(&vals, rows, width, k, largest);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::rounds(48) as u32, ..ProptestConfig::default() })]

    #[test]
    fn top_k_matches_a_stable_sort(rows in 0usize..40, width in 1usize..60, kk in 1usize..8, largest: bool, seed: u64) {
        let k = kk.min(width);
        check_top_k_dtype::<f32>(rows, width, k, largest, seed, true);
        check_top_k_dtype::<f64>(rows, width, k, largest, seed, true);
        check_top_k_dtype::<f16>(rows, width, k, largest, seed, true);
        check_top_k_dtype::<bf16>(rows, width, k, largest, seed, true);
        check_top_k_dtype::<i32>(rows, width, k, largest, seed, false);
        check_top_k_dtype::<i64>(rows, width, k, largest, seed, false);
        check_top_k_dtype::<i8>(rows, width, k, largest, seed, false);
        check_top_k_dtype::<i16>(rows, width, k, largest, seed, false);
        check_top_k_dtype::<u8>(rows, width, 1, largest, seed, false);
    }
}

/// top_k of `rows` rows of `width` values (`vals`, converted to T) against the stable sort.
fn check_top_k_values<T: Element + lodtensor::dtype::Scalar>(
    vals: &[f64],
    rows: usize,
    width: usize,
    k: usize,
    largest: bool,
) {
    let data: Vec<T> = vals.iter().map(|&x| T::cast_f64(x)).collect();
    // The values the tensor really holds (u8 saturates the negative ones).
    let vals: Vec<f64> = data.iter().map(|x| x.to_f64()).collect();
    let (val, idx) = top_k(&dense(&data, &[rows, width]), k, largest).unwrap();
    let (val, idx) = (v::<T>(&val), v::<i64>(&idx));
    for r in 0..rows {
        let want = ref_top_k(&vals[r * width..(r + 1) * width], k, largest);
        let got: Vec<usize> = idx[r * k..(r + 1) * k].iter().map(|&i| i as usize).collect();
        assert_eq!(got, want, "row {r} of width {width}, k {k}, largest {largest}");
        for (j, &c) in got.iter().enumerate() {
            assert_eq!(val[r * k + j].to_f64().to_bits(), data[r * width + c].to_f64().to_bits());
        }
    }
}

// Rows long enough for the threshold path of the row selection (k <= 16 and at least 4k blocks of
// 64): block bests, a bar from them, only blocks reaching it scanned; chunks of 8192 elements; a
// chunk with a NaN scanned whole. Widths around the path's limit and the chunk size, ties, NaN in
// one chunk only, infinities, constant and sorted rows, every dtype family.
#[test]
fn top_k_long_rows_match_a_stable_sort() {
    let mut rng = Rng(0x5eed);
    for k in [1usize, 2, 10, 16, 17] {
        for width in [4 * 64 * k - 1, 4 * 64 * k, 5000, 8192, 8193, 20_000] {
            let width = width.max(k);
            let rows = 2;
            let n = rows * width;
            let patterns: Vec<Vec<f64>> = vec![
                (0..n).map(|_| rng.unit() as f64 * 20.0 - 10.0).collect(),
                (0..n).map(|_| rng.below(9) as f64 - 4.0).collect(),
                (0..n).map(|i| if i % width == width - 3 { f64::NAN } else { rng.unit() as f64 }).collect(),
                (0..n).map(|i| if i % width == 8200 || i % 997 == 5 { f64::NAN } else { rng.unit() as f64 }).collect(),
                (0..n)
                    .map(|i| match i % 1500 {
                        7 => f64::INFINITY,
                        700 => f64::NEG_INFINITY,
                        _ => rng.unit() as f64 - 0.5,
                    })
                    .collect(),
                vec![1.5; n],
                (0..n).map(|i| (i % width) as f64 / 64.0).collect(),
                (0..n).map(|i| -((i % width) as f64) / 64.0).collect(),
            ];
            for (p, vals) in patterns.iter().enumerate() {
                for largest in [true, false] {
                    check_top_k_values::<f32>(vals, rows, width, k, largest);
                    if p % 2 == 0 {
                        check_top_k_values::<f64>(vals, rows, width, k, largest);
                        check_top_k_values::<f16>(vals, rows, width, k, largest);
                        check_top_k_values::<bf16>(vals, rows, width, k, largest);
                    }
                    if !vals.iter().any(|x| x.is_nan()) {
                        let scaled: Vec<f64> = vals.iter().map(|x| (x * 10.0).clamp(-1e9, 1e9)).collect();
                        check_top_k_values::<i32>(&scaled, rows, width, k, largest);
                        check_top_k_values::<i8>(&scaled, rows, width, k, largest);
                    }
                }
            }
        }
    }
}

#[test]
fn top_k_many_rows_same_with_1_and_4_threads() {
    let mut rng = Rng(7);
    let (rows, width, k) = (20_000, 40, 4);
    let data: Vec<f32> = (0..rows * width).map(|_| rng.unit()).collect();
    let x = dense(&data, &[rows, width]);
    let ((a, ai), (b, bi)) = with_1_and_4_threads(|| top_k(&x, k, true).unwrap());
    assert_eq!(v::<f32>(&a), v::<f32>(&b));
    assert_eq!(v::<i64>(&ai), v::<i64>(&bi));
    check_top_k_dtype::<f32>(2000, 300, 5, true, 99, true);
}

// ---- beam_search_step: the six cases of test_beam_search_op.py ---------------------------------

struct Case {
    pre_ids: Vec<i64>,
    pre_scores: Vec<f32>,
    ids: Vec<i64>,
    scores: Vec<f32>,
    width: usize,
    beam: usize,
    accumulated: bool,
    lod: Vec<Vec<usize>>,
    want_ids: Vec<i64>,
    want_scores: Vec<f32>,
    want_lod: Vec<Vec<usize>>,
    want_parent: Vec<i32>,
}

fn run_case(c: &Case) {
    let rows = c.pre_ids.len();
    let pre_ids = dense(&c.pre_ids, &[1, rows]); // the test's shape: only the flat data is read
    let pre_scores = dense(&c.pre_scores, &[rows, 1]);
    let ids = lt(&c.ids, &[rows, c.width], c.lod.clone());
    let scores = lt(&c.scores, &[rows, c.width], c.lod.clone());
    let out = beam_search_step(&pre_ids, &pre_scores, Some(&ids), &scores, 0, c.beam, 0, c.accumulated).unwrap();
    assert_eq!(v::<i64>(&out.selected_ids), c.want_ids);
    let got = v::<f32>(&out.selected_scores);
    assert_eq!(got.len(), c.want_scores.len());
    for (g, w) in got.iter().zip(&c.want_scores) {
        assert!((g - w).abs() < 1e-5, "{got:?} vs {:?}", c.want_scores);
    }
    assert_eq!(out.selected_ids.lod().levels(), c.want_lod.as_slice());
    assert_eq!(out.selected_scores.lod(), out.selected_ids.lod());
    assert_eq!(out.parent_idx.as_slice::<i32>().unwrap(), c.want_parent.as_slice());
    assert_eq!(out.selected_ids.dims().as_slice(), &[c.want_ids.len(), 1]);
}

fn lod2() -> Vec<Vec<usize>> {
    vec![vec![0, 2, 4], vec![0, 1, 2, 3, 4]]
}

#[test]
fn beam_search_case_1() {
    run_case(&Case {
        pre_ids: vec![1, 2, 3, 4],
        pre_scores: vec![0.1, 0.2, 0.3, 0.4],
        ids: vec![4, 2, 5, 2, 1, 3, 3, 5, 2, 8, 2, 1],
        scores: vec![0.5, 0.3, 0.2, 0.6, 0.3, 0.1, 0.9, 0.5, 0.1, 0.7, 0.5, 0.1],
        width: 3,
        beam: 2,
        accumulated: true,
        lod: lod2(),
        want_ids: vec![4, 2, 3, 8],
        want_scores: vec![0.5, 0.6, 0.9, 0.7],
        want_lod: lod2(),
        want_parent: vec![0, 1, 2, 3],
    });
}

fn case2(pre_ids: Vec<i64>, pre_scores: Vec<f32>, scores: Vec<f32>) -> Case {
    Case {
        pre_ids,
        pre_scores,
        ids: vec![4, 2, 7, 3, 3, 5, 8, 1],
        scores,
        width: 2,
        beam: 2,
        accumulated: true,
        lod: lod2(),
        want_ids: vec![],
        want_scores: vec![],
        want_lod: vec![],
        want_parent: vec![],
    }
}

#[test]
fn beam_search_case_2() {
    let mut c = case2(vec![1, 2, 3, 4], vec![0.1, 0.2, 0.3, 0.4], vec![0.6, 0.9, 0.5, 0.3, 0.9, 0.5, 0.1, 0.7]);
    (c.want_ids, c.want_scores) = (vec![2, 4, 3, 1], vec![0.9, 0.6, 0.9, 0.7]);
    (c.want_lod, c.want_parent) = (vec![vec![0, 2, 4], vec![0, 2, 2, 3, 4]], vec![0, 0, 2, 3]);
    run_case(&c);
}

#[test]
fn beam_search_case_3_finished_branches() {
    let mut c = case2(vec![1, 0, 0, 4], vec![0.1, 1.2, 0.5, 0.4], vec![0.6, 0.9, 0.5, 0.3, 0.9, 0.5, 0.6, 0.7]);
    (c.want_ids, c.want_scores) = (vec![2, 0, 1, 8], vec![0.9, 1.2, 0.7, 0.6]);
    (c.want_lod, c.want_parent) = (vec![vec![0, 2, 4], vec![0, 1, 2, 2, 4]], vec![0, 1, 3, 3]);
    run_case(&c);
}

#[test]
fn beam_search_case_4_source_pruned_one_step_later() {
    let mut c = case2(vec![0, 0, 0, 4], vec![0.1, 1.2, 0.5, 0.4], vec![0.6, 0.9, 0.5, 0.3, 0.9, 0.5, 0.6, 0.7]);
    (c.want_ids, c.want_scores) = (vec![1, 8], vec![0.7, 0.6]);
    (c.want_lod, c.want_parent) = (vec![vec![0, 2, 4], vec![0, 0, 0, 0, 2]], vec![3, 3]);
    run_case(&c);
}

#[test]
fn beam_search_case_5_log_mode() {
    let mut c = case2(vec![1, 2, 3, 4], vec![0.1, 2.2, 0.3, 0.4], vec![0.6, 0.9, 0.5, 0.3, 0.9, 0.5, 0.1, 0.7]);
    c.accumulated = false;
    (c.want_ids, c.want_scores) = (vec![7, 3, 3, 1], vec![1.50685, 0.996027, 0.194639, 0.043325]);
    (c.want_lod, c.want_parent) = (vec![vec![0, 2, 4], vec![0, 0, 2, 3, 4]], vec![1, 1, 2, 3]);
    run_case(&c);
}

#[test]
fn beam_search_case_6_beam_1() {
    let mut c = case2(vec![1, 2, 3, 4], vec![0.1, 0.2, 0.3, 0.4], vec![0.6, 0.9, 0.5, 0.3, 0.9, 0.5, 0.1, 0.7]);
    c.beam = 1;
    c.lod = vec![vec![0, 1, 2, 3, 4], vec![0, 1, 2, 3, 4]];
    (c.want_ids, c.want_scores) = (vec![2, 7, 3, 1], vec![0.9, 0.5, 0.9, 0.7]);
    (c.want_lod, c.want_parent) = (c.lod.clone(), vec![0, 1, 2, 3]);
    run_case(&c);
}

#[test]
fn beam_search_without_ids_uses_columns_and_f64() {
    let scores = lt(&[0.6f64, 0.9, 0.5, 0.3, 0.9, 0.5, 0.1, 0.7], &[4, 2], lod2());
    let pre_ids = dense(&[1i64, 2, 3, 4], &[4, 1]);
    let pre_scores = dense(&[0.1f64, 0.2, 0.3, 0.4], &[4, 1]);
    let out = beam_search_step(&pre_ids, &pre_scores, None, &scores, 0, 2, 0, true).unwrap();
    assert_eq!(v::<i64>(&out.selected_ids), vec![1, 0, 0, 1]);
    assert_eq!(v::<f64>(&out.selected_scores), vec![0.9, 0.6, 0.9, 0.7]);
}

/// A NaN score (an infinite sum of both signs, or a NaN operand of any sign and payload) comes out
/// as the one quiet NaN `f32::NAN` / `f64::NAN`, which the CUDA kernels write too.
#[test]
fn nan_scores_are_the_one_quiet_nan() {
    let odd_nan = f32::from_bits(0xffc0_1234);
    let lod = vec![vec![0, 2], vec![0, 1, 2]];
    let pre_ids = lt(&[1i64, 2], &[2, 1], lod.clone());
    let fused = beam_search_fused_step(
        &pre_ids,
        &dense(&[f32::NEG_INFINITY, odd_nan], &[2, 1]),
        &dense(&[f32::INFINITY, 0.0, 1.0, 2.0], &[2, 2]),
        4,
        0,
    )
    .unwrap();
    let nans: Vec<u32> = v::<f32>(&fused.selected_scores).iter().filter(|s| s.is_nan()).map(|s| s.to_bits()).collect();
    assert_eq!(nans, vec![f32::NAN.to_bits(); 3]);
    // Paddle's step, log mode: +inf + ln(0) and a NaN pre_score.
    let scores = lt(&[0.0f64, 0.5, 0.25, 0.125], &[2, 2], lod);
    let pre_scores = dense(&[f64::INFINITY, f64::from_bits(0xfff8_0000_0000_0001)], &[2, 1]);
    let step = beam_search_step(&pre_ids, &pre_scores, None, &scores, 0, 4, 0, false).unwrap();
    let nans: Vec<u64> = v::<f64>(&step.selected_scores).iter().filter(|s| s.is_nan()).map(|s| s.to_bits()).collect();
    assert_eq!(nans, vec![f64::NAN.to_bits(); 3]);
}

#[test]
fn beam_search_checks_paddle_forgets() {
    let scores = lt(&[0.6f32, 0.9, 0.5, 0.3, 0.9, 0.5, 0.1, 0.7], &[4, 2], lod2());
    let ids = lt(&[4i64, 2, 7, 3, 3, 5, 8, 1], &[4, 2], lod2());
    let pre_ids = dense(&[1i64, 2, 3, 4], &[4, 1]);
    let pre_scores = dense(&[0.1f32, 0.2, 0.3, 0.4], &[4, 1]);
    let step = |pi: &LoDTensor, ps: &LoDTensor, i: Option<&LoDTensor>, s: &LoDTensor, level: usize, beam: usize| {
        beam_search_step(pi, ps, i, s, level, beam, 0, true)
    };
    let inv = |r: lodtensor::Result<_>, what: &str| match r {
        Err(Error::InvalidArgument(m)) => assert!(m.contains(what), "{m}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("accepted: {what}"),
    };
    inv(step(&pre_ids, &pre_scores, Some(&ids), &scores, 0, 0), "beam_size");
    inv(step(&pre_ids, &pre_scores, Some(&ids), &scores, 2, 2), "level");
    let one_level = lt(&[0.6f32, 0.9, 0.5, 0.3, 0.9, 0.5, 0.1, 0.7], &[4, 2], vec![vec![0, 2, 4]]);
    inv(step(&pre_ids, &pre_scores, None, &one_level, 0, 2), "LoD level");
    inv(step(&dense(&[1i64, 2, 3], &[3]), &pre_scores, None, &scores, 0, 2), "pre_ids");
    inv(step(&pre_ids, &dense(&[0f32; 5], &[5]), None, &scores, 0, 2), "pre_scores");
    inv(step(&pre_ids, &dense(&[0f64; 4], &[4]), None, &scores, 0, 2), "pre_scores");
    inv(step(&pre_ids, &pre_scores, Some(&dense(&[0i64; 8], &[2, 4])), &scores, 0, 2), "ids");
    assert!(matches!(
        step(&dense(&[1i32, 2, 3, 4], &[4]), &pre_scores, None, &scores, 0, 2),
        Err(Error::Unsupported(_))
    ));
    let int_scores = lt(&[1i32; 8], &[4, 2], lod2());
    assert!(matches!(
        step(&pre_ids, &dense(&[0i32; 4], &[4]), None, &int_scores, 0, 2),
        Err(Error::Unsupported(m)) if m.contains("scores")
    ));
    // level 1 of a 2-level LoD: every prefix row is its own source.
    let out = step(&pre_ids, &pre_scores, Some(&ids), &scores, 1, 1).unwrap();
    assert_eq!(v::<i64>(&out.selected_ids), vec![2, 7, 3, 1]);
}

/// Paddle's beam_search written plainly: per source, every candidate, a stable sort (higher
/// score first, then higher row), the first `beam`; sources whose picks are all end tokens of
/// finished rows are dropped; items listed row by row. Exact for distinct scores.
#[allow(clippy::too_many_arguments)]
fn ref_step<T: Copy + PartialOrd>(
    h: &[usize],
    pre_ids: &[i64],
    pre_scores: &[T],
    ids: Option<&[i64]>,
    scores: &[T],
    width: usize,
    beam: usize,
    end: i64,
    combine: impl Fn(T, T) -> T,
) -> (Vec<i64>, Vec<T>, Vec<i32>, Vec<usize>) {
    let rows = *h.last().unwrap();
    let mut per_row: Vec<Vec<(i64, T)>> = vec![Vec::new(); rows];
    for s in 0..h.len() - 1 {
        let mut cands = Vec::new();
        for r in h[s]..h[s + 1] {
            if pre_ids[r] == end {
                cands.push((pre_scores[r], r, end));
            } else {
                for d in 0..width {
                    let id = ids.map_or(d as i64, |i| i[r * width + d]);
                    cands.push((combine(pre_scores[r], scores[r * width + d]), r, id));
                }
            }
        }
        cands.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap().then(b.1.cmp(&a.1)));
        cands.truncate(beam);
        if cands.iter().all(|c| c.2 == end && pre_ids[c.1] == end) {
            continue;
        }
        for c in cands {
            per_row[c.1].push((c.2, c.0));
        }
    }
    let (mut ids_out, mut sc, mut par, mut offsets) = (Vec::new(), Vec::new(), Vec::new(), vec![0]);
    for (r, items) in per_row.iter().enumerate() {
        for &(id, score) in items {
            ids_out.push(id);
            sc.push(score);
            par.push(r as i32);
        }
        offsets.push(ids_out.len());
    }
    (ids_out, sc, par, offsets)
}

fn random_step_lod(rng: &mut Rng, sources: usize) -> Lod {
    let top: Vec<usize> = (0..sources).map(|_| rng.below(4)).collect();
    let below: Vec<usize> = (0..top.iter().sum::<usize>()).map(|_| rng.below(3)).collect();
    Lod::from_lengths(&[top, below]).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::rounds(96) as u32, ..ProptestConfig::default() })]

    #[test]
    fn beam_search_step_matches_a_plain_reference(
        seed: u64, many: bool, beam in 1usize..6, width in 1usize..7, with_ids: bool, accumulated: bool
    ) {
        let mut rng = Rng(seed | 1);
        let sources = if many { 1000 + rng.below(2000) } else { 1 + rng.below(6) };
        let lod = random_step_lod(&mut rng, sources);
        let rows = lod.rows().unwrap();
        let h = lod.abs_offsets()[0].clone();
        let pre: Vec<i64> = (0..rows).map(|_| if rng.below(3) == 0 { 0 } else { 1 + rng.below(9) as i64 }).collect();
        let cand: Vec<i64> = (0..rows * width).map(|_| rng.below(10) as i64).collect();
        let ps: Vec<f32> = (0..rows).map(|_| -rng.unit() * 3.0).collect();
        let sc: Vec<f32> = (0..rows * width).map(|_| rng.unit() * 0.999 + 0.0005).collect();
        let ids_t = LoDTensor::new(Tensor::from_slice(&cand, &[rows, width]).unwrap(), lod.clone()).unwrap();
        let ids_arg = if with_ids { Some(&ids_t) } else { None };
        let ids_ref = if with_ids { Some(cand.as_slice()) } else { None };
        // float32, both modes.
        let scores = LoDTensor::new(Tensor::from_slice(&sc, &[rows, width]).unwrap(), lod.clone()).unwrap();
        let out = beam_search_step(&dense(&pre, &[rows]), &dense(&ps, &[rows, 1]), ids_arg, &scores, 0, beam, 0, accumulated).unwrap();
        let combine = |p: f32, s: f32| if accumulated { s } else { p + s.ln() };
        let (wi, ws, wp, wc) = ref_step(&h, &pre, &ps, ids_ref, &sc, width, beam, 0, combine);
        prop_assert_eq!(v::<i64>(&out.selected_ids), wi);
        prop_assert_eq!(v::<f32>(&out.selected_scores), ws);
        prop_assert_eq!(out.parent_idx.as_slice::<i32>().unwrap(), wp.as_slice());
        prop_assert_eq!(out.selected_ids.lod().levels(), &[h.clone(), wc]);
        // float64.
        let ps64: Vec<f64> = ps.iter().map(|&x| x as f64).collect();
        let sc64: Vec<f64> = sc.iter().map(|&x| x as f64).collect();
        let scores = LoDTensor::new(Tensor::from_slice(&sc64, &[rows, width]).unwrap(), lod).unwrap();
        let out = beam_search_step(&dense(&pre, &[rows]), &dense(&ps64, &[rows]), ids_arg, &scores, 0, beam, 0, accumulated).unwrap();
        let combine = |p: f64, s: f64| if accumulated { s } else { p + s.ln() };
        let (wi, ws, _, wc) = ref_step(&h, &pre, &ps64, ids_ref, &sc64, width, beam, 0, combine);
        prop_assert_eq!(v::<i64>(&out.selected_ids), wi);
        prop_assert_eq!(v::<f64>(&out.selected_scores), ws);
        prop_assert_eq!(out.selected_scores.lod().levels(), &[h, wc]);
    }
}

// ---- the fused step against top_k + beam_search -----------------------------------------------

/// Random 2-level LoD (source -> groups -> rows), pre_ids with finished rows, log-probs with ties.
fn fused_case(seed: u64, beam: usize) -> (LoDTensor, Vec<f32>, Vec<f32>, usize) {
    let mut rng = Rng(seed | 1);
    let sources = 1 + rng.below(5);
    let top: Vec<usize> = (0..sources).map(|_| rng.below(4)).collect();
    let groups: usize = top.iter().sum();
    let below: Vec<usize> = (0..groups).map(|_| rng.below(3)).collect();
    let rows: usize = below.iter().sum();
    let vocab = beam + rng.below(20);
    let pre: Vec<i64> = (0..rows).map(|_| if rng.below(4) == 0 { 0 } else { rng.below(vocab) as i64 }).collect();
    let pre_ids =
        LoDTensor::new(Tensor::from_slice(&pre, &[rows, 1]).unwrap(), Lod::from_lengths(&[top, below]).unwrap())
            .unwrap();
    let pre_scores: Vec<f32> = (0..rows).map(|_| -(rng.below(4) as f32) * 0.5).collect();
    let lp: Vec<f32> = (0..rows * vocab).map(|_| -(rng.below(6) as f32) * 0.25).collect();
    (pre_ids, pre_scores, lp, vocab)
}

fn unfused<T: Element + lodtensor::dtype::Scalar>(
    pre_ids: &LoDTensor,
    pre_scores: &[f32],
    lp: &[T],
    vocab: usize,
    beam: usize,
) -> lodtensor::BeamSearchStep {
    let rows = pre_scores.len();
    let (val, idx) = top_k(&dense(lp, &[rows, vocab]), beam, true).unwrap();
    let val = v::<T>(&val);
    let accu: Vec<f32> = (0..rows * beam).map(|i| pre_scores[i / beam] + val[i].to_f64() as f32).collect();
    let lod = pre_ids.lod().levels().to_vec();
    let scores = lt(&accu, &[rows, beam], lod.clone());
    let ids = LoDTensor::new(idx.tensor().clone(), Lod::from_offsets(lod).unwrap()).unwrap();
    beam_search_step(pre_ids, &dense(pre_scores, &[rows]), Some(&ids), &scores, 0, beam, 0, true).unwrap()
}

/// The fused step on `lp` as float32, float16 and bfloat16 equals top_k + beam_search on the same
/// values.
fn fused_agrees_in_every_dtype(pre_ids: &LoDTensor, pre_scores: &[f32], lp: &[f32], vocab: usize, beam: usize) {
    let rows = pre_scores.len();
    let ps = dense(pre_scores, &[rows, 1]);
    let fused = beam_search_fused_step(pre_ids, &ps, &dense(lp, &[rows, vocab]), beam, 0).unwrap();
    same_step(&fused, &unfused(pre_ids, pre_scores, lp, vocab, beam));
    let lp16: Vec<f16> = lp.iter().map(|&x| f16::from_f32(x)).collect();
    let fused = beam_search_fused_step(pre_ids, &ps, &dense(&lp16, &[rows, vocab]), beam, 0).unwrap();
    same_step(&fused, &unfused(pre_ids, pre_scores, &lp16, vocab, beam));
    let lpb: Vec<bf16> = lp.iter().map(|&x| bf16::from_f32(x)).collect();
    let fused = beam_search_fused_step(pre_ids, &ps, &dense(&lpb, &[rows, vocab]), beam, 0).unwrap();
    same_step(&fused, &unfused(pre_ids, pre_scores, &lpb, vocab, beam));
}

fn same_step(a: &lodtensor::BeamSearchStep, b: &lodtensor::BeamSearchStep) {
    assert_eq!(v::<i64>(&a.selected_ids), v::<i64>(&b.selected_ids));
    let bits = |t: &LoDTensor| v::<f32>(t).iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&a.selected_scores), bits(&b.selected_scores), "scores, bit for bit (NaN included)");
    assert_eq!(a.parent_idx.as_slice::<i32>().unwrap(), b.parent_idx.as_slice::<i32>().unwrap());
    assert_eq!(a.selected_ids.lod(), b.selected_ids.lod());
    assert_eq!(a.selected_scores.lod(), b.selected_scores.lod());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::rounds(200) as u32, ..ProptestConfig::default() })]

    #[test]
    fn fused_step_agrees_with_top_k_then_beam_search(seed: u64, beam in 1usize..6) {
        let (pre_ids, pre_scores, lp, vocab) = fused_case(seed, beam);
        fused_agrees_in_every_dtype(&pre_ids, &pre_scores, &lp, vocab, beam);
    }
}

#[test]
fn fused_step_continuous_values_and_threads() {
    let mut rng = Rng(11);
    let (sources, beam, vocab) = (3000, 4, 50);
    let rows = sources * beam;
    let lod = vec![(0..=sources).map(|s| s * beam).collect::<Vec<_>>(), (0..=rows).collect()];
    let pre: Vec<i64> =
        (0..rows).map(|_| if rng.below(10) == 0 { 0 } else { 1 + rng.below(vocab - 1) as i64 }).collect();
    let pre_ids = lt(&pre, &[rows, 1], lod);
    let pre_scores: Vec<f32> = (0..rows).map(|_| -rng.unit() * 4.0).collect();
    let lp: Vec<f32> = (0..rows * vocab).map(|_| rng.unit().max(1e-6).ln()).collect();
    let (ps, x) = (dense(&pre_scores, &[rows]), dense(&lp, &[rows, vocab]));
    let ((a, a_unfused), (b, b_unfused)) = with_1_and_4_threads(|| {
        (beam_search_fused_step(&pre_ids, &ps, &x, beam, 0).unwrap(), unfused(&pre_ids, &pre_scores, &lp, vocab, beam))
    });
    same_step(&a, &b);
    same_step(&a_unfused, &b_unfused);
    same_step(&a, &a_unfused);
}

// Long rows, several rows per source: once a source's list is full, a row only needs its leading
// entries that can still enter it (a bar from the list's last score), so these cases cover that
// bar: sums that round onto the last score, ties, NaN and infinities in rows and in pre-scores,
// finished rows, beams above and below the threshold path's k, and the three log-prob dtypes.
#[test]
fn fused_step_long_rows_agree_with_top_k_then_beam_search() {
    let mut rng = Rng(0xbea4);
    for (vocab, beam, per_source, sources) in [(5000, 10, 10, 3), (1500, 4, 6, 4), (700, 16, 5, 2), (3000, 17, 3, 2)] {
        let rows = sources * per_source;
        let lod = vec![(0..=sources).map(|s| s * per_source).collect::<Vec<_>>(), (0..=rows).collect()];
        for pattern in 0..6 {
            let (pre_scores, lp): (Vec<f32>, Vec<f32>) = match pattern {
                // Continuous log-probs and cumulative scores.
                0 => (
                    (0..rows).map(|_| -rng.unit() * 10.0).collect(),
                    (0..rows * vocab).map(|_| -rng.unit() * 20.0).collect(),
                ),
                // Coarse values: many equal scores across rows and within them.
                1 => (
                    (0..rows).map(|_| -(rng.below(4) as f32) * 0.5).collect(),
                    (0..rows * vocab).map(|_| -(rng.below(40) as f32) * 0.25).collect(),
                ),
                // Large scores, tiny log-prob differences: most sums round, many onto one another.
                2 => (
                    (0..rows).map(|_| -1000.0 - rng.unit() * 1e-3).collect(),
                    (0..rows * vocab).map(|_| -rng.unit() * 1e-3).collect(),
                ),
                // NaN, infinities and banned tokens in the rows.
                3 => (
                    (0..rows).map(|_| -rng.unit() * 3.0).collect(),
                    (0..rows * vocab)
                        .map(|_| match rng.below(500) {
                            0 => f32::NAN,
                            1 => f32::INFINITY,
                            2..=60 => f32::NEG_INFINITY,
                            _ => -rng.unit() * 5.0,
                        })
                        .collect(),
                ),
                // A NaN in some rows only: offered first, a NaN score ends up last in the source
                // list, where it rejects nothing below it.
                4 => (
                    (0..rows).map(|_| -rng.unit() * 10.0).collect(),
                    (0..rows * vocab)
                        .map(|i| if (i / vocab) % 3 == 1 && i % vocab == 7 { f32::NAN } else { -rng.unit() * 20.0 })
                        .collect(),
                ),
                // Non-finite cumulative scores.
                _ => (
                    (0..rows)
                        .map(|_| match rng.below(6) {
                            0 => f32::NEG_INFINITY,
                            1 => f32::NAN,
                            _ => -rng.unit(),
                        })
                        .collect(),
                    (0..rows * vocab).map(|_| -rng.unit() * 8.0).collect(),
                ),
            };
            let pre: Vec<i64> =
                (0..rows).map(|_| if rng.below(8) == 0 { 0 } else { 1 + rng.below(vocab - 1) as i64 }).collect();
            fused_agrees_in_every_dtype(&lt(&pre, &[rows, 1], lod.clone()), &pre_scores, &lp, vocab, beam);
        }
    }
}

// A later row with a NaN: offered first, its NaN score becomes the list's last item, which no
// longer rejects the row's next candidate although that scores below the item the NaN displaced.
#[test]
fn fused_step_nan_in_a_later_row_displaces_the_last_item() {
    let pre_ids = lt(&[7i64, 4], &[2, 1], vec![vec![0, 2], vec![0, 1, 2]]);
    let pre_scores = [1f32, -3.0];
    let mut lp = vec![-5f32; 20];
    (lp[2], lp[9]) = (3.0, 3.0); // row 0: 4.0, 4.0 fill the list
    (lp[10], lp[17]) = (3.0, f32::NAN); // row 1: NaN, then 0.0 below the last 4.0
    let step = beam_search_fused_step(&pre_ids, &dense(&pre_scores, &[2]), &dense(&lp, &[2, 10]), 2, 1).unwrap();
    assert_eq!(v::<i64>(&step.selected_ids), [2, 0]);
    assert_eq!(v::<f32>(&step.selected_scores), [4.0, 0.0]);
    fused_agrees_in_every_dtype(&pre_ids, &pre_scores, &lp, 10, 2);
}

#[test]
fn fused_step_errors() {
    let pre_ids = lt(&[1i64, 2], &[2, 1], vec![vec![0, 2], vec![0, 1, 2]]);
    let ps = dense(&[0f32, 0.], &[2]);
    let lp = dense(&[0f32; 6], &[2, 3]);
    let inv = |r: lodtensor::Result<lodtensor::BeamSearchStep>, what: &str| match r {
        Err(Error::InvalidArgument(m)) => assert!(m.contains(what), "{m}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("accepted: {what}"),
    };
    inv(beam_search_fused_step(&pre_ids, &ps, &lp, 0, 0), "beam_size");
    inv(beam_search_fused_step(&dense(&[1i64, 2], &[2, 1]), &ps, &lp, 2, 0), "pre_ids");
    inv(beam_search_fused_step(&pre_ids, &dense(&[0f32], &[1]), &lp, 2, 0), "pre_scores");
    inv(beam_search_fused_step(&pre_ids, &ps, &dense(&[0f32; 6], &[6]), 2, 0), "log_probs");
    inv(beam_search_fused_step(&pre_ids, &ps, &dense(&[0f32; 6], &[3, 2]), 2, 0), "log_probs");
    assert!(matches!(
        beam_search_fused_step(&pre_ids, &ps, &dense(&[0f64; 6], &[2, 3]), 2, 0),
        Err(Error::Unsupported(_))
    ));
    assert!(matches!(
        beam_search_fused_step(&pre_ids, &dense(&[0f64; 2], &[2]), &lp, 2, 0),
        Err(Error::Unsupported(_))
    ));
    // A vocabulary smaller than the beam: every token is a candidate.
    let out = beam_search_fused_step(&pre_ids, &ps, &dense(&[-1f32, -2., -3., -0.5, -9., -9.], &[2, 3]), 8, 0).unwrap();
    assert_eq!(v::<i64>(&out.selected_ids), vec![0, 1, 2, 0, 1, 2]);
}

// ---- state reordering ---------------------------------------------------------------------------

#[test]
fn gather_state_equals_sequence_expand_by_the_selected_lod() {
    let c = case2(vec![1, 0, 0, 4], vec![0.1, 1.2, 0.5, 0.4], vec![0.6, 0.9, 0.5, 0.3, 0.9, 0.5, 0.6, 0.7]);
    let out = beam_search_step(
        &dense(&c.pre_ids, &[4]),
        &dense(&c.pre_scores, &[4]),
        Some(&lt(&c.ids, &[4, 2], lod2())),
        &lt(&c.scores, &[4, 2], lod2()),
        0,
        2,
        0,
        true,
    )
    .unwrap();
    let state = dense(&[10i16, 11, 20, 21, 30, 31, 40, 41], &[4, 2]);
    let parents = LoDTensor::dense(out.parent_idx.clone());
    let gathered = beam_search_gather_state(&state, &parents).unwrap();
    assert_eq!(v::<i16>(&gathered), vec![10, 11, 20, 21, 40, 41, 40, 41]);
    let expanded = sequence_expand(&state, &out.selected_ids, 1).unwrap();
    assert_eq!(v::<i16>(&expanded), v::<i16>(&gathered));
    let p64 = dense(&[3i64, 0], &[2]);
    assert_eq!(v::<i16>(&beam_search_gather_state(&state, &p64).unwrap()), vec![40, 41, 10, 11]);
    assert!(
        matches!(beam_search_gather_state(&state, &dense(&[4i32], &[1])), Err(Error::OutOfRange(m)) if m.contains("parent_idx[0]"))
    );
    assert!(matches!(beam_search_gather_state(&state, &dense(&[-1i64], &[1])), Err(Error::OutOfRange(_))));
    assert!(matches!(beam_search_gather_state(&state, &dense(&[1f32], &[1])), Err(Error::Unsupported(_))));
    assert!(matches!(beam_search_gather_state(&dense(&[1f32], &[]), &p64), Err(Error::InvalidArgument(_))));
}

/// gather_states reorders each state as gather_state does (states of other dtypes, widths and
/// rows), names the first state a parent falls outside of, and returns nothing for no states.
#[test]
fn gather_states_gather_each_state_as_gather_state_does() {
    let (a, b) = (dense(&[10i16, 11, 20, 21, 30, 31, 40, 41], &[4, 2]), dense(&[1.5f64, 2.5, 3.5, 4.5, 5.5], &[5]));
    let c = dense(&[7u8, 8, 9, 10, 11, 12], &[3, 1, 2]);
    let parents = dense(&[2i32, 0, 0, 1], &[4, 1]);
    let got = beam_search_gather_states(&[&a, &b, &c], &parents).unwrap();
    assert_eq!(got.len(), 3);
    for (g, s) in got.iter().zip([&a, &b, &c]) {
        let want = beam_search_gather_state(s, &parents).unwrap();
        assert_eq!((g.dims(), g.tensor().dtype()), (want.dims(), want.tensor().dtype()));
        assert_eq!(g.tensor().bytes().unwrap(), want.tensor().bytes().unwrap());
    }
    assert_eq!(v::<f64>(&got[1]), vec![3.5, 1.5, 1.5, 2.5]);
    assert!(beam_search_gather_states(&[], &parents).unwrap().is_empty());
    // Parent 3 is a row of a and b, not of c (3 rows): c is named, as states[2].
    let r = beam_search_gather_states(&[&a, &b, &c], &dense(&[3i64, 0], &[2]));
    assert!(
        matches!(r, Err(Error::OutOfRange(ref m)) if m.contains("parent_idx[0] = 3") && m.contains("states[2]")),
        "{r:?}"
    );
    let r = beam_search_gather_states(&[&a, &dense(&[1f32], &[])], &parents);
    assert!(matches!(r, Err(Error::InvalidArgument(ref m)) if m.contains("states[1]")), "{r:?}");
    let r = beam_search_gather_states(&[&a], &dense(&[1f32], &[1]));
    assert!(matches!(r, Err(Error::Unsupported(ref m)) if m.contains("parent_idx")), "{r:?}");
}

// ---- beam_search_decode ------------------------------------------------------------------------

fn decode_example<T: Element + lodtensor::dtype::Scalar>() -> (TensorArray, TensorArray) {
    let steps: Vec<(Vec<Vec<usize>>, Vec<i64>)> = vec![
        (vec![vec![0, 1, 2], vec![0, 1, 2]], vec![0, 0]),
        (vec![vec![0, 1, 2], vec![0, 2, 4]], vec![2, 3, 4, 5]),
        (vec![vec![0, 2, 4], vec![0, 2, 2, 4, 4]], vec![3, 1, 5, 4]),
        (vec![vec![0, 2, 4], vec![0, 1, 2, 3, 4]], vec![1, 1, 3, 5]),
        (vec![vec![0, 2, 4], vec![0, 0, 0, 2, 2]], vec![5, 1]),
    ];
    let (mut ids, mut scores) = (TensorArray::new(), TensorArray::new());
    for (lod, data) in steps {
        let n = data.len();
        let s: Vec<T> = data.iter().map(|&x| T::cast_f64(x as f64)).collect();
        ids.push(lt(&data, &[n, 1], lod.clone()));
        scores.push(lt(&s, &[n, 1], lod));
    }
    (ids, scores)
}

fn check_decode_example<T: Element + lodtensor::dtype::Scalar>() {
    let (ids, scores) = decode_example::<T>();
    let (si, ss) = beam_search_decode(&ids, &scores, 2, 1).unwrap();
    let want = vec![0i64, 2, 3, 1, 0, 2, 1, 0, 4, 5, 3, 5, 0, 4, 5, 3, 1];
    assert_eq!(v::<i64>(&si), want);
    assert_eq!(v::<T>(&ss).iter().map(|x| x.to_f64() as i64).collect::<Vec<_>>(), want);
    assert_eq!(si.lod().levels(), &[vec![0, 2, 4], vec![0, 4, 7, 12, 17]]);
    assert_eq!(ss.lod(), si.lod());
}

#[test]
fn beam_search_decode_worked_example_every_dtype() {
    check_decode_example::<f32>();
    check_decode_example::<f64>();
    check_decode_example::<f16>();
    check_decode_example::<bf16>();
    check_decode_example::<i32>();
    check_decode_example::<i64>();
}

#[test]
fn beam_search_decode_keeps_the_order_of_equal_scores() {
    // Sentences of equal final scores keep their slots' order (a stable sort by `>`), -0 and +0
    // included; a higher score still goes first.
    let ids = TensorArray::from_vec(vec![lt(&[5i64, 6, 7], &[3], vec![vec![0, 3], vec![0, 1, 2, 3]])]);
    for (finals, want) in [
        ([-0.0f64, 0.0, -1.0], [5i64, 6, 7]),
        ([0.0, -0.0, -1.0], [5, 6, 7]),
        ([-1.0, -0.0, 0.0], [6, 7, 5]),
        ([2.0, 3.0, 2.0], [6, 5, 7]),
    ] {
        let lod = vec![vec![0, 3], vec![0, 1, 2, 3]];
        let f32s = TensorArray::from_vec(vec![lt(&finals.map(|x| x as f32), &[3], lod.clone())]);
        let f64s = TensorArray::from_vec(vec![lt(&finals, &[3], lod)]);
        for scores in [f32s, f64s] {
            let (si, _) = beam_search_decode(&ids, &scores, 3, 1).unwrap();
            assert_eq!(v::<i64>(&si), want, "final scores {finals:?}");
        }
    }
}

#[test]
fn beam_search_decode_empty_slots_last_and_errors() {
    // One source, beam 3, a single candidate: two empty sentences after it.
    let ids = TensorArray::from_vec(vec![lt(&[7i64], &[1], vec![vec![0, 1], vec![0, 1]])]);
    let scores = TensorArray::from_vec(vec![lt(&[0.5f32], &[1], vec![vec![0, 1], vec![0, 1]])]);
    let (si, _) = beam_search_decode(&ids, &scores, 3, 1).unwrap();
    assert_eq!(si.lod().levels(), &[vec![0, 3], vec![0, 1, 1, 1]]);
    let inv = |r: lodtensor::Result<(LoDTensor, LoDTensor)>, what: &str| match r {
        Err(Error::InvalidArgument(m)) => assert!(m.contains(what), "{m}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("accepted: {what}"),
    };
    inv(beam_search_decode(&ids, &scores, 0, 1), "beam_size");
    inv(beam_search_decode(&TensorArray::new(), &TensorArray::new(), 2, 1), "ids");
    inv(beam_search_decode(&ids, &TensorArray::new(), 2, 1), "scores");
    let (ids2, scores2) = decode_example::<f32>();
    inv(beam_search_decode(&ids2, &scores2, 1, 1), "beam_size = 1");
    let one = TensorArray::from_vec(vec![lt(&[7i64], &[1], vec![vec![0, 1]])]);
    inv(beam_search_decode(&one, &scores, 2, 1), "exactly 2");
    let other_lod = TensorArray::from_vec(vec![lt(&[0.5f32, 1.], &[2], vec![vec![0, 1], vec![0, 2]])]);
    inv(beam_search_decode(&ids, &other_lod, 2, 1), "scores");
    let bools = TensorArray::from_vec(vec![LoDTensor::new(
        Tensor::zeros(lodtensor::DType::Bool, lodtensor::Dim::new(&[1]).unwrap()).unwrap(),
        Lod::from_offsets(vec![vec![0, 1], vec![0, 1]]).unwrap(),
    )
    .unwrap()]);
    inv(beam_search_decode(&ids, &bools, 2, 1), "bool");
    let i8s = TensorArray::from_vec(vec![lt(&[1i8], &[1], vec![vec![0, 1], vec![0, 1]])]);
    assert!(matches!(beam_search_decode(&ids, &i8s, 2, 1), Err(Error::Unsupported(_))));
    // Steps with different numbers of sources.
    let (mut ids3, mut scores3) = decode_example::<f32>();
    ids3.push(lt(&[1i64], &[1], vec![vec![0, 1], vec![0, 1]]));
    scores3.push(lt(&[1f32], &[1], vec![vec![0, 1], vec![0, 1]]));
    inv(beam_search_decode(&ids3, &scores3, 2, 1), "source");
    // Every step is checked before any is decoded: int32 ids at step 0 are reported even though
    // step 4, decoded first, has more candidates than beam_size = 1.
    let (mut ids4, scores4) = decode_example::<f32>();
    ids4.write(0, lt(&[0i32, 0], &[2, 1], vec![vec![0, 1, 2], vec![0, 1, 2]])).unwrap();
    match beam_search_decode(&ids4, &scores4, 1, 1) {
        Err(Error::Unsupported(m)) => assert!(m.contains("element 0") && m.contains("int64"), "{m}"),
        other => panic!("{other:?}"),
    }
    // Every source gets beam_size sentences: a beam_size whose sentences cannot be counted, or
    // held, is refused before anything is allocated.
    for beam in [usize::MAX, usize::MAX / 4] {
        assert!(
            matches!(beam_search_decode(&ids, &scores, beam, 1), Err(Error::OutOfMemory(m)) if m.contains("beam_size")),
            "beam_size {beam}"
        );
    }
}

// ---- gather_tree -------------------------------------------------------------------------------

#[test]
fn gather_tree_worked_example_and_errors() {
    let ids = [2i64, 2, 6, 1, 3, 9, 6, 1, 0, 1, 9, 0];
    let parents = [0i64, 0, 1, 1, 1, 0, 1, 0, 0, 0, 0, 1];
    let out = beam_search_gather_tree(&dense(&ids, &[3, 2, 2]), &dense(&parents, &[3, 2, 2])).unwrap();
    assert_eq!(v::<i64>(&out), vec![2, 2, 1, 6, 3, 3, 6, 1, 0, 1, 9, 0]);
    let ids32: Vec<i32> = ids.iter().map(|&x| x as i32).collect();
    let par32: Vec<i32> = parents.iter().map(|&x| x as i32).collect();
    let out = beam_search_gather_tree(&dense(&ids32, &[3, 2, 2]), &dense(&par32, &[3, 2, 2])).unwrap();
    assert_eq!(v::<i32>(&out), vec![2, 2, 1, 6, 3, 3, 6, 1, 0, 1, 9, 0]);
    let empty = beam_search_gather_tree(&dense::<i64>(&[], &[0, 2, 2]), &dense::<i64>(&[], &[0, 2, 2])).unwrap();
    assert_eq!(empty.dims().as_slice(), &[0, 2, 2]);
    // No batch entries, or a beam of 0: nothing to follow, an empty result of the same shape.
    for dims in [[3, 0, 2], [3, 2, 0]] {
        let none = beam_search_gather_tree(&dense::<i64>(&[], &dims), &dense::<i64>(&[], &dims)).unwrap();
        assert_eq!(none.dims().as_slice(), &dims);
    }
    let mut bad = parents;
    bad[10] = 2; // followed from t = 2
    assert!(matches!(
        beam_search_gather_tree(&dense(&ids, &[3, 2, 2]), &dense(&bad, &[3, 2, 2])),
        Err(Error::OutOfRange(m)) if m.contains("parents[2][1][0] = 2")
    ));
    let mut neg = parents;
    neg[4] = -1;
    assert!(matches!(
        beam_search_gather_tree(&dense(&ids, &[3, 2, 2]), &dense(&neg, &[3, 2, 2])),
        Err(Error::OutOfRange(_))
    ));
    let mut unused = parents;
    unused[0] = 9; // parents[0] is never followed
    assert!(beam_search_gather_tree(&dense(&ids, &[3, 2, 2]), &dense(&unused, &[3, 2, 2])).is_ok());
    assert!(matches!(
        beam_search_gather_tree(&dense(&ids, &[3, 4]), &dense(&parents, &[3, 4])),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        beam_search_gather_tree(&dense(&ids, &[3, 2, 2]), &dense(&parents, &[3, 4, 1])),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        beam_search_gather_tree(&dense(&ids, &[3, 2, 2]), &dense(&par32, &[3, 2, 2])),
        Err(Error::InvalidArgument(_))
    ));
    let f: Vec<f32> = ids.iter().map(|&x| x as f32).collect();
    assert!(matches!(
        beam_search_gather_tree(&dense(&f, &[3, 2, 2]), &dense(&f, &[3, 2, 2])),
        Err(Error::Unsupported(_))
    ));
}

// ---- the decoder -------------------------------------------------------------------------------

/// The toy model: log-softmax of pseudo-random logits that depend on the source and the whole
/// history, computed in f32 the same way for the decoder and the references.
fn model(source: usize, history: &[i64], vocab: usize) -> Vec<f32> {
    let mut h = 0x9e37_79b9_7f4a_7c15u64 ^ (source as u64 * 0x1000_0001);
    for &t in history {
        h = (h ^ (t as u64 + 1)).wrapping_mul(0x2545_f491_4f6c_dd1d);
    }
    let logits: Vec<f32> = (0..vocab)
        .map(|v| {
            let mut x = (h ^ (v as u64 * 0x9e37_79b9)).wrapping_mul(0xd6e8_feb8_6659_fd93);
            x ^= x >> 29;
            ((x >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        })
        .collect();
    let max = logits.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
    let lse = max + logits.iter().map(|&l| (l - max).exp()).sum::<f32>().ln();
    logits.iter().map(|&l| l - lse).collect()
}

/// Runs the decoder with the toy model: the callback tracks each prefix's source and history by
/// following parent_idx.
fn decode_with_model(opts: &DecoderOptions, sources: usize, ban: Option<i64>) -> (Vec<Vec<Vec<i64>>>, Vec<Vec<f32>>) {
    let dec = Decoder::new(opts.clone()).unwrap();
    let mut hist: Vec<(usize, Vec<i64>)> = Vec::new();
    let vocab = opts.vocab_size;
    let mut step = |info: &StepInfo, lp: &mut [f32]| -> lodtensor::Result<()> {
        let prev = std::mem::take(&mut hist);
        hist = (0..info.ids.len())
            .map(|i| {
                let p = info.parent_idx[i] as usize;
                if info.step == 0 {
                    (p, Vec::new())
                } else {
                    let mut h = prev[p].1.clone();
                    h.push(info.ids[i]);
                    (prev[p].0, h)
                }
            })
            .collect();
        for (i, (s, h)) in hist.iter().enumerate() {
            lp[i * vocab..(i + 1) * vocab].copy_from_slice(&model(*s, h, vocab));
        }
        Ok(())
    };
    let mut banner = |_: &StepInfo, lp: &mut [f32]| -> lodtensor::Result<()> {
        for row in lp.chunks_exact_mut(vocab) {
            row[ban.unwrap() as usize] = f32::NEG_INFINITY;
        }
        Ok(())
    };
    let out = dec.run(sources, &mut step, if ban.is_some() { Some(&mut banner) } else { None }).unwrap();
    let ids = v::<i64>(&out.ids);
    let scores = v::<f32>(&out.scores);
    let (l0, l1) = (&out.ids.lod().levels()[0], &out.ids.lod().levels()[1]);
    assert_eq!(out.scores.lod().levels()[0], *l0);
    let sents = (0..sources).map(|s| (l0[s]..l0[s + 1]).map(|k| ids[l1[k]..l1[k + 1]].to_vec()).collect()).collect();
    let sc = (0..sources).map(|s| scores[l0[s]..l0[s + 1]].to_vec()).collect();
    (sents, sc)
}

fn penalized(raw: f32, len: usize, lp: f64) -> f32 {
    if lp == 0.0 {
        raw
    } else {
        (raw as f64 / ((5.0 + len as f64) / 6.0).powf(lp)) as f32
    }
}

/// Every sentence (ended by end_id, or max_length long), scored plainly, best first.
fn exhaustive(opts: &DecoderOptions, source: usize) -> Vec<(Vec<i64>, f32)> {
    fn walk(o: &DecoderOptions, s: usize, h: &mut Vec<i64>, score: f32, out: &mut Vec<(Vec<i64>, f32)>) {
        if h.len() == o.max_length || h.last() == Some(&o.end_id) {
            out.push((h.clone(), penalized(score, h.len(), o.length_penalty)));
            return;
        }
        let mut full = vec![o.start_id];
        full.extend_from_slice(h);
        let lp = model(s, &full[1..], o.vocab_size);
        for (t, &l) in lp.iter().enumerate() {
            if t as i64 == o.end_id && h.len() < o.min_length {
                continue;
            }
            h.push(t as i64);
            walk(o, s, h, score + l, out);
            h.pop();
        }
    }
    let mut out = Vec::new();
    walk(opts, source, &mut Vec::new(), 0.0, &mut out);
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out
}

#[test]
fn decoder_with_a_wide_beam_equals_exhaustive_search() {
    for (min_length, length_penalty) in [(0, 0.0), (2, 1.0), (1, 0.6)] {
        let opts = DecoderOptions {
            beam_size: 128,
            vocab_size: 4,
            start_id: 0,
            end_id: 1,
            max_length: 4,
            min_length,
            length_penalty,
            num_hypotheses: 5,
        };
        let (sents, scores) = decode_with_model(&opts, 3, None);
        for s in 0..3 {
            let want = exhaustive(&opts, s);
            assert_eq!(sents[s].len(), 5);
            for k in 0..5 {
                assert_eq!(sents[s][k], want[k].0, "source {s} rank {k}");
                assert_eq!(scores[s][k], want[k].1, "source {s} rank {k}");
            }
        }
    }
}

#[test]
fn decoder_with_beam_1_is_greedy() {
    let opts =
        DecoderOptions { beam_size: 1, vocab_size: 30, start_id: 0, end_id: 2, max_length: 12, ..Default::default() };
    let (sents, scores) = decode_with_model(&opts, 5, None);
    for s in 0..5 {
        let (mut h, mut score) = (Vec::new(), 0f32);
        while h.len() < opts.max_length && h.last() != Some(&opts.end_id) {
            let lp = model(s, &h, opts.vocab_size);
            let best = (0..lp.len()).fold(0, |b, t| if lp[t] > lp[b] { t } else { b });
            score += lp[best];
            h.push(best as i64);
        }
        assert_eq!(sents[s], vec![h]);
        assert_eq!(scores[s], vec![score]);
    }
}

#[test]
fn decoder_edit_callback_bans_a_token_and_errors_stop_it() {
    let opts = DecoderOptions {
        beam_size: 4,
        vocab_size: 6,
        start_id: 0,
        end_id: 1,
        max_length: 6,
        num_hypotheses: 4,
        ..Default::default()
    };
    let (sents, _) = decode_with_model(&opts, 2, Some(3));
    assert!(sents.iter().flatten().all(|s| !s.contains(&3) && !s.is_empty()));
    assert!(sents.iter().flatten().all(|s| s.len() == 6 || s.last() == Some(&1)));
    let dec = Decoder::new(opts.clone()).unwrap();
    let mut calls = 0;
    let mut failing = |info: &StepInfo, lp: &mut [f32]| -> lodtensor::Result<()> {
        calls += 1;
        lp.fill(-1.0);
        if info.step == 2 {
            return Err(Error::CallbackFailed("model failed".into()));
        }
        Ok(())
    };
    assert!(matches!(dec.run(2, &mut failing, None), Err(Error::CallbackFailed(m)) if m == "model failed"));
    assert_eq!(calls, 3);
    let mut ok = |_: &StepInfo, lp: &mut [f32]| -> lodtensor::Result<()> {
        lp.fill(-1.0);
        Ok(())
    };
    assert!(matches!(dec.run(0, &mut ok, None), Err(Error::InvalidArgument(m)) if m.contains("num_sources")));
    let bad = |o: DecoderOptions, what: &str| match Decoder::new(o) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains(what), "{m}"),
        _ => panic!("accepted: {what}"),
    };
    bad(DecoderOptions { beam_size: 0, ..opts.clone() }, "beam_size");
    bad(DecoderOptions { vocab_size: 0, ..opts.clone() }, "vocab_size");
    bad(DecoderOptions { max_length: 0, ..opts.clone() }, "max_length");
    bad(DecoderOptions { end_id: 6, ..opts.clone() }, "end_id");
    bad(DecoderOptions { start_id: 1, ..opts.clone() }, "start_id");
    bad(DecoderOptions { min_length: 7, ..opts.clone() }, "min_length");
    bad(DecoderOptions { length_penalty: f64::NAN, ..opts.clone() }, "length_penalty");
    bad(DecoderOptions { num_hypotheses: 5, ..opts.clone() }, "num_hypotheses");
    bad(DecoderOptions { num_hypotheses: 0, ..opts }, "num_hypotheses");
}

/// Counts too large for memory are OutOfMemory before anything is allocated for them, never a
/// panic or an abort: the sources' first beams, and one source's log-probs over a vast vocabulary.
#[test]
fn decoder_sizes_beyond_memory_are_out_of_memory() {
    let opts = DecoderOptions { beam_size: 2, vocab_size: 6, end_id: 1, max_length: 3, ..Default::default() };
    let mut never = |_: &StepInfo, _: &mut [f32]| -> lodtensor::Result<()> { panic!("no step should run") };
    let dec = Decoder::new(opts.clone()).unwrap();
    assert!(matches!(dec.run(1 << 62, &mut never, None), Err(Error::OutOfMemory(m)) if m.contains("num_sources")));
    let vast = Decoder::new(DecoderOptions { vocab_size: 1 << 62, ..opts }).unwrap();
    assert!(matches!(vast.run(1, &mut never, None), Err(Error::OutOfMemory(m)) if m.contains("log_probs")));
}

/// The speed target of the fused step: the fused step on 64 sources x beam 5 x 32000 f32 at one thread
/// against one plain read (a sum) of the same logits. Run with
/// `cargo test --release --test beam_search -- --ignored --nocapture fused_step_speed`.
#[test]
#[ignore]
fn fused_step_speed() {
    let (sources, beam, vocab) = (64, 5, 32000);
    let rows = sources * beam;
    let mut rng = Rng(5);
    let lp: Vec<f32> = (0..rows * vocab).map(|_| rng.unit().max(1e-9).ln() - 10.0).collect();
    let lod = vec![(0..=sources).map(|s| s * beam).collect::<Vec<_>>(), (0..=rows).collect()];
    let pre_ids = lt(&vec![7i64; rows], &[rows, 1], lod);
    let ps: Vec<f32> = (0..rows).map(|_| -rng.unit() * 5.0).collect();
    let (ps, x) = (dense(&ps, &[rows]), dense(&lp, &[rows, vocab]));
    set_num_threads(1).unwrap();
    let data = x.tensor().as_slice::<f32>().unwrap();
    // The baseline is a fast read: 16 independent accumulators, so the sum vectorizes (a plain
    // `iter().sum()` is a serial dependency chain and several times slower than memory).
    let mut read_fn = || {
        let mut acc = [0f32; 16];
        let mut chunks = data.chunks_exact(16);
        for c in &mut chunks {
            for (a, &x) in acc.iter_mut().zip(c) {
                *a += x;
            }
        }
        acc.iter().sum::<f32>() + chunks.remainder().iter().sum::<f32>()
    };
    let mut naive_fn = || data.iter().sum::<f32>();
    let mut fused_fn = || {
        let out = beam_search_fused_step(&pre_ids, &ps, &x, beam, 1).unwrap();
        out.selected_scores.tensor().as_slice::<f32>().unwrap()[0]
    };
    let mut topk_fn = || v::<f32>(&top_k(&x, beam, true).unwrap().0)[0];
    let x16 = dense(&lp.iter().map(|&l| f16::from_f32(l)).collect::<Vec<_>>(), &[rows, vocab]);
    let mut fused16_fn = || {
        let out = beam_search_fused_step(&pre_ids, &ps, &x16, beam, 1).unwrap();
        out.selected_scores.tensor().as_slice::<f32>().unwrap()[0]
    };
    // Interleaved, so a burst of load from other processes hits every contender alike.
    let mut times = vec![Vec::new(); 5];
    for _ in 0..41 {
        let fns: [&mut dyn FnMut() -> f32; 5] =
            [&mut read_fn, &mut naive_fn, &mut fused_fn, &mut topk_fn, &mut fused16_fn];
        for (t, f) in times.iter_mut().zip(fns) {
            let start = std::time::Instant::now();
            std::hint::black_box(f());
            t.push(start.elapsed().as_secs_f64());
        }
    }
    let med: Vec<f64> = times
        .iter_mut()
        .map(|t| {
            t.sort_by(f64::total_cmp);
            t[t.len() / 2]
        })
        .collect();
    let (read, naive_read, fused, topk, fused16) = (med[0], med[1], med[2], med[3], med[4]);
    // Top-k from general sorts, per row as Paddle's v1 kernel does it (partial_sort) and as a
    // full sort would: fewer runs, they are slow.
    let sort_based = |full: bool| {
        let mut t: Vec<f64> = (0..5)
            .map(|_| {
                let start = std::time::Instant::now();
                let mut pairs: Vec<(f32, usize)> = Vec::with_capacity(vocab);
                let mut acc = 0f32;
                for row in data.chunks_exact(vocab) {
                    pairs.clear();
                    pairs.extend(row.iter().copied().zip(0..));
                    let cmp = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
                    if full {
                        pairs.sort_unstable_by(cmp);
                    } else {
                        pairs.select_nth_unstable_by(beam, cmp);
                        pairs[..beam].sort_unstable_by(cmp);
                    }
                    acc += pairs[0].0;
                }
                std::hint::black_box(acc);
                start.elapsed().as_secs_f64()
            })
            .collect();
        t.sort_by(f64::total_cmp);
        t[2]
    };
    let (partial, full) = (sort_based(false), sort_based(true));
    println!("fused step on float16 log-probs {:.3} ms (half the bytes)", fused16 * 1e3);
    println!(
        "top-k by select_nth + sort {:.3} ms ({:.1}x the fused step), by full sort {:.3} ms ({:.1}x)",
        partial * 1e3,
        partial / fused,
        full * 1e3,
        full / fused
    );
    let mb = (rows * vocab * 4) as f64 / 1e6;
    println!(
        "fused step {:.3} ms ({:.1} GB/s), vectorized read {:.3} ms ({:.1} GB/s), ratio {:.2}; \
         serial-sum read {:.3} ms; top_k alone {:.3} ms",
        fused * 1e3,
        mb / fused / 1e3,
        read * 1e3,
        mb / read / 1e3,
        fused / read,
        naive_read * 1e3,
        topk * 1e3
    );
    set_num_threads(0).unwrap();
}
