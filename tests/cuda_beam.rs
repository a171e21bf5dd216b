//! The beam-search family and the TensorArray ops on a CUDA device (the emulator here) against the
//! CPU: top_k, the fused and Paddle beam steps, gather_state, gather_tree, beam_search_decode,
//! array_to_lod_tensor, shrink_rnn_memory, tensor_array_to_tensor, unstack, TensorArray
//! read/write, and the decoder with device log-probs. Data movement, indices, selections and the
//! fused step's scores must be identical bit for bit (the device adds the same two float32s);
//! Paddle's step without accumulated scores takes `ln` on the device (CUDA's logf is within 1 ulp),
//! so its scores are compared to 2 ulp of their larger term and its ids on inputs without
//! near-ties. A NaN score is the one quiet NaN on both.

mod common;
mod cuda_common;

use common::Rng;
use cuda_common::{assert_same, bytes_of, gpu, gpu_or_skip, min_time, race_check, tensor_bytes, GPU};
use half::{bf16, f16};
use lodtensor::backend::cuda::StepSources;
use lodtensor::ops::gather_rows;
use lodtensor::{
    array_to_lod_tensor, beam_search_decode, beam_search_fused_step, beam_search_gather_state, beam_search_gather_tree,
    beam_search_step, cuda_device_count, dynamic_rnn, shrink_rnn_memory, tensor_array_to_tensor, to_place, top_k,
    unstack, DType, Decoder, DecoderOptions, Dim, Element, Error, Hypotheses, LoDTensor, Lod, Place, RankTable, Tensor,
    TensorArray,
};

/// Small integers (ties everywhere), with NaN, -inf and +inf now and then.
fn tie_heavy(rng: &mut Rng, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| match rng.below(40) {
            0 => f32::NAN,
            1 | 2 => f32::NEG_INFINITY,
            3 => f32::INFINITY,
            4 => -0.0,
            _ => rng.below(7) as f32 - 3.0,
        })
        .collect()
}

/// Values spread over [-10, 0) with no NaN and few ties (one in 16 rounded to a whole number), so
/// that most sources of a step have no tie at their last place: the selection's path by rank.
fn spread(rng: &mut Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| if rng.below(16) == 0 { -(rng.below(10) as f32) } else { -10.0 * rng.unit() }).collect()
}

/// `values` (f32) in `dtype`, rows of `width`.
fn tensor_of(dtype: DType, values: &[f32], dims: &[usize]) -> Tensor {
    fn conv<T: Element>(v: &[f32], f: impl Fn(f32) -> T, dims: &[usize]) -> Tensor {
        Tensor::from_slice(&v.iter().map(|&x| f(x)).collect::<Vec<T>>(), dims).unwrap()
    }
    let int = |x: f32| if x.is_nan() { 0.0 } else { x.clamp(-100.0, 100.0) };
    match dtype {
        DType::U8 => conv(values, |x| (int(x) + 100.0) as u8, dims),
        DType::I8 => conv(values, |x| int(x) as i8, dims),
        DType::I16 => conv(values, |x| int(x) as i16, dims),
        DType::I32 => conv(values, |x| int(x) as i32, dims),
        DType::I64 => conv(values, |x| int(x) as i64, dims),
        DType::F16 => conv(values, f16::from_f32, dims),
        DType::BF16 => conv(values, bf16::from_f32, dims),
        DType::F32 => conv(values, |x| x, dims),
        DType::F64 => conv(values, |x| x as f64, dims),
        DType::Bool => {
            let bytes: Vec<u8> = values.iter().map(|&x| (x > 0.0) as u8).collect();
            Tensor::from_bytes(DType::Bool, Dim::new(dims).unwrap(), &bytes).unwrap()
        }
    }
}

fn message(r: lodtensor::Result<impl std::fmt::Debug>) -> Error {
    r.expect_err("expected an error")
}

/// Both results are errors of the same kind and message.
fn same_error<T: std::fmt::Debug>(got: lodtensor::Result<T>, want: lodtensor::Result<T>, what: &str) {
    let (g, w) = (message(got), message(want));
    assert_eq!(format!("{g:?}"), format!("{w:?}"), "{what}");
}

// ---- top_k -------------------------------------------------------------------------------------

#[test]
fn gpu_top_k_equals_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let dtypes =
        [DType::U8, DType::I8, DType::I16, DType::I32, DType::I64, DType::F16, DType::BF16, DType::F32, DType::F64];
    for case in 0..36 {
        let dtype = dtypes[case % dtypes.len()];
        let width = [1usize, 3, 17, 100, 700, 130][rng.below(6)];
        let rows = [0usize, 1, 7, 23][rng.below(4)];
        let k = match rng.below(5) {
            0 => 1,
            1 => width,
            2 => width.min(70), // more than one pass of 64
            _ => 1 + rng.below(width.min(8)),
        };
        let largest = rng.below(2) == 0;
        let values = tie_heavy(&mut rng, rows * width);
        let x = LoDTensor::dense(tensor_of(dtype, &values, &[rows, width]));
        let (wv, wi) = top_k(&x, k, largest).unwrap();
        let (gv, gi) = top_k(&gpu(&x), k, largest).unwrap();
        let what = format!("case {case}: {dtype} {rows} x {width}, k {k}, largest {largest}");
        assert_same(&gi, &wi, &what);
        assert_same(&gv, &wv, &what);
    }
    // 3-D input with a LoD: rows are all leading dims, the LoD is kept.
    let values = tie_heavy(&mut rng, 4 * 3 * 9);
    let x = LoDTensor::new(tensor_of(DType::F32, &values, &[4, 3, 9]), Lod::from_offsets(vec![vec![0, 1, 4]]).unwrap())
        .unwrap();
    let (wv, wi) = top_k(&x, 4, true).unwrap();
    let (gv, gi) = top_k(&gpu(&x), 4, true).unwrap();
    assert_same(&gv, &wv, "3-D values");
    assert_same(&gi, &wi, "3-D indices");
}

#[test]
fn gpu_top_k_errors_match_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let x = LoDTensor::dense(tensor_of(DType::F32, &[1.0, 2.0, 3.0, 4.0], &[2, 2]));
    same_error(top_k(&gpu(&x), 3, true), top_k(&x, 3, true), "k > width");
    same_error(top_k(&gpu(&x), 0, true), top_k(&x, 0, true), "k = 0");
    let b = LoDTensor::dense(tensor_of(DType::Bool, &[1.0, 0.0], &[1, 2]));
    assert!(matches!(top_k(&gpu(&b), 1, true), Err(Error::Unsupported(_))));
    same_error(top_k(&gpu(&b), 1, true), top_k(&b, 1, true), "bool");
}

// ---- beam steps --------------------------------------------------------------------------------

/// Random prefixes: `sources` sources of 0 to `longest` prefix rows each, some of them finished.
struct Prefixes {
    pre_ids: LoDTensor,
    pre_scores: LoDTensor,
    rows: usize,
}

fn prefixes(rng: &mut Rng, sources: usize, longest: usize, end_id: i64, two_levels: bool) -> Prefixes {
    let lengths: Vec<usize> =
        (0..sources).map(|_| if rng.below(5) == 0 { 0 } else { 1 + rng.below(longest) }).collect();
    let rows: usize = lengths.iter().sum();
    let ids: Vec<i64> = (0..rows).map(|_| if rng.below(4) == 0 { end_id } else { rng.below(9) as i64 }).collect();
    let scores = tie_heavy(rng, rows);
    let lod = if two_levels {
        Lod::from_lengths(&[lengths, vec![1; rows]]).unwrap()
    } else {
        Lod::from_lengths(&[lengths]).unwrap()
    };
    Prefixes {
        pre_ids: LoDTensor::new(Tensor::from_slice(&ids, &[rows, 1]).unwrap(), lod.clone()).unwrap(),
        pre_scores: LoDTensor::new(Tensor::from_slice(&scores, &[rows, 1]).unwrap(), lod).unwrap(),
        rows,
    }
}

fn assert_step_same(got: &lodtensor::BeamSearchStep, want: &lodtensor::BeamSearchStep, what: &str) {
    assert_same(&got.selected_ids, &want.selected_ids, &format!("{what}: selected_ids"));
    assert_same(&got.selected_scores, &want.selected_scores, &format!("{what}: selected_scores"));
    assert_same(
        &LoDTensor::dense(got.parent_idx.clone()),
        &LoDTensor::dense(want.parent_idx.clone()),
        &format!("{what}: parent_idx"),
    );
}

#[test]
fn gpu_fused_step_equals_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    // Beams up to 16 build their lists in the selection's local memory, larger ones in its global
    // scratch (beam.cu's LOCAL_BEAM): both are covered; so are the top lists of 4, 8 and 16 and
    // the one-block-per-row top-k above 16.
    for case in 0..72 {
        let dtype = [DType::F32, DType::F16, DType::BF16][case % 3];
        // Cases 60-63 have many sources (more than a selection launch has blocks where the
        // emulator caps the grid), on short rows. Cases 64-71 have sources of up to 150 rows: more
        // rows than a selection block has threads, and up to 450 offers a source, more than the
        // selection ranks (beam.cu's RANK_MAX_OFFERS: those sources replay their offers).
        let many = (60..64).contains(&case);
        let long = case >= 64;
        let sources = if many { 257 + rng.below(500) } else { 1 + rng.below(6) };
        let end_id = rng.below(3) as i64;
        let mut p = prefixes(&mut rng, sources, if long { 150 } else { 4 }, end_id, case % 2 == 0);
        // Rows longer than 8192 are split into chunks (fused_chunks.cu's CHUNK_ELEMS) for beams up
        // to 16. An empty vocabulary leaves the finished rows' offers alone.
        let vocab = [0usize, 1, 2, 3, 10, 40, 300, 8193, 20000][rng.below(if many || long { 6 } else { 9 })];
        let beam = if long { 1 + rng.below(3) } else { [1usize, 2, 3, 4, 5, 8, 16, 17, 24][rng.below(9)] };
        // One case in four has spread scores (most sources selected by rank), the others ties and
        // NaN in plenty (most sources replaying their offers); of the long-source cases, one in two.
        let lp = if case % 4 == 3 || (long && case % 2 == 1) {
            let scores = Tensor::from_slice(&spread(&mut rng, p.rows), &[p.rows, 1]).unwrap();
            p.pre_scores = LoDTensor::new(scores, p.pre_scores.lod().clone()).unwrap();
            spread(&mut rng, p.rows * vocab)
        } else {
            tie_heavy(&mut rng, p.rows * vocab)
        };
        let log_probs = LoDTensor::dense(tensor_of(dtype, &lp, &[p.rows, vocab]));
        let want = beam_search_fused_step(&p.pre_ids, &p.pre_scores, &log_probs, beam, end_id).unwrap();
        let got =
            beam_search_fused_step(&gpu(&p.pre_ids), &gpu(&p.pre_scores), &gpu(&log_probs), beam, end_id).unwrap();
        assert_step_same(
            &got,
            &want,
            &format!("case {case}: {dtype}, {sources} sources, {} rows, V {vocab}, beam {beam}", p.rows),
        );
        // Without a vocabulary a source's offers are its finished rows' end_ids: no source lives.
        if vocab == 0 {
            assert_eq!(want.selected_ids.tensor().numel(), 0, "case {case}: V 0 selected something");
        }
    }
}

/// A source with more offers than the selection ranks at once (beam.cu's RANK_MAX_OFFERS, 256)
/// replays them: one source of rows of 3 candidates each, no ties, each row's log-probs above the
/// last row's, so that the kept items are the last offers. 85 rows are 255 offers (ranked), 86 and
/// 100 rows 258 and 300 (replayed).
#[test]
fn gpu_fused_step_on_a_source_of_many_offers() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0x5851_f42d_4c95_7f2d);
    let (beam, vocab, end_id) = (3usize, 8usize, 1i64);
    for rows in [85usize, 86, 100] {
        let lp: Vec<f32> = (0..rows * vocab).map(|i| (i / vocab) as f32 - rows as f32 - rng.unit()).collect();
        let lod = Lod::from_lengths(&[vec![rows]]).unwrap();
        let pre_ids = LoDTensor::new(Tensor::from_slice(&vec![5i64; rows], &[rows, 1]).unwrap(), lod.clone()).unwrap();
        let pre_scores = LoDTensor::new(Tensor::from_slice(&vec![0f32; rows], &[rows, 1]).unwrap(), lod).unwrap();
        let log_probs = LoDTensor::dense(Tensor::from_slice(&lp, &[rows, vocab]).unwrap());
        let want = beam_search_fused_step(&pre_ids, &pre_scores, &log_probs, beam, end_id).unwrap();
        let got = beam_search_fused_step(&gpu(&pre_ids), &gpu(&pre_scores), &gpu(&log_probs), beam, end_id).unwrap();
        assert_step_same(&got, &want, &format!("one source of {rows} rows"));
        let parents = want.parent_idx.as_slice::<i32>().unwrap();
        assert!(parents.iter().all(|&p| p as usize == rows - 1), "{rows} rows: the last row's are kept: {parents:?}");
    }
}

/// On a GPU the chunk kernel converts float16 log-probs with the device's own instruction
/// (fused_chunks.cu's chunk_value), the CPU with the `half` crate. Rows of each kind of float16,
/// both signs, against the CPU's step: subnormals and zeros, values around the smallest normals,
/// the largest numbers with the infinities, every number, every bit pattern (NaN included); rows
/// split into chunks, with lists of 4, 8 and 16.
#[test]
fn gpu_fused_step_ranks_float16_of_every_kind() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0x94d0_49bb_1331_11eb);
    // Each kind's magnitudes (bits 0-14; bit 15 is the sign, drawn apart).
    type Magnitude = fn(&mut Rng) -> u16;
    let kinds: [(&str, Magnitude); 5] = [
        ("subnormals and zeros", |r| r.below(0x400) as u16),
        ("around the smallest normals", |r| r.below(0xc00) as u16),
        ("the largest numbers and infinity", |r| 0x7800 + r.below(0x401) as u16),
        ("every number", |r| r.below(0x7c01) as u16),
        ("every bit pattern", |r| r.below(0x8000) as u16),
    ];
    let (sources, per_source) = (3usize, 4usize);
    let rows = sources * per_source;
    let lod = Lod::from_lengths(&[vec![per_source; sources]]).unwrap();
    let pre_ids = LoDTensor::new(Tensor::from_slice(&vec![5i64; rows], &[rows, 1]).unwrap(), lod.clone()).unwrap();
    let pre_scores = LoDTensor::new(Tensor::from_slice(&vec![0f32; rows], &[rows, 1]).unwrap(), lod).unwrap();
    for (vocab, beam) in [(8193usize, 3usize), (20000, 5), (20000, 16)] {
        for (kind, magnitude) in kinds {
            let lp: Vec<f16> = (0..rows * vocab)
                .map(|_| f16::from_bits(magnitude(&mut rng) | if rng.below(2) == 0 { 0x8000 } else { 0 }))
                .collect();
            let log_probs = LoDTensor::dense(Tensor::from_slice(&lp, &[rows, vocab]).unwrap());
            let want = beam_search_fused_step(&pre_ids, &pre_scores, &log_probs, beam, 1).unwrap();
            let got = beam_search_fused_step(&gpu(&pre_ids), &gpu(&pre_scores), &gpu(&log_probs), beam, 1).unwrap();
            assert_step_same(&got, &want, &format!("float16 {kind}, V {vocab}, beam {beam}"));
        }
    }
}

/// The device step's banned column (the decoder's min_length rule) reads as -inf: the same step as
/// the CPU's on log-probs with that column set to -inf, the column being every row's best. Columns
/// in a whole chunk of 8192 and in a row's last, partial one; lists of 8 and beams above 16.
#[test]
fn gpu_fused_step_banned_column_reads_as_minus_inf() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for (vocab, banned, beam) in [(20000usize, 100usize, 5usize), (20000, 19000, 5), (8193, 8192, 3), (20000, 8191, 17)]
    {
        let p = prefixes(&mut rng, 4, 4, 1, false);
        let mut lp: Vec<f32> = (0..p.rows * vocab).map(|_| -1.0 - 10.0 * rng.unit()).collect();
        for row in lp.chunks_exact_mut(vocab) {
            row[banned] = 0.0;
        }
        let log_probs = gpu(&LoDTensor::dense(Tensor::from_slice(&lp, &[p.rows, vocab]).unwrap()));
        let step = lodtensor::backend::cuda::fused_step(
            StepSources::new(p.pre_ids.lod(), 0).unwrap(),
            beam,
            log_probs.tensor(),
            vocab,
            gpu(&p.pre_ids).tensor(),
            gpu(&p.pre_scores).tensor(),
            1,
            Some(banned),
            true,
        )
        .unwrap();
        for row in lp.chunks_exact_mut(vocab) {
            row[banned] = f32::NEG_INFINITY;
        }
        let lp = LoDTensor::dense(Tensor::from_slice(&lp, &[p.rows, vocab]).unwrap());
        let want = beam_search_fused_step(&p.pre_ids, &p.pre_scores, &lp, beam, 1).unwrap();
        let what = format!("V {vocab}, banned {banned}, beam {beam}");
        assert_eq!(&step.lod, want.selected_ids.lod(), "{what}: LoD");
        let host = step.host.expect("host copies were asked for");
        let wanted = [want.selected_ids.tensor(), want.selected_scores.tensor(), &want.parent_idx];
        for ((name, dev), (host, want)) in [("ids", &step.ids), ("scores", &step.scores), ("parents", &step.parents)]
            .into_iter()
            .zip(host.iter().zip(wanted))
        {
            assert_eq!(tensor_bytes(dev), want.bytes().unwrap(), "{what}: {name}");
            assert_eq!(
                (host.dims(), host.bytes().unwrap()),
                (want.dims(), want.bytes().unwrap()),
                "{what}: host {name}"
            );
        }
    }
}

/// Steps in a chain, each on the last one's selection, as a decoder runs them: on a device the
/// sources come from the device copy that the last selection wrote into its LoD (level 0 in rows),
/// not from the host. Fused steps, then a Paddle step on the chain's LoD; each equal to the CPU's.
#[test]
fn gpu_steps_in_a_chain_equal_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0x51c0_ffee);
    let most_sources = if race_check() { 40 } else { 300 };
    for case in 0..8 {
        let (beam, vocab, end_id) = (1 + rng.below(5), [3usize, 50, 9000][case % 3], 1i64);
        let sources = 2 + rng.below(most_sources);
        let p = prefixes(&mut rng, sources, 4, end_id, case % 2 == 0);
        let (mut host, mut dev) = ((p.pre_ids.clone(), p.pre_scores.clone()), (gpu(&p.pre_ids), gpu(&p.pre_scores)));
        for t in 0..4 {
            let what = format!("case {case}, step {t}: beam {beam}, V {vocab}");
            let rows = host.0.tensor().numel();
            let lp = LoDTensor::dense(Tensor::from_slice(&tie_heavy(&mut rng, rows * vocab), &[rows, vocab]).unwrap());
            let want = beam_search_fused_step(&host.0, &host.1, &lp, beam, end_id).unwrap();
            let got = beam_search_fused_step(&dev.0, &dev.1, &gpu(&lp), beam, end_id).unwrap();
            assert_step_same(&got, &want, &what);
            if want.selected_ids.tensor().numel() == 0 {
                break;
            }
            host = (want.selected_ids, want.selected_scores);
            dev = (got.selected_ids, got.selected_scores);
        }
        // Paddle's step over the chain's last LoD (its level 0 in rows is on the device).
        let rows = host.0.tensor().numel();
        if rows == 0 {
            continue;
        }
        let scores: Vec<f32> = (0..rows * 3).map(|_| rng.below(7) as f32).collect();
        let scores = |lod: &Lod| LoDTensor::new(Tensor::from_slice(&scores, &[rows, 3]).unwrap(), lod.clone()).unwrap();
        let want = beam_search_step(&host.0, &host.1, None, &scores(host.0.lod()), 0, beam, end_id, true).unwrap();
        let got = beam_search_step(&dev.0, &dev.1, None, &gpu(&scores(dev.0.lod())), 0, beam, end_id, true).unwrap();
        assert_step_same(&got, &want, &format!("case {case}: Paddle's step after the chain"));
    }
}

#[test]
fn gpu_beam_step_equals_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    // Cases 56-63 have sources of up to 150 rows: more rows than a selection block has threads,
    // and more offers than the selection ranks in some sources.
    for case in 0..64 {
        let f64_scores = case % 2 == 1;
        let long = case >= 56;
        let sources = 1 + rng.below(5);
        let end_id = rng.below(3) as i64;
        let p = prefixes(&mut rng, sources, if long { 150 } else { 4 }, end_id, true);
        let width = if long { [1usize, 2, 4][rng.below(3)] } else { [1usize, 2, 4, 7, 19][rng.below(5)] };
        let beam = if long { [1usize, 2, 3, 5][rng.below(4)] } else { [1usize, 2, 3, 5, 16, 17, 24][rng.below(7)] };
        let accumulated = case % 4 < 2;
        let n = p.rows * width;
        // Accumulated: ties everywhere. Not accumulated: probabilities in (0, 1] without ties.
        let values: Vec<f32> =
            if accumulated { tie_heavy(&mut rng, n) } else { (0..n).map(|_| 1.0 - rng.unit()).collect() };
        let with_ids = rng.below(2) == 0;
        let ids = LoDTensor::new(
            Tensor::from_slice(&(0..n).map(|_| rng.below(20) as i64).collect::<Vec<_>>(), &[p.rows, width]).unwrap(),
            p.pre_ids.lod().clone(),
        )
        .unwrap();
        let (scores, pre_scores) = if f64_scores {
            let pre: Vec<f64> = p.pre_scores.tensor().as_slice::<f32>().unwrap().iter().map(|&v| v as f64).collect();
            (
                tensor_of(DType::F64, &values, &[p.rows, width]),
                LoDTensor::new(Tensor::from_slice(&pre, &[p.rows, 1]).unwrap(), p.pre_ids.lod().clone()).unwrap(),
            )
        } else {
            (tensor_of(DType::F32, &values, &[p.rows, width]), p.pre_scores.clone())
        };
        let scores = LoDTensor::new(scores, p.pre_ids.lod().clone()).unwrap();
        let ids_arg = with_ids.then_some(&ids);
        let want = beam_search_step(&p.pre_ids, &pre_scores, ids_arg, &scores, 0, beam, end_id, accumulated).unwrap();
        let ids_dev = gpu(&ids);
        let got = beam_search_step(
            &gpu(&p.pre_ids),
            &gpu(&pre_scores),
            with_ids.then_some(&ids_dev),
            &gpu(&scores),
            0,
            beam,
            end_id,
            accumulated,
        )
        .unwrap();
        let what = format!("case {case}: f64 {f64_scores}, accumulated {accumulated}, width {width}, beam {beam}");
        if accumulated {
            assert_step_same(&got, &want, &what);
            continue;
        }
        // ln on the device: ids and parents exact; a score `pre + ln(p)` within 2 ulp of the
        // larger term (the sum can cancel, so not of the sum), NaN where the host has NaN.
        assert_same(&got.selected_ids, &want.selected_ids, &what);
        assert_same(&LoDTensor::dense(got.parent_idx.clone()), &LoDTensor::dense(want.parent_idx.clone()), &what);
        let as_f64 = |t: &Tensor| -> Vec<f64> {
            if f64_scores {
                t.as_slice::<f64>().unwrap().to_vec()
            } else {
                t.as_slice::<f32>().unwrap().iter().map(|&v| v as f64).collect()
            }
        };
        let ulp = if f64_scores { f64::EPSILON } else { f32::EPSILON as f64 };
        let pre = as_f64(pre_scores.tensor());
        let g = as_f64(to_place(&got.selected_scores, Place::Cpu).unwrap().tensor());
        let w = as_f64(want.selected_scores.tensor());
        for ((a, b), &parent) in g.iter().zip(&w).zip(want.parent_idx.as_slice::<i32>().unwrap()) {
            let pre = pre[parent as usize];
            let scale = pre.abs().max((b - pre).abs());
            let close = a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= 2.0 * ulp * scale;
            assert!(close, "{what}: {a} vs {b} (pre_score {pre})");
        }
    }
}

#[test]
fn gpu_beam_step_errors_and_places() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(77);
    let p = prefixes(&mut rng, 3, 4, 1, true);
    let lp = LoDTensor::dense(tensor_of(DType::F32, &tie_heavy(&mut rng, p.rows * 5), &[p.rows, 5]));
    let bad = LoDTensor::dense(tensor_of(DType::F32, &tie_heavy(&mut rng, (p.rows + 1) * 5), &[p.rows + 1, 5]));
    same_error(
        beam_search_fused_step(&gpu(&p.pre_ids), &gpu(&p.pre_scores), &gpu(&bad), 2, 1),
        beam_search_fused_step(&p.pre_ids, &p.pre_scores, &bad, 2, 1),
        "log_probs rows",
    );
    same_error(
        beam_search_fused_step(&gpu(&p.pre_ids), &gpu(&p.pre_scores), &gpu(&lp), 0, 1),
        beam_search_fused_step(&p.pre_ids, &p.pre_scores, &lp, 0, 1),
        "beam 0",
    );
    let lp64 = LoDTensor::dense(tensor_of(DType::F64, &tie_heavy(&mut rng, p.rows * 5), &[p.rows, 5]));
    same_error(
        beam_search_fused_step(&gpu(&p.pre_ids), &gpu(&p.pre_scores), &gpu(&lp64), 2, 1),
        beam_search_fused_step(&p.pre_ids, &p.pre_scores, &lp64, 2, 1),
        "f64 log_probs",
    );
    // Mixed places: an InvalidArgument naming both.
    match beam_search_fused_step(&p.pre_ids, &p.pre_scores, &gpu(&lp), 2, 1) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("cuda:0") && m.contains("cpu"), "{m}"),
        other => panic!("{other:?}"),
    }
    if cuda_device_count().unwrap() > 1 {
        let other = to_place(&lp, Place::Cuda(1)).unwrap();
        match beam_search_fused_step(&gpu(&p.pre_ids), &gpu(&p.pre_scores), &other, 2, 1) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("cuda:0") && m.contains("cuda:1"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
    let scores = LoDTensor::new(lp.tensor().clone(), p.pre_ids.lod().clone()).unwrap();
    match beam_search_step(&gpu(&p.pre_ids), &p.pre_scores, None, &gpu(&scores), 0, 2, 1, true) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("cuda:0") && m.contains("cpu"), "{m}"),
        other => panic!("{other:?}"),
    }
    // A second device: its results stay there.
    if cuda_device_count().unwrap() > 1 {
        let (v, _) = top_k(&to_place(&lp, Place::Cuda(1)).unwrap(), 2, true).unwrap();
        assert_eq!(v.tensor().place(), Place::Cuda(1));
        assert_eq!(
            to_place(&v, Place::Cpu).unwrap().tensor().bytes().unwrap(),
            top_k(&lp, 2, true).unwrap().0.tensor().bytes().unwrap()
        );
    }
}

// ---- gather_state, gather_tree, decode --------------------------------------------------------

#[test]
fn gpu_gather_state_equals_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(99);
    for case in 0..20 {
        let rows = 1 + rng.below(30);
        let width = 1 + rng.below(13);
        let n = rng.below(40);
        let state = LoDTensor::dense(tensor_of(DType::F32, &tie_heavy(&mut rng, rows * width), &[rows, width]));
        let parents: Vec<i32> = (0..n).map(|_| rng.below(rows) as i32).collect();
        let parents = LoDTensor::dense(Tensor::from_slice(&parents, &[n]).unwrap());
        let want = beam_search_gather_state(&state, &parents).unwrap();
        let got = beam_search_gather_state(&gpu(&state), &gpu(&parents)).unwrap();
        assert_same(&got, &want, &format!("case {case}"));
    }
    let state = LoDTensor::dense(tensor_of(DType::F32, &[1.0, 2.0], &[2, 1]));
    let bad = LoDTensor::dense(Tensor::from_slice(&[0i64, 2], &[2]).unwrap());
    same_error(beam_search_gather_state(&gpu(&state), &gpu(&bad)), beam_search_gather_state(&state, &bad), "parent 2");
}

/// gather_states on the device equals the CPU's: states of several dtypes, widths and rows by
/// one index, up to 130 of them, and the same error where a parent is outside one state's rows
/// (the states before it gathered on the device, the count shared).
#[test]
fn gpu_gather_states_equals_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(4242);
    for case in 0..10 {
        let n = rng.below(40);
        let states: Vec<LoDTensor> = (0..1 + case % 4)
            .map(|s| {
                let (rows, width) = (8 + rng.below(20), rng.below(9));
                let dtype = [DType::F32, DType::F16, DType::I64, DType::U8][s];
                let bytes: Vec<u8> = (0..rows * width * dtype.size()).map(|_| rng.below(256) as u8).collect();
                LoDTensor::dense(Tensor::from_bytes(dtype, Dim::new(&[rows, width]).unwrap(), &bytes).unwrap())
            })
            .collect();
        let parents: Vec<i64> = (0..n).map(|_| rng.below(8) as i64).collect();
        let parents = LoDTensor::dense(Tensor::from_slice(&parents, &[n]).unwrap());
        let refs: Vec<&LoDTensor> = states.iter().collect();
        let want = lodtensor::beam_search_gather_states(&refs, &parents).unwrap();
        let on_gpu: Vec<LoDTensor> = states.iter().map(gpu).collect();
        let refs: Vec<&LoDTensor> = on_gpu.iter().collect();
        let got = lodtensor::beam_search_gather_states(&refs, &gpu(&parents)).unwrap();
        assert_eq!(got.len(), want.len());
        for (s, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_same(g, w, &format!("case {case}, state {s}"));
        }
    }
    // Many states at once (up to 130, a decoder's per-layer caches), each of its own dtype, width
    // (0 included) and rows, so that they move in words of every size and share a launch per
    // size; enough parents that a state's rows span several of the launch's chunks; both index
    // dtypes.
    let dtypes =
        [DType::U8, DType::I8, DType::I16, DType::F16, DType::BF16, DType::I32, DType::F32, DType::I64, DType::F64];
    for (case, count) in [2usize, 5, 17, 64, 130, 3].into_iter().enumerate() {
        let n = 1 + rng.below(1500);
        let min_rows = 1 + rng.below(8);
        let states: Vec<LoDTensor> = (0..count)
            .map(|_| {
                let (rows, width) = (min_rows + rng.below(300), rng.below(41));
                let dtype = dtypes[rng.below(dtypes.len())];
                let bytes: Vec<u8> = (0..rows * width * dtype.size()).map(|_| rng.below(256) as u8).collect();
                LoDTensor::dense(Tensor::from_bytes(dtype, Dim::new(&[rows, width]).unwrap(), &bytes).unwrap())
            })
            .collect();
        let parents: Vec<i64> = (0..n).map(|_| rng.below(min_rows) as i64).collect();
        let parents = LoDTensor::dense(if case % 2 == 0 {
            Tensor::from_slice(&parents, &[n]).unwrap()
        } else {
            Tensor::from_slice(&parents.iter().map(|&p| p as i32).collect::<Vec<_>>(), &[n, 1]).unwrap()
        });
        let refs: Vec<&LoDTensor> = states.iter().collect();
        let want = lodtensor::beam_search_gather_states(&refs, &parents).unwrap();
        let on_gpu: Vec<LoDTensor> = states.iter().map(gpu).collect();
        let refs: Vec<&LoDTensor> = on_gpu.iter().collect();
        let got = lodtensor::beam_search_gather_states(&refs, &gpu(&parents)).unwrap();
        assert_eq!(got.len(), count);
        for (s, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_same(g, w, &format!("{count} states, state {s}"));
        }
        // A parent that is a row of every state but one, late in the list: the error names it.
        let short = count - 1 - rng.below(count.min(3));
        let mut shorter: Vec<LoDTensor> = states.clone();
        shorter[short] = LoDTensor::dense(Tensor::from_slice(&vec![7u8; min_rows - 1], &[min_rows - 1]).unwrap());
        let bad: Vec<i64> = (0..n).map(|k| if k == n / 2 { min_rows as i64 - 1 } else { 0 }).collect();
        let bad = LoDTensor::dense(Tensor::from_slice(&bad, &[n]).unwrap());
        let on_gpu: Vec<LoDTensor> = shorter.iter().map(gpu).collect();
        let (host_refs, gpu_refs): (Vec<&LoDTensor>, Vec<&LoDTensor>) =
            (shorter.iter().collect(), on_gpu.iter().collect());
        same_error(
            lodtensor::beam_search_gather_states(&gpu_refs, &gpu(&bad)).map(|mut v| v.remove(0)),
            lodtensor::beam_search_gather_states(&host_refs, &bad).map(|mut v| v.remove(0)),
            &format!("parent {} of states[{short}]", n / 2),
        );
    }
    let (a, b) = (
        LoDTensor::dense(tensor_of(DType::F32, &[1.0, 2.0, 3.0], &[3, 1])),
        LoDTensor::dense(tensor_of(DType::F32, &[4.0, 5.0], &[2, 1])),
    );
    let bad = LoDTensor::dense(Tensor::from_slice(&[0i64, 2], &[2]).unwrap());
    same_error(
        lodtensor::beam_search_gather_states(&[&gpu(&a), &gpu(&b)], &gpu(&bad)).map(|mut v| v.remove(0)),
        lodtensor::beam_search_gather_states(&[&a, &b], &bad).map(|mut v| v.remove(0)),
        "parent 2 of states[1]",
    );
    // Inputs on different places: both named, the state by its index.
    let parents = LoDTensor::dense(Tensor::from_slice(&[0i64, 1], &[2]).unwrap());
    let mixed = |r: lodtensor::Result<Vec<LoDTensor>>, names: [&str; 2]| match r {
        Err(Error::InvalidArgument(m)) => {
            assert!(names.iter().chain(&["cpu", "cuda:0"]).all(|n| m.contains(n)), "{m}")
        }
        other => panic!("expected InvalidArgument naming {names:?}, got {:?}", other.map(|v| v.len())),
    };
    mixed(lodtensor::beam_search_gather_states(&[&gpu(&a), &gpu(&a), &b], &gpu(&parents)), ["states[2]", "states[0]"]);
    mixed(lodtensor::beam_search_gather_states(&[&a, &gpu(&b)], &parents), ["states[1]", "states[0]"]);
    mixed(lodtensor::beam_search_gather_states(&[&gpu(&a), &gpu(&b)], &parents), ["parent_idx", "states[0]"]);
}

#[test]
fn gpu_gather_tree_equals_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(1234567);
    for case in 0..20 {
        let (steps, batch, beam) = (rng.below(6), 1 + rng.below(5), 1 + rng.below(4));
        let n = steps * batch * beam;
        let ids: Vec<i64> = (0..n).map(|_| rng.below(50) as i64).collect();
        let par: Vec<i64> = (0..n).map(|_| rng.below(beam) as i64).collect();
        let dims = [steps, batch, beam];
        for dtype in [DType::I32, DType::I64] {
            let conv = |v: &[i64]| {
                LoDTensor::dense(if dtype == DType::I32 {
                    Tensor::from_slice(&v.iter().map(|&x| x as i32).collect::<Vec<_>>(), &dims).unwrap()
                } else {
                    Tensor::from_slice(v, &dims).unwrap()
                })
            };
            let (i, p) = (conv(&ids), conv(&par));
            let want = beam_search_gather_tree(&i, &p).unwrap();
            let got = beam_search_gather_tree(&gpu(&i), &gpu(&p)).unwrap();
            assert_same(&got, &want, &format!("case {case} {dtype}"));
            if steps >= 2 {
                let mut bad = par.clone();
                bad[rng.below(n)] = if rng.below(2) == 0 { -1 } else { beam as i64 };
                let b = conv(&bad);
                match beam_search_gather_tree(&i, &b) {
                    Ok(w) => {
                        assert_same(&beam_search_gather_tree(&gpu(&i), &gpu(&b)).unwrap(), &w, "unvisited bad parent")
                    }
                    Err(_) => same_error(
                        beam_search_gather_tree(&gpu(&i), &gpu(&b)),
                        beam_search_gather_tree(&i, &b),
                        "bad parent",
                    ),
                }
            }
        }
    }
}

/// A few CPU fused steps, kept as TensorArrays: the input of beam_search_decode.
fn decode_inputs(rng: &mut Rng, sources: usize, beam: usize, steps: usize, end_id: i64) -> (TensorArray, TensorArray) {
    let vocab = 6;
    let identity: Vec<usize> = (0..=sources).collect();
    let lod = Lod::from_offsets(vec![identity.clone(), identity]).unwrap();
    let mut pre_ids =
        LoDTensor::new(Tensor::from_slice(&vec![0i64; sources], &[sources, 1]).unwrap(), lod.clone()).unwrap();
    let mut pre_scores = LoDTensor::new(Tensor::from_slice(&vec![0f32; sources], &[sources, 1]).unwrap(), lod).unwrap();
    let (mut ids, mut scores) = (TensorArray::new(), TensorArray::new());
    ids.push(pre_ids.clone());
    scores.push(pre_scores.clone());
    for _ in 0..steps {
        let rows = pre_ids.tensor().numel();
        let lp = LoDTensor::dense(tensor_of(DType::F32, &tie_heavy(rng, rows * vocab), &[rows, vocab]));
        let out = beam_search_fused_step(&pre_ids, &pre_scores, &lp, beam, end_id).unwrap();
        if out.selected_ids.tensor().numel() == 0 {
            break;
        }
        ids.push(out.selected_ids.clone());
        scores.push(out.selected_scores.clone());
        pre_ids = out.selected_ids;
        pre_scores = out.selected_scores;
    }
    (ids, scores)
}

fn array_to(a: &TensorArray, place: Place) -> TensorArray {
    TensorArray::from_vec(a.as_slice().iter().map(|t| to_place(t, place).unwrap()).collect())
}

#[test]
fn gpu_decode_equals_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(4242);
    for case in 0..12 {
        let (sources, beam, steps) = (1 + rng.below(4), 1 + rng.below(4), 1 + rng.below(6));
        let (ids, scores) = decode_inputs(&mut rng, sources, beam, steps, 1);
        let (wi, ws) = beam_search_decode(&ids, &scores, beam, 1).unwrap();
        let (gi, gs) = beam_search_decode(&array_to(&ids, GPU), &array_to(&scores, GPU), beam, 1).unwrap();
        assert_same(&gi, &wi, &format!("case {case}: ids"));
        assert_same(&gs, &ws, &format!("case {case}: scores"));
    }
    // Errors as on the CPU (checked before anything moves), and steps on different places.
    let (ids, scores) = decode_inputs(&mut rng, 2, 2, 3, 1);
    same_error(
        beam_search_decode(&array_to(&ids, GPU), &array_to(&scores, GPU), 1, 1),
        beam_search_decode(&ids, &scores, 1, 1),
        "beam too small",
    );
    // A wrong step 0 (int32 ids) with a later step over beam_size: every step is checked before
    // any is decoded, on both places.
    let mut ids32 = ids.clone();
    let first = ids.read(0).unwrap();
    let as_i32: Vec<i32> = first.tensor().as_slice::<i64>().unwrap().iter().map(|&x| x as i32).collect();
    ids32
        .write(
            0,
            LoDTensor::new(Tensor::from_slice(&as_i32, first.dims().as_slice()).unwrap(), first.lod().clone()).unwrap(),
        )
        .unwrap();
    same_error(
        beam_search_decode(&array_to(&ids32, GPU), &array_to(&scores, GPU), 1, 1),
        beam_search_decode(&ids32, &scores, 1, 1),
        "int32 ids at step 0, beam too small later",
    );
    assert!(matches!(beam_search_decode(&ids32, &scores, 1, 1), Err(Error::Unsupported(_))));
    let mut mixed = array_to(&ids, GPU);
    mixed.write(1, ids.read(1).unwrap()).unwrap();
    match beam_search_decode(&mixed, &array_to(&scores, GPU), 2, 1) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("cuda:0") && m.contains("cpu"), "{m}"),
        other => panic!("{other:?}"),
    }
}

// ---- TensorArray -------------------------------------------------------------------------------

fn random_lod_tensor(rng: &mut Rng, dtype: DType, width: usize, levels: usize, top: usize) -> LoDTensor {
    let mut lengths = Vec::new();
    let mut count = top;
    for _ in 0..levels {
        let level: Vec<usize> = (0..count).map(|_| rng.below(4)).collect();
        count = level.iter().sum();
        lengths.push(level);
    }
    let values: Vec<f32> = (0..count * width).map(|i| (i % 251) as f32 - 100.0).collect();
    LoDTensor::new(tensor_of(dtype, &values, &[count, width]), Lod::from_lengths(&lengths).unwrap()).unwrap()
}

#[test]
fn gpu_tensor_array_pack_and_shrink_equal_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(31337);
    let dtypes = [DType::U8, DType::I16, DType::F32, DType::F64, DType::Bool];
    for case in 0..20 {
        let dtype = dtypes[case % dtypes.len()];
        let levels = 1 + rng.below(3);
        let (width, top) = (1 + rng.below(9), [1, 5, 40][rng.below(3)]);
        let x = random_lod_tensor(&mut rng, dtype, width, levels, top);
        let level = rng.below(levels);
        let table = RankTable::from_lod_tensor(&x, level).unwrap();
        let xd = gpu(&x);
        let want = lodtensor::lod_tensor_to_array(&x, &table).unwrap();
        let got = lodtensor::lod_tensor_to_array(&xd, &table).unwrap();
        assert_eq!(got.len(), want.len());
        for (t, (g, w)) in got.as_slice().iter().zip(want.as_slice()).enumerate() {
            assert_same(g, w, &format!("case {case}: unpack step {t}"));
        }
        if want.is_empty() {
            continue;
        }
        let packed = array_to_lod_tensor(&got, &table).unwrap();
        assert_same(&packed, &array_to_lod_tensor(&want, &table).unwrap(), &format!("case {case}: pack"));
        assert_same(&packed, &x, &format!("case {case}: pack(unpack(x)) == x"));
        for step in 0..if level == 0 { table.max_sequence_len() + 1 } else { 0 } {
            let mem = lodtensor::reorder_lod_tensor_by_rank(&x, &table).unwrap();
            let w = shrink_rnn_memory(&mem, &table, step).unwrap();
            let g = shrink_rnn_memory(&gpu(&mem), &table, step).unwrap();
            assert_same(&g, &w, &format!("case {case}: shrink at {step}"));
        }
    }
    // Elements on different places, and an element count mismatch: errors as on the CPU.
    let x = random_lod_tensor(&mut rng, DType::F32, 3, 1, 5);
    let table = RankTable::from_lod_tensor(&x, 0).unwrap();
    let host = lodtensor::lod_tensor_to_array(&x, &table).unwrap();
    if host.len() >= 2 {
        let mut mixed = array_to(&host, GPU);
        mixed.write(1, host.read(1).unwrap()).unwrap();
        match array_to_lod_tensor(&mixed, &table) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("cuda:0") && m.contains("cpu"), "{m}"),
            other => panic!("{other:?}"),
        }
        let mut short = host.clone();
        let e0 = host.read(0).unwrap();
        short.write(0, LoDTensor::dense(e0.tensor().slice_rows(0..0).unwrap())).unwrap();
        same_error(array_to_lod_tensor(&array_to(&short, GPU), &table), array_to_lod_tensor(&short, &table), "units");
    }
}

/// The dynamic-RNN driver over device tensors: every step's input and shrunk state, and the packed
/// outputs, equal the CPU's; the state the step returns (here its rows reversed, by a gather on the
/// state's place) carries on. `init_state` on another place than `x` is refused before any step.
#[test]
fn gpu_dynamic_rnn_equals_cpu() {
    if !gpu_or_skip() {
        return;
    }
    // Runs the driver, keeping a host copy of every step's input and state.
    type Seen = Vec<(LoDTensor, LoDTensor)>;
    let run = |x: &LoDTensor, level: usize, init: &LoDTensor| -> lodtensor::Result<(LoDTensor, Seen)> {
        let mut seen = Vec::new();
        let out = dynamic_rnn(x, level, init, |_, input, prev| {
            seen.push((to_place(input, Place::Cpu)?, to_place(prev, Place::Cpu)?));
            let rows = prev.dims().as_slice()[0];
            let reversed: Vec<i64> = (0..rows as i64).rev().collect();
            let index = to_place(&LoDTensor::from_slice(&reversed, &[rows], vec![])?, prev.tensor().place())?;
            Ok((input.clone(), gather_rows(prev, &index)?))
        })?;
        Ok((out, seen))
    };
    let mut rng = Rng(0x0d1a_b011);
    for case in 0..24 {
        let levels = 1 + rng.below(3);
        let (width, top) = (1 + rng.below(5), [1, 5, 40][rng.below(3)]);
        let x = random_lod_tensor(&mut rng, DType::F32, width, levels, top);
        let level = rng.below(levels);
        let sequences = x.lod().levels()[level].len() - 1;
        let init: Vec<f32> = (0..sequences * 2).map(|i| i as f32 * 0.5).collect();
        let init = LoDTensor::from_slice(&init, &[sequences, 2], vec![]).unwrap();
        let what = format!("case {case}: {levels} levels, {top} at the top, level {level}");
        match (run(&gpu(&x), level, &gpu(&init)), run(&x, level, &init)) {
            (Ok((got, got_seen)), Ok((want, want_seen))) => {
                assert_same(&got, &want, &what);
                assert_eq!(got_seen.len(), want_seen.len(), "{what}: steps");
                for (t, (g, w)) in got_seen.iter().zip(&want_seen).enumerate() {
                    assert_eq!((g.0.lod(), bytes_of(&g.0)), (w.0.lod(), bytes_of(&w.0)), "{what}: input {t}");
                    assert_eq!((g.1.dims(), bytes_of(&g.1)), (w.1.dims(), bytes_of(&w.1)), "{what}: state {t}");
                }
            }
            (Err(g), Err(w)) => assert_eq!(g.to_string().replace("cuda:0", "cpu"), w.to_string(), "{what}"),
            (g, w) => panic!("{what}: device {:?}, CPU {:?}", g.map(|_| ()), w.map(|_| ())),
        }
    }
    let x = LoDTensor::from_slice(&[1f32, 2., 3.], &[3, 1], vec![vec![0, 2, 3]]).unwrap();
    let init = LoDTensor::from_slice(&[0f32, 0.], &[2, 1], vec![]).unwrap();
    for (x, init) in [(gpu(&x), init.clone()), (x, gpu(&init))] {
        let mut steps = 0;
        let r = dynamic_rnn(&x, 0, &init, |_, input, prev| {
            steps += 1;
            Ok((input.clone(), prev.clone()))
        });
        assert!(matches!(&r, Err(Error::InvalidArgument(m)) if m.contains("cuda:0") && m.contains("cpu")), "{r:?}");
        assert_eq!(steps, 0, "a step ran before the places were checked");
    }
}

#[test]
fn gpu_concat_stack_unstack_equal_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(8675309);
    let dtypes = [DType::U8, DType::I16, DType::F32, DType::F64, DType::BF16];
    for case in 0..30 {
        let dtype = dtypes[case % dtypes.len()];
        let ndim = 1 + rng.below(3);
        let dims: Vec<usize> = (0..ndim).map(|_| rng.below(5)).collect();
        let n = 1 + rng.below(5);
        let use_stack = rng.below(2) == 0;
        let axis = rng.below(ndim + use_stack as usize) as i64
            - if rng.below(3) == 0 { (ndim + use_stack as usize) as i64 } else { 0 };
        let concat_axis = if axis < 0 { axis + ndim as i64 + use_stack as i64 } else { axis } as usize;
        let items: Vec<LoDTensor> = (0..n)
            .map(|_| {
                let mut d = dims.clone();
                if !use_stack && concat_axis < ndim {
                    d[concat_axis] = rng.below(4);
                }
                let numel: usize = d.iter().product();
                LoDTensor::dense(tensor_of(dtype, &tie_heavy(&mut rng, numel), &d))
            })
            .collect();
        let array = TensorArray::from_vec(items);
        let (want, wsizes) = tensor_array_to_tensor(&array, axis, use_stack).unwrap();
        let (got, gsizes) = tensor_array_to_tensor(&array_to(&array, GPU), axis, use_stack).unwrap();
        let what = format!("case {case}: {dtype} dims {dims:?} x {n}, axis {axis}, stack {use_stack}");
        assert_eq!(gsizes, wsizes, "{what}");
        assert_same(&got, &want, &what);
        if ndim >= 1 {
            let ax = rng.below(ndim) as i64;
            let w = unstack(&array.as_slice()[0], ax).unwrap();
            let g = unstack(&gpu(&array.as_slice()[0]), ax).unwrap();
            assert_eq!(g.len(), w.len());
            for (gi, wi) in g.as_slice().iter().zip(w.as_slice()) {
                assert_same(gi, wi, &format!("{what}: unstack axis {ax}"));
            }
        }
    }
    // A bigger one, so the kernels' grid loops run more than one block.
    let items: Vec<LoDTensor> =
        (0..3).map(|i| LoDTensor::dense(tensor_of(DType::F32, &vec![i as f32; 300 * 37], &[300, 37]))).collect();
    let array = TensorArray::from_vec(items);
    for axis in [0i64, 1] {
        let (want, _) = tensor_array_to_tensor(&array, axis, false).unwrap();
        let (got, _) = tensor_array_to_tensor(&array_to(&array, GPU), axis, false).unwrap();
        assert_same(&got, &want, "big concat");
    }
}

/// Unstack, stack and concat along an inner axis with rows narrower than 32 bytes, which move in
/// tiles through shared memory: rows of one word of every width (1 to 16 bytes) and of three
/// (6 and 12 bytes) and of 31, numbers of rows and parts that leave the last tiles short, a source
/// that starts a row into its buffer, and pieces of two sizes (the untiled kernel).
#[test]
fn gpu_narrow_pieces_equal_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0x5eed_0f71);
    let (outer, n) = if race_check() { (37, 11) } else { (300, 45) };
    for (dtype, inner) in [
        (DType::U8, 1),
        (DType::I16, 1),
        (DType::F32, 1),
        (DType::F64, 1),
        (DType::F32, 4),
        (DType::I16, 3),
        (DType::F32, 3),
        (DType::U8, 31),
    ] {
        let what = format!("{dtype} rows of {inner}");
        // One row more than `outer`, dropped: the source's first element is a row into its buffer.
        let all = tensor_of(dtype, &tie_heavy(&mut rng, (outer + 1) * n * inner), &[outer + 1, n, inner]);
        let x = LoDTensor::dense(all.slice_rows(1..outer + 1).unwrap());
        let parts = unstack(&x, 1).unwrap();
        let got = unstack(&gpu(&x), 1).unwrap();
        assert_eq!(got.len(), n, "{what}");
        for (i, (g, w)) in got.as_slice().iter().zip(parts.as_slice()).enumerate() {
            assert_same(g, w, &format!("{what}: unstack part {i}"));
        }
        let on_gpu = array_to(&parts, GPU);
        let (want, _) = tensor_array_to_tensor(&parts, 1, true).unwrap();
        let (got, _) = tensor_array_to_tensor(&on_gpu, 1, true).unwrap();
        assert_same(&got, &want, &format!("{what}: stack"));
        assert_eq!(bytes_of(&want), bytes_of(&x), "{what}: stack undoes unstack");
        let (want, _) = tensor_array_to_tensor(&parts, 1, false).unwrap();
        let (got, _) = tensor_array_to_tensor(&on_gpu, 1, false).unwrap();
        assert_same(&got, &want, &format!("{what}: concat"));
        // One part twice as wide: pieces of two sizes.
        let mut uneven = parts.into_vec();
        uneven[n / 2] =
            LoDTensor::dense(tensor_of(dtype, &tie_heavy(&mut rng, outer * 2 * inner), &[outer, 2 * inner]));
        let uneven = TensorArray::from_vec(uneven);
        let (want, _) = tensor_array_to_tensor(&uneven, 1, false).unwrap();
        let (got, _) = tensor_array_to_tensor(&array_to(&uneven, GPU), 1, false).unwrap();
        assert_same(&got, &want, &format!("{what}: concat of uneven parts"));
    }
}

#[test]
fn gpu_tensor_array_read_write_stay_on_device() {
    if !gpu_or_skip() {
        return;
    }
    let x = gpu(&LoDTensor::dense(tensor_of(DType::F32, &[1.0, 2.0, 3.0, 4.0], &[2, 2])));
    let mut a = TensorArray::new();
    a.write(3, x.clone()).unwrap();
    for t in a.as_slice() {
        assert_eq!(t.tensor().place(), GPU);
    }
    assert_eq!(a.get(1).unwrap().dims(), &Dim::new(&[0, 2]).unwrap());
    let c = a.read_copy(3).unwrap();
    assert_eq!(c.tensor().place(), GPU);
    assert!(!c.tensor().shares_memory_with(x.tensor()));
    assert_eq!(tensor_bytes(c.tensor()), tensor_bytes(x.tensor()));
    assert!(a.read(3).unwrap().tensor().shares_memory_with(x.tensor()));
}

// ---- the decoder -------------------------------------------------------------------------------

/// A decoder over device log-probs hands its step callback the previous step's parents on the
/// device (`parent_idx_tensor`, int32, the values of `parent_idx`; none at step 0 or after a step on
/// the host, nor ever for host log-probs): a state kept there, reordered with them by
/// `beam_search_gather_states` (no upload), stays equal to the same state kept on the host and
/// reordered by `parent_idx`, step after step.
#[test]
fn gpu_decoder_parents_on_the_device_reorder_device_state() {
    if !gpu_or_skip() {
        return;
    }
    let options = DecoderOptions {
        beam_size: 3,
        vocab_size: 9,
        start_id: 0,
        end_id: 2,
        max_length: 6,
        min_length: 1,
        length_penalty: 0.0,
        num_hypotheses: 1,
    };
    let decoder = Decoder::new(options).unwrap();
    for host_steps in [false, true] {
        // Row i of the state: the tokens of prefix i so far, summed with weights (two columns).
        let (mut host_state, mut device_state): (Vec<f32>, Option<LoDTensor>) = (vec![], None);
        let mut seen = 0;
        decoder
            .run_tensors(4, &mut |info| {
                let p = info.ids.len();
                let on_host = host_steps && info.step % 3 == 1;
                match info.parent_idx_tensor {
                    None => assert!(info.step == 0 || (host_steps && info.step % 3 == 2), "step {}", info.step),
                    Some(parents) => {
                        assert!(info.step > 0 && !(host_steps && info.step % 3 == 2), "step {}", info.step);
                        assert_eq!((parents.tensor().place(), parents.tensor().dtype()), (GPU, DType::I32));
                        let values: Vec<i64> =
                            to_place(parents, Place::Cpu).unwrap().tensor().index_values("parents").unwrap();
                        assert_eq!(values, info.parent_idx, "step {}", info.step);
                        seen += 1;
                    }
                }
                let previous = std::mem::take(&mut host_state);
                host_state = (0..p)
                    .flat_map(|i| {
                        let parent = info.parent_idx[i] as usize;
                        let base =
                            if info.step == 0 { [0.0, 0.0] } else { [previous[2 * parent], previous[2 * parent + 1]] };
                        [base[0] * 0.5 + info.ids[i] as f32, base[1] + 1.0]
                    })
                    .collect();
                // The device state: reordered on the device where the parents are there, else
                // made from the host state (step 0, after a host step).
                let tokens = gpu(&LoDTensor::dense(
                    Tensor::from_slice(&info.ids.iter().map(|&t| t as f32).collect::<Vec<_>>(), &[p, 1]).unwrap(),
                ));
                let fresh = || gpu(&LoDTensor::dense(Tensor::from_slice(&host_state, &[p, 2]).unwrap()));
                device_state = Some(match (info.parent_idx_tensor, device_state.take()) {
                    (Some(parents), Some(state)) => {
                        let reordered = lodtensor::beam_search_gather_states(&[&state, &tokens], parents).unwrap();
                        let old = to_place(&reordered[0], Place::Cpu).unwrap();
                        let old = old.tensor().as_slice::<f32>().unwrap();
                        let expect: Vec<f32> = (0..p)
                            .flat_map(|i| [old[2 * i] * 0.5 + info.ids[i] as f32, old[2 * i + 1] + 1.0])
                            .collect();
                        assert_eq!(expect, host_state, "step {}: the device state followed other parents", info.step);
                        fresh()
                    }
                    _ => fresh(),
                });
                let lp: Vec<f32> = (0..p * 9)
                    .map(|k| -(((k * 7 + info.step * 5 + host_state[2 * (k / 9)] as usize) % 11) as f32))
                    .collect();
                let lp = LoDTensor::dense(Tensor::from_slice(&lp, &[p, 9]).unwrap());
                Ok(if on_host { lp } else { gpu(&lp) })
            })
            .unwrap();
        assert!(seen >= 2, "the parents came on the device at {seen} steps");
    }
}

/// The same sentences and scores, bit for bit, wherever `got`'s tensors are.
#[track_caller]
fn assert_same_hypotheses(got: &Hypotheses, want: &Hypotheses, what: &str) {
    assert_eq!(got.ids.lod(), want.ids.lod(), "{what}: sentences");
    assert_eq!(tensor_bytes(got.ids.tensor()), want.ids.tensor().bytes().unwrap(), "{what}: ids");
    assert_eq!(tensor_bytes(got.scores.tensor()), want.scores.tensor().bytes().unwrap(), "{what}: scores");
}

#[test]
fn gpu_decoder_equals_cpu() {
    if !gpu_or_skip() {
        return;
    }
    for (case, dtype) in [DType::F32, DType::F16, DType::BF16].into_iter().enumerate() {
        let options = DecoderOptions {
            beam_size: 3,
            vocab_size: 11,
            start_id: 0,
            end_id: 2,
            max_length: 7,
            min_length: 2,
            length_penalty: 0.6,
            num_hypotheses: 2,
        };
        let decoder = Decoder::new(options).unwrap();
        // A deterministic "model": log-probs from the prefix's token, parent and step.
        let model = |info: &lodtensor::StepInfo| -> Vec<f32> {
            let v = info.vocab_size;
            let mut out = vec![0f32; info.ids.len() * v];
            for (r, row) in out.chunks_exact_mut(v).enumerate() {
                for (j, x) in row.iter_mut().enumerate() {
                    let h =
                        (info.ids[r] as usize * 7 + info.parent_idx[r] as usize * 3 + j * 5 + info.step * 11 + case)
                            % 13;
                    *x = -(h as f32) / 2.0;
                }
            }
            out
        };
        let want = decoder
            .run_tensors(3, &mut |info| {
                Ok(LoDTensor::dense(tensor_of(dtype, &model(info), &[info.ids.len(), info.vocab_size])))
            })
            .unwrap();
        let got = decoder
            .run_tensors(3, &mut |info| {
                Ok(gpu(&LoDTensor::dense(tensor_of(dtype, &model(info), &[info.ids.len(), info.vocab_size]))))
            })
            .unwrap();
        assert_same_hypotheses(&got, &want, &format!("{dtype}: device"));
        // The host, then cuda:0 twice, and again: a device step after a host step must start from
        // the host step's selection, not from the selection its device made before.
        let mixed = decoder
            .run_tensors(3, &mut |info| {
                let lp = LoDTensor::dense(tensor_of(dtype, &model(info), &[info.ids.len(), info.vocab_size]));
                Ok(if info.step % 3 == 0 { lp } else { gpu(&lp) })
            })
            .unwrap();
        assert_same_hypotheses(&mixed, &want, &format!("{dtype}: alternating"));
        if dtype == DType::F32 {
            // The host-buffer API gives the same sentences.
            let plain = decoder
                .run(
                    3,
                    &mut |info, lp| {
                        lp.copy_from_slice(&model(info));
                        Ok(())
                    },
                    None,
                )
                .unwrap();
            assert_same_hypotheses(&plain, &want, "run");
        }
    }
}

/// The decoder on random options (beams past the device's list sizes of 4, 8 and 16, vocabularies
/// past its chunk of 8192 log-probs, min_length bans, sources that end early) and random models
/// (ties, -inf, NaN): the sentences and scores of its device steps, and of steps alternating
/// between the places, equal its host steps'.
#[test]
fn gpu_decoder_random_options_equal_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0x5EED_DEC0_DE12_3457);
    for case in 0..16 {
        let beam_size = [1, 2, 3, 5, 8, 9, 16, 17, 24][rng.below(9)];
        let vocab_size = [2, 3, 7, 40, 300, 8193][rng.below(6)];
        // The emulator takes its time over a long vocabulary: fewer steps and sources there.
        let long = vocab_size > 8192;
        let max_length = 1 + rng.below(if long { 3 } else { 6 });
        // start_id may lie outside the vocabulary; it must differ from end_id.
        let end_id = rng.below(vocab_size) as i64;
        let start_id = match rng.below(vocab_size + 1) as i64 {
            s if s == end_id => s + 1,
            s => s,
        };
        let options = DecoderOptions {
            beam_size,
            vocab_size,
            start_id,
            end_id,
            max_length,
            min_length: rng.below(max_length + 1),
            length_penalty: [0.0, 0.6, 2.0][rng.below(3)],
            num_hypotheses: 1 + rng.below(beam_size),
        };
        let dtype = [DType::F32, DType::F16, DType::BF16][rng.below(3)];
        let (sources, salt, ties) = (1 + rng.below(if long { 2 } else { 5 }), rng.next(), rng.below(2) == 0);
        let decoder = Decoder::new(options.clone()).unwrap();
        // A deterministic model: each log-prob a hash of the prefix's token, parent and score,
        // the column and the step; small integers (ties) or spread values, -inf and NaN now and
        // then, and end_id likelier than the rest so that sources end early.
        let model = |info: &lodtensor::StepInfo| -> Vec<f32> {
            let v = info.vocab_size;
            let mut out = vec![0f32; info.ids.len() * v];
            for (r, row) in out.chunks_exact_mut(v).enumerate() {
                for (j, x) in row.iter_mut().enumerate() {
                    let mut h = salt ^ (info.ids[r] as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                    h ^= (info.parent_idx[r] as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
                    h ^= (info.scores[r].to_bits() as u64).wrapping_mul(0x1656_67B1_9E37_79F9);
                    h ^= ((j as u64) << 20 | info.step as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93);
                    h ^= h >> 29;
                    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
                    h ^= h >> 32;
                    *x = match h % 64 {
                        0 => f32::NEG_INFINITY,
                        1 if case % 4 == 0 => f32::NAN,
                        _ if j as i64 == options.end_id && h.is_multiple_of(3) => -0.5,
                        _ if ties => -(((h >> 8) % 6) as f32),
                        _ => -(((h >> 8) % 100_000) as f32) / 10_000.0,
                    };
                }
            }
            out
        };
        let lp = |info: &lodtensor::StepInfo| {
            LoDTensor::dense(tensor_of(dtype, &model(info), &[info.ids.len(), info.vocab_size]))
        };
        let what = format!("case {case}: {options:?}, {dtype}, {sources} sources, ties {ties}");
        let want = decoder.run_tensors(sources, &mut |info| Ok(lp(info))).unwrap();
        let got = decoder.run_tensors(sources, &mut |info| Ok(gpu(&lp(info)))).unwrap();
        let mixed = decoder
            .run_tensors(sources, &mut |info| Ok(if info.step % 2 == 1 { lp(info) } else { gpu(&lp(info)) }))
            .unwrap();
        assert_same_hypotheses(&got, &want, &format!("{what}: device"));
        assert_same_hypotheses(&mixed, &want, &format!("{what}: alternating"));
    }
}

// ---- speed -------------------------------------------------------------------------------------

/// The fused step on 64 sources x 5 prefixes x 32000 float32 log-probs against one device read of
/// the same bytes (a sum kernel). Target: within 2x. Ignored in the normal run; scripts/test-gpu.sh
/// runs it (`-- --ignored --nocapture gpu_fused_step_speed`).
#[test]
#[ignore]
fn gpu_fused_step_speed() {
    if !gpu_or_skip() {
        return;
    }
    let (sources, beam, vocab) = (64usize, 5usize, 32000usize);
    let rows = sources * beam;
    let mut rng = Rng(5);
    let lp: Vec<f32> = (0..rows * vocab).map(|_| -10.0 * rng.unit()).collect();
    let log_probs = gpu(&LoDTensor::dense(Tensor::from_slice(&lp, &[rows, vocab]).unwrap()));
    let lod = Lod::from_lengths(&[vec![beam; sources]]).unwrap();
    let ids: Vec<i64> = (0..rows).map(|i| 3 + i as i64 % 7).collect();
    let pre_ids = gpu(&LoDTensor::new(Tensor::from_slice(&ids, &[rows, 1]).unwrap(), lod.clone()).unwrap());
    let pre_scores = gpu(&LoDTensor::new(Tensor::from_slice(&vec![-1f32; rows], &[rows, 1]).unwrap(), lod).unwrap());
    // A decoder keeps the device busy step after step: a quarter second of steps first, so that the
    // figures are not those of an idle device's clocks.
    let warm = std::time::Instant::now();
    while warm.elapsed().as_secs_f64() < 0.25 {
        drop(beam_search_fused_step(&pre_ids, &pre_scores, &log_probs, beam, 1).unwrap());
    }
    let read = min_time(&|| lodtensor::backend::cuda::read_bandwidth_probe(log_probs.tensor()).unwrap());
    let step = min_time(&|| drop(beam_search_fused_step(&pre_ids, &pre_scores, &log_probs, beam, 1).unwrap()));
    // The same step on a LoD met for the first time, whose sources' rows go up with the step (the
    // LoD above keeps them on the device after its first step).
    let fresh = min_time(&|| {
        let lod = Lod::from_lengths(&[vec![beam; sources]]).unwrap();
        let ids = LoDTensor::new(pre_ids.tensor().clone(), lod).unwrap();
        drop(beam_search_fused_step(&ids, &pre_scores, &log_probs, beam, 1).unwrap())
    });
    // Where the step's time goes: top_k of the rows (one block per row) for comparison; the step
    // on rows of `beam` (next to no top-k work: its one launch, the selection and the copy of the
    // output LoD to the host); the floor is what two synchronisations alone cost, in every figure
    // here.
    let row_topk = min_time(&|| drop(top_k(&log_probs, beam, true).unwrap()));
    // The same step on rows of `beam` log-probs: the selection and the copy of the output LoD
    // with next to no top-k work.
    let narrow = gpu(&LoDTensor::dense(Tensor::from_slice(&lp[..rows * beam], &[rows, beam]).unwrap()));
    let rest = min_time(&|| drop(beam_search_fused_step(&pre_ids, &pre_scores, &narrow, beam, 1).unwrap()));
    // A step's small copies: its source offsets up, its row offsets down (and a wait).
    let offsets = LoDTensor::dense(Tensor::from_slice(&vec![0i64; rows + 1], &[rows + 1]).unwrap());
    let up = min_time(&|| drop(gpu(&offsets)));
    let on_device = gpu(&offsets);
    let down = min_time(&|| drop(to_place(&on_device, Place::Cpu).unwrap()));
    let floor = min_time(&|| ());
    // The device step without the operator's checks and LoD bookkeeping, also with the host copies
    // of its outputs that the decoder takes (in the same copy back), and the cost of one tiny
    // kernel and its wait (the step has one kernel and a copy back, which waits).
    let backend_step = |lp: &LoDTensor, width: usize, host_copies: bool| {
        min_time(&|| {
            drop(
                lodtensor::backend::cuda::fused_step(
                    StepSources::new(pre_ids.lod(), 0).unwrap(),
                    beam,
                    lp.tensor(),
                    width,
                    pre_ids.tensor(),
                    pre_scores.tensor(),
                    1,
                    None,
                    host_copies,
                )
                .unwrap(),
            )
        })
    };
    let (backend_wide, backend_narrow) = (backend_step(&log_probs, vocab, false), backend_step(&narrow, beam, false));
    let backend_host = backend_step(&log_probs, vocab, true);
    // A decoder's step on these log-probs (the fused step, the host copies of its selection and
    // the decoder's own bookkeeping; each step on the last one's selection, the first on one
    // prefix per source): 32 steps, end_id banned throughout so that none ends, and the ranking.
    let steps = 32;
    let options = DecoderOptions {
        beam_size: beam,
        vocab_size: vocab,
        start_id: 0,
        end_id: 1,
        max_length: steps,
        min_length: steps,
        length_penalty: 0.0,
        num_hypotheses: 1,
    };
    let decoder = Decoder::new(options).unwrap();
    let decode = min_time(&|| {
        let lp = |info: &lodtensor::StepInfo| Ok(LoDTensor::dense(log_probs.tensor().slice_rows(0..info.ids.len())?));
        drop(decoder.run_tensors(sources, &mut |info| lp(info)).unwrap())
    }) / steps as f64;
    let tiny = gpu(&LoDTensor::dense(Tensor::from_slice(&[0i64; 4], &[4]).unwrap()));
    let launch = min_time(&|| lodtensor::backend::cuda::read_bandwidth_probe(tiny.tensor()).unwrap());
    let mb = log_probs.tensor().nbytes() as f64 / 1e6;
    eprintln!(
        "fused step {sources} x {beam} x {vocab} f32 ({mb:.0} MB): one read {:.1} us ({:.0} GB/s), fused step {:.1} us \
         ({:.2}x the read), on a new LoD {:.1} us; top_k of the rows {:.1} us; the step on rows of {beam} {:.1} us; \
         the backend's step {:.1} us, on rows of {beam} {:.1} us, with host copies {:.1} us; a decoder's step \
         (Decoder::run_tensors, {steps} steps) {:.1} us; one tiny launch and wait {:.1} us; {} offsets up {:.1} us, down {:.1} \
         us; synchronisation floor {:.1} us",
        read * 1e6,
        mb / 1e3 / read,
        step * 1e6,
        step / read,
        fresh * 1e6,
        row_topk * 1e6,
        rest * 1e6,
        backend_wide * 1e6,
        backend_narrow * 1e6,
        backend_host * 1e6,
        decode * 1e6,
        launch * 1e6,
        rows + 1,
        up * 1e6,
        down * 1e6,
        floor * 1e6
    );
}

/// The multi-tensor moves (pack, concat along axis 0 and 1, unstack, unstack and stack of rows of
/// one word, gather_state, gather_states) against a device copy of the same bytes, measured in the
/// same run. Ignored in the normal run;
/// scripts/test-gpu.sh runs it (`-- --ignored --nocapture gpu_tensor_array_bandwidth`).
#[test]
#[ignore]
fn gpu_tensor_array_bandwidth() {
    if !gpu_or_skip() {
        return;
    }
    let report = |what: &str, bytes: f64, op: f64, copy: f64| {
        eprintln!(
            "{what} ({} MiB): copy {:.0} GB/s, op {:.0} GB/s = {:.0}% of copy",
            (bytes / 2.0) as usize >> 20,
            bytes / copy / 1e9,
            bytes / op / 1e9,
            100.0 * copy / op
        );
    };
    // 4096 sequences of 1..=64 rows of 256 float32: pack of the unpacked steps.
    let lengths: Vec<usize> = (0..4096).map(|i| 1 + (i * 37) % 64).collect();
    let rows: usize = lengths.iter().sum();
    let x = LoDTensor::new(
        Tensor::zeros(DType::F32, Dim::new(&[rows, 256]).unwrap()).unwrap(),
        Lod::from_lengths(&[lengths]).unwrap(),
    )
    .unwrap();
    let xd = gpu(&x);
    let table = RankTable::from_lod_tensor(&x, 0).unwrap();
    let steps = lodtensor::lod_tensor_to_array(&xd, &table).unwrap();
    let bytes = 2.0 * xd.tensor().nbytes() as f64;
    let copy = min_time(&|| drop(to_place(&xd, GPU).unwrap()));
    report("pack", bytes, min_time(&|| drop(array_to_lod_tensor(&steps, &table).unwrap())), copy);
    // 8 pieces of [4096, 1024] float32: concat along 0 and 1, and unstack along 1 of the stack.
    let pieces: Vec<LoDTensor> = (0..8)
        .map(|_| gpu(&LoDTensor::dense(Tensor::zeros(DType::F32, Dim::new(&[4096, 1024]).unwrap()).unwrap())))
        .collect();
    let array = TensorArray::from_vec(pieces);
    let whole = tensor_array_to_tensor(&array, 0, true).unwrap().0;
    let bytes = 2.0 * whole.tensor().nbytes() as f64;
    let copy = min_time(&|| drop(to_place(&whole, GPU).unwrap()));
    report("concat axis 0", bytes, min_time(&|| drop(tensor_array_to_tensor(&array, 0, false).unwrap())), copy);
    report("concat axis 1", bytes, min_time(&|| drop(tensor_array_to_tensor(&array, 1, false).unwrap())), copy);
    report("unstack axis 1", bytes, min_time(&|| drop(unstack(&whole, 1).unwrap())), copy);
    // The 256 columns of a [2^20, 256] float32 matrix (1 GiB), rows of one word: unstack along 1
    // and stack them back (the tiled kernel).
    let matrix = gpu(&LoDTensor::dense(Tensor::zeros(DType::F32, Dim::new(&[1 << 20, 256]).unwrap()).unwrap()));
    let bytes = 2.0 * matrix.tensor().nbytes() as f64;
    let copy = min_time(&|| drop(to_place(&matrix, GPU).unwrap()));
    report("unstack [2^20, 256] f32 along 1", bytes, min_time(&|| drop(unstack(&matrix, 1).unwrap())), copy);
    let columns = unstack(&matrix, 1).unwrap();
    let stack = || drop(tensor_array_to_tensor(&columns, 1, true).unwrap());
    report("stack 256 x [2^20] f32 along 1", bytes, min_time(&stack), copy);
    // gather_state: 64 x 5 prefixes of a [320, 65536] float32 state by reversed parents.
    let state = gpu(&LoDTensor::dense(Tensor::zeros(DType::F32, Dim::new(&[320, 65536]).unwrap()).unwrap()));
    let parents: Vec<i32> = (0..320).rev().collect();
    let parents = gpu(&LoDTensor::dense(Tensor::from_slice(&parents, &[320]).unwrap()));
    let bytes = 2.0 * state.tensor().nbytes() as f64;
    let copy = min_time(&|| drop(to_place(&state, GPU).unwrap()));
    report("gather_state", bytes, min_time(&|| drop(beam_search_gather_state(&state, &parents).unwrap())), copy);
    // gather_states of a decoder's caches, 24 layers' keys and values (48 states) for the same
    // 320 prefixes, float16 rows of 1024 elements (30 MiB, where launches weigh) and of 16384
    // (480 MiB): one call for all, against a call a state and a copy of all their bytes.
    for width in [1024, 16384] {
        let states: Vec<LoDTensor> = (0..48)
            .map(|_| gpu(&LoDTensor::dense(Tensor::zeros(DType::F16, Dim::new(&[320, width]).unwrap()).unwrap())))
            .collect();
        let refs: Vec<&LoDTensor> = states.iter().collect();
        let all = gpu(&LoDTensor::dense(Tensor::zeros(DType::F16, Dim::new(&[48 * 320, width]).unwrap()).unwrap()));
        let bytes = 2.0 * all.tensor().nbytes() as f64;
        let copy = min_time(&|| drop(to_place(&all, GPU).unwrap()));
        let one_call = min_time(&|| drop(lodtensor::beam_search_gather_states(&refs, &parents).unwrap()));
        let per_state = min_time(&|| {
            for s in &states {
                drop(beam_search_gather_state(s, &parents).unwrap());
            }
        });
        report(&format!("gather_states 48 x [320, {width}] f16, one call"), bytes, one_call, copy);
        report(&format!("gather_states 48 x [320, {width}] f16, a call a state"), bytes, per_state, copy);
        eprintln!(
            "gather_states 48 x [320, {width}] f16: one call {:.1} us, a call a state {:.1} us",
            one_call * 1e6,
            per_state * 1e6
        );
    }
}
