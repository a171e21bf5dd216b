//! What the ops ask of a CUDA device, read from its counters (`cuda_counters`; emulated here with
//! `--features cuda-emulator`): the counters count each kind of request exactly, and every op's
//! launches, fills, copies, waits and allocations are the same for 300 sequences as for 4800, so
//! no op launches, uploads or waits per sequence; a repeated call takes every block from the
//! cache, never from the driver; and a decoder loop on the device neither allocates from the
//! driver nor uploads more than the model's log-probs once warm. The tests of this file hold one
//! lock, because the counters are the device's, shared by every thread. Without a usable device
//! each test says it was skipped; under `LODTENSOR_GUARD_PAGES=1`, which turns the block cache off
//! (every block from the driver, every free a wait), too.

mod common;
mod cuda_common;

use common::Rng;
use cuda_common::{gpu, gpu_or_skip, race_check, GPU};
use lodtensor::ops::{
    cast, gather_rows, sequence_concat, sequence_conv, sequence_enumerate, sequence_erase, sequence_mask,
    sequence_reshape, sequence_reverse, sequence_slice, sequence_softmax,
};
use lodtensor::{
    array_to_lod_tensor, beam_search_decode, beam_search_fused_step, beam_search_gather_states,
    beam_search_gather_tree, beam_search_step, cuda_counters, cuda_device_count, lod_tensor_to_array,
    reorder_lod_tensor_by_rank, scatter_rows, sequence_expand, sequence_expand_as, sequence_first_step, sequence_pad,
    sequence_pool, sequence_scatter, sequence_unpad, shrink_rnn_memory, synchronize, tensor_array_to_tensor, to_place,
    top_k, CudaCounters, DType, Decoder, DecoderOptions, Dim, Error, LoDTensor, Lod, Place, PoolType, RankTable,
    ScatterMode, Tensor, CUDA_COUNTERS,
};
use std::sync::Mutex;

static DEVICE: Mutex<()> = Mutex::new(());

/// What `f` asked of cuda:0, with what it returns.
fn counted<R>(f: impl FnOnce() -> R) -> (CudaCounters, R) {
    let before = cuda_counters(0).unwrap();
    let r = f();
    (cuda_counters(0).unwrap().since(&before), r)
}

/// Each request is counted once, with its bytes: a copy up, one on the device, one down, a wait, a
/// fill and a launch (fill_on), and an allocation from the cache; an unused device reads zero, and
/// a device beyond the count (or any, without CUDA) is an error.
#[test]
fn counters_count_each_request() {
    let _device = DEVICE.lock().unwrap_or_else(|e| e.into_inner());
    if !gpu_or_skip() {
        assert!(matches!(cuda_counters(0), Err(Error::Unsupported(m)) if m.contains("cuda:0")));
        return;
    }
    if common::caches_off_for_guard_pages() {
        return;
    }
    let host = LoDTensor::from_slice(&[1f32, 2., 3., 4., 5., 6.], &[3, 2], vec![vec![0, 1, 3]]).unwrap();
    let (c, dev) = counted(|| gpu(&host));
    assert_eq!(c.uploads, 1, "{c:?}");
    assert_eq!(c.upload_bytes, 24, "{c:?}");
    assert_eq!((c.allocations, c.launches, c.downloads, c.waits), (1, 0, 0, 0), "{c:?}");
    let (c, _copy) = counted(|| to_place(&dev, GPU).unwrap());
    assert_eq!((c.device_copies, c.uploads, c.waits, c.allocations), (1, 0, 0, 1), "{c:?}");
    let (c, back) = counted(|| to_place(&dev, Place::Cpu).unwrap());
    assert_eq!((c.downloads, c.download_bytes, c.waits, c.uploads, c.allocations), (1, 24, 1, 0, 0), "{c:?}");
    assert_eq!(back.tensor().as_slice::<f32>().unwrap(), host.tensor().as_slice::<f32>().unwrap());
    let (c, ()) = counted(|| synchronize(GPU).unwrap());
    assert_eq!(c, CudaCounters { waits: 1, ..CudaCounters::default() });
    // A block of a size class the cache has never held comes from the driver; freed and asked for
    // again, from the cache.
    let odd = LoDTensor::dense(Tensor::from_slice(&vec![1u8; 3_000_017], &[3_000_017]).unwrap());
    let (c, big) = counted(|| gpu(&odd));
    assert_eq!((c.allocations, c.driver_allocations, c.upload_bytes), (1, 1, 3_000_017), "{c:?}");
    drop(big);
    let (c, _big) = counted(|| gpu(&odd));
    assert_eq!((c.allocations, c.driver_allocations), (1, 0), "{c:?}");
    // A kernel: fill_on, its value uploaded.
    let dims = Dim::new(&[1000]).unwrap();
    let (c, _ones) = counted(|| lodtensor::ops::fill_on(GPU, DType::F32, dims, 1.0).unwrap());
    assert_eq!((c.launches, c.uploads, c.waits), (1, 1, 0), "{c:?}");
    // A bad-index count is a slot the device keeps zero (made with one fill at its first use): a
    // call that finds no bad index fills nothing; one that finds one sets its slot back to zero
    // (one fill), so the next call, handed that slot, is not told of a bad index it does not have.
    let index = gpu(&LoDTensor::dense(Tensor::from_slice(&[2i64, 0], &[2]).unwrap()));
    gather_rows(&dev, &index).unwrap();
    let (c, _rows) = counted(|| gather_rows(&dev, &index).unwrap());
    assert_eq!((c.fills, c.launches, c.downloads, c.waits), (0, 1, 1, 1), "{c:?}");
    let bad_index = gpu(&LoDTensor::dense(Tensor::from_slice(&[2i64, 3], &[2]).unwrap()));
    let (c, bad) = counted(|| gather_rows(&dev, &bad_index));
    assert!(matches!(bad, Err(Error::OutOfRange(ref m)) if m.contains("index[1] = 3")), "{bad:?}");
    assert_eq!((c.fills, c.launches), (1, 1), "{c:?}");
    let (c, rows) = counted(|| gather_rows(&dev, &index).unwrap());
    assert_eq!(c.fills, 0, "{c:?}");
    let rows = to_place(&rows, Place::Cpu).unwrap();
    assert_eq!(rows.tensor().as_slice::<f32>().unwrap(), [5., 6., 1., 2.]);
    assert_eq!(c.values().len(), CUDA_COUNTERS);
    let count = cuda_device_count().unwrap();
    // The emulator's second device, which nothing in this program uses.
    if count > 1 {
        assert_eq!(cuda_counters(1).unwrap(), CudaCounters::default());
    }
    assert!(
        matches!(cuda_counters(count as u32), Err(Error::InvalidArgument(m)) if m.contains(&format!("cuda:{count}")))
    );
}

/// beam_search_gather_states launches once for all the states that move in words of one size,
/// with one table uploaded for all: 1 launch and 1 upload for 96 float32 states (a decoder's
/// per-layer caches), 5 launches for states of 16-, 8-, 4-, 2- and 1-byte words; one state is one
/// launch and no table. Each call waits once, to read its count of bad parents.
#[test]
fn gather_states_launch_once_per_word_size() {
    let _device = DEVICE.lock().unwrap_or_else(|e| e.into_inner());
    if !gpu_or_skip() || common::caches_off_for_guard_pages() {
        return;
    }
    let state = |rows: usize, row_bytes: usize| {
        let bytes: Vec<u8> = (0..rows * row_bytes).map(|i| (i * 7) as u8).collect();
        gpu(&LoDTensor::dense(Tensor::from_bytes(DType::U8, Dim::new(&[rows, row_bytes]).unwrap(), &bytes).unwrap()))
    };
    let parents = gpu(&LoDTensor::dense(Tensor::from_slice(&[3i64, 0, 0, 2, 1], &[5]).unwrap()));
    let layers: Vec<LoDTensor> = (0..96).map(|_| state(4, 256)).collect();
    let words: Vec<LoDTensor> = [16, 8, 4, 2, 1, 48, 24].into_iter().map(|b| state(4, b)).collect();
    for (what, states, launches, uploads) in
        [("96 states", &layers, 1, 1), ("5 word sizes", &words, 5, 1), ("1 state", &words[..1].to_vec(), 1, 0)]
    {
        let refs: Vec<&LoDTensor> = states.iter().collect();
        beam_search_gather_states(&refs, &parents).unwrap();
        let (c, out) = counted(|| beam_search_gather_states(&refs, &parents).unwrap());
        assert_eq!((c.launches, c.uploads, c.waits, c.downloads), (launches, uploads, 1, 1), "{what}: {c:?}");
        assert_eq!(c.upload_bytes, uploads * 40 * states.len() as u64, "{what}: one table entry a state: {c:?}");
        assert_eq!(out.len(), states.len());
    }
}

/// sequence_pad is one launch whether its pad value is a whole step or one element (which the
/// kernel repeats itself), for elements of 1, 2, 4 and 8 bytes; the slots hold the pad value.
#[test]
fn sequence_pad_launches_once() {
    let _device = DEVICE.lock().unwrap_or_else(|e| e.into_inner());
    if !gpu_or_skip() || common::caches_off_for_guard_pages() {
        return;
    }
    let lod = Lod::from_lengths(&[vec![2, 0, 1]]).unwrap();
    for (dtype, pad_bytes) in [
        (DType::U8, &[0xA1u8][..]),
        (DType::I16, &[1, 2]),
        (DType::F32, &[1, 2, 3, 4]),
        (DType::I64, &[1, 2, 3, 4, 5, 6, 7, 8]),
    ] {
        let size = dtype.size();
        let x = gpu(&LoDTensor::new(
            Tensor::from_bytes(dtype, Dim::new(&[3, 6]).unwrap(), &vec![0x55; 18 * size]).unwrap(),
            lod.clone(),
        )
        .unwrap());
        let one = gpu(&LoDTensor::dense(Tensor::from_bytes(dtype, Dim::new(&[1]).unwrap(), pad_bytes).unwrap()));
        let step =
            gpu(&LoDTensor::dense(Tensor::from_bytes(dtype, Dim::new(&[6]).unwrap(), &pad_bytes.repeat(6)).unwrap()));
        for pad in [&one, &step] {
            sequence_pad(&x, pad, 3).unwrap();
            let (c, (padded, _)) = counted(|| sequence_pad(&x, pad, 3).unwrap());
            assert_eq!(
                (c.launches, c.allocations),
                (1, 2),
                "{dtype}, pad of {} element(s): {c:?}",
                pad.tensor().numel()
            );
            // Slot 1 (an empty sequence) is three steps of the pad value.
            let bytes = to_place(&padded, Place::Cpu).unwrap().tensor().bytes().unwrap().to_vec();
            let row = 6 * size;
            assert_eq!(bytes[3 * row..6 * row], pad_bytes.repeat(18)[..], "{dtype}");
        }
    }
}

/// The inputs of every op, on cuda:0, for `seqs` sequences.
struct Inputs {
    /// float32 [rows, 4], `seqs` sequences of 0-5 rows.
    x: LoDTensor,
    /// x's values as a column, [rows, 1], with x's LoD.
    col: LoDTensor,
    /// int64 ids in [0, 8), [rows, 1], with x's LoD.
    ids: LoDTensor,
    /// float32 [seqs, 4], one row per sequence (no LoD).
    per_seq: LoDTensor,
    /// float32 [seqs, 8] (no LoD), and ids in [0, 8) and updates, [rows, 1] with x's LoD.
    scatter_x: LoDTensor,
    scatter_updates: LoDTensor,
    /// int64 [seqs]: 0 each (sequence_slice's offsets), and each sequence's length; int64
    /// [seqs + 1]: x's offsets (lod_reset's target).
    zeros: LoDTensor,
    lengths: LoDTensor,
    offsets: LoDTensor,
    /// sequence_pad's result (pad value 0, padded to the longest) and its pad value.
    padded: LoDTensor,
    pad: LoDTensor,
    /// The rank table of x and x unpacked by it.
    table: RankTable,
    steps: lodtensor::TensorArray,
    /// float32 [200, 4] (no LoD), an int64 index of rows (one per row of x) and [rows, 4] updates.
    rows_x: LoDTensor,
    rows_index: LoDTensor,
    rows_updates: LoDTensor,
    /// sequence_conv's filter: [3 * 4, 5].
    filter: LoDTensor,
    /// Beam prefixes: `seqs / 16` sources of 0-4 prefixes each, ids and scores [prefixes, 1] (two LoD
    /// levels), log-probs [prefixes, 50], and the unfused step's candidates [prefixes, 3].
    pre_ids: LoDTensor,
    pre_scores: LoDTensor,
    log_probs: LoDTensor,
    cand_ids: LoDTensor,
    cand_scores: LoDTensor,
    /// beam_search_decode's steps: 4 fused steps on the device from `seqs / 16` sources of one
    /// prefix each (beam 4), their selected ids and scores.
    decode_ids: lodtensor::TensorArray,
    decode_scores: lodtensor::TensorArray,
    /// gather_tree's ids and parents, int64 [6, seqs, 4].
    tree_ids: LoDTensor,
    tree_parents: LoDTensor,
}

fn inputs(rng: &mut Rng, seqs: usize) -> Inputs {
    let lengths: Vec<usize> = (0..seqs).map(|_| rng.below(6)).collect();
    let rows: usize = lengths.iter().sum();
    let lod = Lod::from_lengths(std::slice::from_ref(&lengths)).unwrap();
    let floats = |rng: &mut Rng, n: usize| (0..n).map(|_| rng.unit() - 0.5).collect::<Vec<f32>>();
    let ints = |rng: &mut Rng, n: usize, below: usize| (0..n).map(|_| rng.below(below) as i64).collect::<Vec<_>>();
    let with_lod = |t: Tensor, lod: &Lod| LoDTensor::new(t, lod.clone()).unwrap();
    let dense = |t: Tensor| LoDTensor::dense(t);
    let x = with_lod(Tensor::from_slice(&floats(rng, rows * 4), &[rows, 4]).unwrap(), &lod);
    let col = with_lod(Tensor::from_slice(&floats(rng, rows), &[rows, 1]).unwrap(), &lod);
    let ids = with_lod(Tensor::from_slice(&ints(rng, rows, 8), &[rows, 1]).unwrap(), &lod);
    let pad = dense(Tensor::from_slice(&[0f32], &[1]).unwrap());
    let (padded, _) = sequence_pad(&x, &pad, -1).unwrap();
    let table = RankTable::from_lod_tensor(&x, 0).unwrap();
    let steps = lod_tensor_to_array(&gpu(&x), &table).unwrap();
    // A block per prefix row in the beam kernels, which the emulator runs slowly: a source per 16
    // sequences.
    let prefix_lengths: Vec<usize> = (0..seqs / 16).map(|_| rng.below(5)).collect();
    let prefixes: usize = prefix_lengths.iter().sum();
    let beam_lod = Lod::from_lengths(&[prefix_lengths, vec![1; prefixes]]).unwrap();
    let tree: Vec<usize> = vec![6, seqs, 4];
    let (decode_ids, decode_scores) = {
        let sources = seqs / 16;
        let identity: Vec<usize> = (0..=sources).collect();
        let lod = Lod::from_offsets(vec![identity.clone(), identity]).unwrap();
        let mut ids = gpu(&with_lod(Tensor::from_slice(&vec![0i64; sources], &[sources, 1]).unwrap(), &lod));
        let mut scores = gpu(&with_lod(Tensor::from_slice(&vec![0f32; sources], &[sources, 1]).unwrap(), &lod));
        let (mut all_ids, mut all_scores) = (vec![ids.clone()], vec![scores.clone()]);
        for _ in 0..4 {
            let rows = ids.tensor().numel();
            let lp = gpu(&dense(Tensor::from_slice(&floats(rng, rows * 20), &[rows, 20]).unwrap()));
            let out = beam_search_fused_step(&ids, &scores, &lp, 4, 1).unwrap();
            (ids, scores) = (out.selected_ids, out.selected_scores);
            all_ids.push(ids.clone());
            all_scores.push(scores.clone());
        }
        (lodtensor::TensorArray::from_vec(all_ids), lodtensor::TensorArray::from_vec(all_scores))
    };
    Inputs {
        decode_ids,
        decode_scores,
        per_seq: gpu(&dense(Tensor::from_slice(&floats(rng, seqs * 4), &[seqs, 4]).unwrap())),
        scatter_x: gpu(&dense(Tensor::from_slice(&floats(rng, seqs * 8), &[seqs, 8]).unwrap())),
        scatter_updates: gpu(&with_lod(Tensor::from_slice(&floats(rng, rows), &[rows, 1]).unwrap(), &lod)),
        zeros: gpu(&dense(Tensor::from_slice(&vec![0i64; seqs], &[seqs, 1]).unwrap())),
        lengths: gpu(&dense(
            Tensor::from_slice(&lengths.iter().map(|&l| l as i64).collect::<Vec<_>>(), &[seqs]).unwrap(),
        )),
        offsets: gpu(&dense(
            Tensor::from_slice(&lod.levels()[0].iter().map(|&o| o as i64).collect::<Vec<_>>(), &[seqs + 1]).unwrap(),
        )),
        padded: gpu(&padded),
        pad: gpu(&pad),
        table,
        steps,
        rows_x: gpu(&dense(Tensor::from_slice(&floats(rng, 800), &[200, 4]).unwrap())),
        rows_index: gpu(&dense(Tensor::from_slice(&ints(rng, rows, 200), &[rows]).unwrap())),
        rows_updates: gpu(&dense(Tensor::from_slice(&floats(rng, rows * 4), &[rows, 4]).unwrap())),
        filter: gpu(&dense(Tensor::from_slice(&floats(rng, 60), &[12, 5]).unwrap())),
        pre_ids: gpu(&with_lod(Tensor::from_slice(&ints(rng, prefixes, 8), &[prefixes, 1]).unwrap(), &beam_lod)),
        pre_scores: gpu(&with_lod(Tensor::from_slice(&floats(rng, prefixes), &[prefixes, 1]).unwrap(), &beam_lod)),
        log_probs: gpu(&dense(Tensor::from_slice(&floats(rng, prefixes * 50), &[prefixes, 50]).unwrap())),
        cand_ids: gpu(&with_lod(Tensor::from_slice(&ints(rng, prefixes * 3, 50), &[prefixes, 3]).unwrap(), &beam_lod)),
        cand_scores: gpu(&with_lod(Tensor::from_slice(&floats(rng, prefixes * 3), &[prefixes, 3]).unwrap(), &beam_lod)),
        tree_ids: gpu(&dense(Tensor::from_slice(&ints(rng, 24 * seqs, 50), &tree).unwrap())),
        tree_parents: gpu(&dense(Tensor::from_slice(&ints(rng, 24 * seqs, 4), &tree).unwrap())),
        x: gpu(&x),
        col: gpu(&col),
        ids: gpu(&ids),
    }
}

/// An op on `Inputs`, returning what it made (dropped after the counters are read).
type Op = fn(&Inputs) -> Box<dyn std::any::Any>;

fn boxed<T: 'static>(r: lodtensor::Result<T>) -> Box<dyn std::any::Any> {
    Box::new(r.unwrap())
}

/// Every op with a CUDA path, by name; `true` for the ops that sort on the device, whose launches
/// grow with the log of their input (a radix pass per byte of the largest key, a scan level per
/// 2048-fold more entries), not with the number of sequences; and how many times a call waits for
/// the device, as the README says: to read the inputs that decide an output's shape (unpad's
/// lengths, slice's offsets and lengths in one copy, mask's lengths for `maxlen < 0`, erase's ids,
/// decode's steps in one copy, lod_reset's target), a count of bad index values (gather_rows, scatter_rows,
/// sequence_scatter, gather_tree), or a beam step's row offsets (the output LoD). No other op
/// waits.
fn ops() -> Vec<(&'static str, bool, u64, Op)> {
    vec![
        ("sequence_expand", false, 0, |i| boxed(sequence_expand(&i.per_seq, &i.x, 0))),
        ("merge of 3", false, 0, |i| boxed(LoDTensor::merge(&[&i.x, &i.x, &i.x]))),
        ("lod_reset", false, 1, |i| boxed(i.x.lod_reset(Some(&i.offsets), &[], false))),
        ("sequence_expand_as", false, 0, |i| boxed(sequence_expand_as(&i.per_seq, &i.x))),
        ("sequence_pad", false, 0, |i| boxed(sequence_pad(&i.x, &i.pad, -1))),
        ("sequence_unpad", false, 1, |i| boxed(sequence_unpad(&i.padded, &i.lengths))),
        ("sequence_pool sum", false, 0, |i| boxed(sequence_pool(&i.x, PoolType::Sum, 0.0))),
        ("sequence_pool max", false, 0, |i| boxed(sequence_pool(&i.x, PoolType::Max, 0.0))),
        ("sequence_first_step", false, 0, |i| boxed(sequence_first_step(&i.x))),
        ("sequence_softmax", false, 0, |i| boxed(sequence_softmax(&i.col))),
        ("sequence_concat", false, 0, |i| boxed(sequence_concat(&[&i.x, &i.x]))),
        ("sequence_slice", false, 1, |i| boxed(sequence_slice(&i.x, &i.zeros, &i.zeros))),
        ("sequence_reverse", false, 0, |i| boxed(sequence_reverse(&i.x))),
        ("sequence_reshape", false, 0, |i| boxed(sequence_reshape(&i.x, 2))),
        ("sequence_mask", false, 1, |i| boxed(sequence_mask(&i.lengths, -1, DType::I64))),
        ("sequence_enumerate", false, 0, |i| boxed(sequence_enumerate(&i.ids, 2, 0))),
        ("sequence_erase", false, 1, |i| boxed(sequence_erase(&i.ids, &[3]))),
        ("sequence_conv", false, 0, |i| boxed(sequence_conv(&i.x, &i.filter, None, 3, -1, 1, false))),
        ("sequence_scatter", true, 1, |i| boxed(sequence_scatter(&i.scatter_x, &i.ids, &i.scatter_updates))),
        ("scatter_rows overwrite", false, 1, |i| {
            boxed(scatter_rows(&i.rows_x, &i.rows_index, &i.rows_updates, ScatterMode::Overwrite))
        }),
        ("scatter_rows add", true, 1, |i| {
            boxed(scatter_rows(&i.rows_x, &i.rows_index, &i.rows_updates, ScatterMode::Add))
        }),
        ("gather_rows", false, 1, |i| boxed(gather_rows(&i.rows_x, &i.rows_index))),
        ("beam_search_gather_states of 3", false, 1, |i| {
            boxed(beam_search_gather_states(&[&i.rows_x, &i.rows_x, &i.rows_updates], &i.rows_index))
        }),
        ("cast", false, 0, |i| boxed(cast(&i.x, DType::F16))),
        ("top_k", false, 0, |i| boxed(top_k(&i.log_probs, 2, true))),
        ("lod_tensor_to_array", false, 0, |i| boxed(lod_tensor_to_array(&i.x, &i.table))),
        ("array_to_lod_tensor", false, 0, |i| boxed(array_to_lod_tensor(&i.steps, &i.table))),
        ("reorder_lod_tensor_by_rank", false, 0, |i| boxed(reorder_lod_tensor_by_rank(&i.x, &i.table))),
        ("reorder_lod_tensor_by_rank of rows", false, 0, |i| boxed(reorder_lod_tensor_by_rank(&i.per_seq, &i.table))),
        ("shrink_rnn_memory", false, 0, |i| boxed(shrink_rnn_memory(&i.per_seq, &i.table, 1))),
        ("tensor_array_to_tensor", false, 0, |i| boxed(tensor_array_to_tensor(&i.steps, 0, false))),
        ("beam_search_step", false, 1, |i| {
            boxed(beam_search_step(&i.pre_ids, &i.pre_scores, Some(&i.cand_ids), &i.cand_scores, 0, 4, 0, true))
        }),
        ("beam_search_fused_step", false, 1, |i| {
            boxed(beam_search_fused_step(&i.pre_ids, &i.pre_scores, &i.log_probs, 4, 0))
        }),
        ("beam_search_decode", false, 1, |i| boxed(beam_search_decode(&i.decode_ids, &i.decode_scores, 4, 1))),
        ("beam_search_gather_tree", false, 1, |i| boxed(beam_search_gather_tree(&i.tree_ids, &i.tree_parents))),
    ]
}

/// The counters that say how a call went, without the bytes (which grow with the input).
fn shape(c: &CudaCounters) -> [u64; 7] {
    [c.launches, c.fills, c.device_copies, c.uploads, c.downloads, c.waits, c.allocations]
}

/// Every op asks the same of the device for 300 sequences as for 4800 (1200 under the race
/// check, where the kernels' time would dwarf every other test's): the same launches and
/// allocations (the sorting ops: at most 4 more of each), fills, copies and waits, in a first call
/// (the LoD not yet on the device; the memory kept zeroed for counting kernels perhaps made or
/// grown) and in a second on the same inputs; the second takes no block from the driver and fills
/// nothing but scatter_rows' table of last writers; each call waits for the device as often as
/// `ops` says. Prints each op's second call on 4800 sequences.
#[test]
fn calls_ask_the_same_for_any_number_of_sequences() {
    let _device = DEVICE.lock().unwrap_or_else(|e| e.into_inner());
    if !gpu_or_skip() || common::caches_off_for_guard_pages() {
        return;
    }
    let mut rng = Rng(0x51ed_270b_2b1c_4d3f);
    let many = if race_check() { 1200 } else { 4800 };
    let (small, large) = (inputs(&mut rng, 300), inputs(&mut rng, many));
    let label: &str = &many.to_string();
    eprintln!("| op | launches | fills | device copies | uploads (bytes) | downloads (bytes) | waits | allocations |");
    eprintln!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (name, sorts, waits, op) in ops() {
        let calls = |i: &Inputs| {
            let (first, out) = counted(|| op(i));
            drop(out);
            let (second, out) = counted(|| op(i));
            drop(out);
            (first, second)
        };
        let (small_first, small_second) = calls(&small);
        let (large_first, large_second) = calls(&large);
        for (what, s, l) in [("first", small_first, large_first), ("second", small_second, large_second)] {
            let (mut s_shape, l_shape) = (shape(&s), shape(&l));
            // What may differ, as [fewer, more] for the many sequences: a sort's launches and
            // allocations (scratch per pass and scan level); and in a first call, the memory the
            // device keeps zeroed for counting kernels, made at its first use and grown when a call
            // needs more (one fill and one allocation, in the 300's call or the other's).
            let kept = u64::from(what == "first");
            let sort = if sorts { 4 } else { 0 };
            for (at, [fewer, more]) in [(0, [0, sort]), (1, [kept, kept]), (6, [kept, sort + kept])] {
                if l_shape[at] + fewer >= s_shape[at] && l_shape[at] <= s_shape[at] + more {
                    s_shape[at] = l_shape[at];
                }
            }
            assert_eq!(
                s_shape, l_shape,
                "{name}, {what} call: [launches, fills, device copies, uploads, downloads, waits, allocations] \
                 for 300 sequences, then {many}: {s:?} against {l:?}"
            );
        }
        for (what, c) in [("300", small_first), ("300", small_second), (label, large_first), (label, large_second)] {
            assert_eq!(c.waits, waits, "{name}: waits of a call on {what} sequences: {c:?}");
        }
        // No repeated call fills memory (counts start in memory the device keeps zero), but for
        // the last writer of each row that scatter_rows' overwrite finds by atomic maxima.
        let fills = u64::from(name == "scatter_rows overwrite");
        for (what, c) in [("300", small_second), (label, large_second)] {
            assert_eq!(c.driver_allocations, 0, "{name}: a repeated call on {what} sequences asked the driver: {c:?}");
            assert_eq!(c.fills, fills, "{name}: fills of a repeated call on {what} sequences: {c:?}");
        }
        let c = large_second;
        eprintln!(
            "| {name} | {} | {} | {} | {} ({}) | {} ({}) | {} | {} |",
            c.launches,
            c.fills,
            c.device_copies,
            c.uploads,
            c.upload_bytes,
            c.downloads,
            c.download_bytes,
            c.waits,
            c.allocations
        );
    }
}

/// A decoder loop on the device (`Decoder::run_tensors`, the model's log-probs on cuda:0) asks the
/// driver for no memory once its sizes have been seen: a second decode of the same sources takes
/// every block from the cache. Each step waits for the device once (its selection copied back) and
/// fills nothing (the fused step's per-row counts are left zero by its kernel),
/// and after the first (which uploads its start) the model's log-probs are a step's only upload:
/// a step's inputs are the last step's selection, already on the device.
#[test]
fn decoder_steps_reuse_their_blocks() {
    let _device = DEVICE.lock().unwrap_or_else(|e| e.into_inner());
    if !gpu_or_skip() || common::caches_off_for_guard_pages() {
        return;
    }
    let options = DecoderOptions {
        beam_size: 4,
        vocab_size: 300,
        start_id: 0,
        end_id: 1,
        max_length: 12,
        min_length: 3,
        length_penalty: 0.6,
        num_hypotheses: 2,
    };
    let decoder = Decoder::new(options).unwrap();
    // The counters as each step's model call begins, and at the end.
    let decode = || {
        let mut readings = vec![];
        let hypotheses = decoder
            .run_tensors(16, &mut |info| {
                readings.push(cuda_counters(0).unwrap());
                let v = info.vocab_size;
                let lp: Vec<f32> = (0..info.ids.len() * v)
                    .map(|i| -(((i * 7919 + info.step * 104729 + info.ids[i / v] as usize * 31) % 97) as f32) / 8.0)
                    .collect();
                Ok(gpu(&LoDTensor::dense(Tensor::from_slice(&lp, &[info.ids.len(), v]).unwrap())))
            })
            .unwrap();
        readings.push(cuda_counters(0).unwrap());
        (readings, hypotheses)
    };
    let (_, first) = decode();
    let (readings, second) = decode();
    assert_eq!(second.ids.lod(), first.ids.lod());
    let steps = readings.len() - 1;
    assert!(steps >= 3, "{steps} steps");
    let run = readings[steps].since(&readings[0]);
    assert_eq!(run.driver_allocations, 0, "{run:?}");
    for (t, pair) in readings.windows(2).enumerate() {
        let step = pair[1].since(&pair[0]);
        assert_eq!((step.waits, step.fills), (1, 0), "step {t}: {step:?}");
        if t > 0 {
            assert_eq!(step.uploads, 1, "step {t}: {step:?}");
        }
    }
}

/// A device export through Arrow's C device data interface waits for the device once, text
/// columns or not: the UTF-8 checks of every text column add to one count, launched after every
/// column's own work, and reading it back stands in for the wait before the export (the LoDs are
/// already on the device, so nothing goes up). A column refused for broken text is told by that
/// same count, and one copy down names it.
#[test]
fn arrow_device_exports_wait_once() {
    use lodtensor::interop::arrow::{
        to_arrow_device, to_arrow_device_record_batch, to_arrow_device_strings, ArrowDeviceArray, ArrowSchema,
        Encoding::{self, Binary, Utf8, Values},
    };
    let _device = DEVICE.lock().unwrap_or_else(|e| e.into_inner());
    if !gpu_or_skip() || common::caches_off_for_guard_pages() {
        return;
    }
    let release = |(mut schema, mut device): (ArrowSchema, ArrowDeviceArray)| unsafe {
        (schema.release.unwrap())(&mut schema);
        (device.array.release.unwrap())(&mut device.array);
    };
    let text = |s: &str, cut: usize| {
        let lod = vec![vec![0, 1, 2], vec![0, cut, s.len()]];
        gpu(&LoDTensor::from_slice(s.as_bytes(), &[s.len()], lod).unwrap())
    };
    let (greeting, farewell) = (text("Grüße, Welt", 6), text("adiós, 世界", 7));
    let flags = gpu(&LoDTensor::dense(Tensor::from_bytes(DType::Bool, Dim::new(&[2]).unwrap(), &[1, 0]).unwrap()));
    let scores = gpu(&LoDTensor::from_slice(&[0.5f32, 0.25, 1.0, 2.0], &[2, 2], vec![]).unwrap());
    let batch = |encodings: [Encoding; 2]| {
        let columns = [
            (&greeting, "a", encodings[0]),
            (&flags, "flags", Values),
            (&farewell, "b", encodings[1]),
            (&scores, "s", Values),
        ];
        to_arrow_device_record_batch(&columns)
    };
    // The first calls upload the LoDs; the ones counted find them there.
    release(to_arrow_device_strings(&greeting, Utf8).unwrap());
    release(batch([Utf8, Utf8]).unwrap());
    let launches_waits = |c: &CudaCounters| (c.launches, c.uploads, c.downloads, c.waits);
    let (c, lent) = counted(|| to_arrow_device_strings(&greeting, Utf8).unwrap());
    release(lent);
    assert_eq!(launches_waits(&c), (1, 0, 1, 1), "strings as UTF-8: {c:?}");
    let (c, lent) = counted(|| to_arrow_device_strings(&greeting, Binary).unwrap());
    release(lent);
    assert_eq!(launches_waits(&c), (0, 0, 0, 1), "strings as binary: {c:?}");
    let (c, lent) = counted(|| to_arrow_device(&scores).unwrap());
    release(lent);
    assert_eq!(launches_waits(&c), (0, 0, 0, 1), "values: {c:?}");
    // Two text columns and a bool one (its bits packed by a launch of its own).
    let (c, lent) = counted(|| batch([Utf8, Utf8]).unwrap());
    release(lent);
    assert_eq!(launches_waits(&c), (3, 0, 1, 1), "a batch with two UTF-8 columns: {c:?}");
    let (c, lent) = counted(|| batch([Binary, Utf8]).unwrap());
    release(lent);
    assert_eq!(launches_waits(&c), (2, 0, 1, 1), "a batch with one UTF-8 column: {c:?}");
    let (c, lent) = counted(|| batch([Binary, Binary]).unwrap());
    release(lent);
    assert_eq!(launches_waits(&c), (1, 0, 0, 1), "a batch without UTF-8: {c:?}");
    // "adiós" cut inside its "ó": the count says so, and the text comes down to be named.
    let broken = text("adiós, 世界", 4);
    release(to_arrow_device_strings(&broken, Binary).unwrap());
    let columns = [(&greeting, "a", Utf8), (&broken, "b", Utf8)];
    let (c, refused) = counted(|| to_arrow_device_record_batch(&columns).err());
    let message = "columns[1]: sequence 0 of LoD level 1 (bytes 0..4) is not UTF-8 at byte 3";
    assert!(matches!(refused, Some(Error::InvalidArgument(ref m)) if m == message), "{refused:?}");
    assert_eq!((c.launches, c.downloads), (2, 3), "a refused batch: {c:?}");
}

/// A device import unpacks every bool column's bits on the device and waits for it once, before
/// it returns: after the last column when it succeeds, and when a later column is refused too
/// (the producer may release its bits as soon as it has the status).
#[test]
fn arrow_device_imports_of_bools_wait_once() {
    use lodtensor::interop::arrow::{from_arrow_device_record_batch, to_arrow_device_record_batch, Encoding::Values};
    let _device = DEVICE.lock().unwrap_or_else(|e| e.into_inner());
    if !gpu_or_skip() || common::caches_off_for_guard_pages() {
        return;
    }
    let bools = |bits: &[u8]| {
        let t = Tensor::from_bytes(DType::Bool, Dim::new(&[bits.len()]).unwrap(), bits).unwrap();
        gpu(&LoDTensor::dense(t))
    };
    let columns = [bools(&[1, 0, 1]), bools(&[0, 0, 1]), bools(&[1, 1, 0])];
    let named: Vec<_> = columns.iter().map(|x| (x, "flags", Values)).collect();
    let (mut schema, mut device) = to_arrow_device_record_batch(&named).unwrap();
    // Column 2 made shorter than the batch: refused after columns 0 and 1 are unpacked.
    let last = unsafe { &mut **device.array.children.add(2) };
    last.length = 2;
    let (c, refused) = counted(|| unsafe { from_arrow_device_record_batch(&schema, &mut device).err() });
    let message = "array.array.children[2]: length 2 is less than the 3 rows that its struct's offset and length need";
    assert!(matches!(refused, Some(Error::InvalidArgument(ref m)) if m == message), "{refused:?}");
    assert!(device.array.release.is_some(), "a refused import took the array");
    assert_eq!((c.launches, c.downloads, c.waits), (2, 0, 1), "a refused import: {c:?}");
    last.length = 3;
    let (c, taken) = counted(|| unsafe { from_arrow_device_record_batch(&schema, &mut device).unwrap() });
    assert!(device.array.release.is_none(), "the import left the array");
    assert_eq!((c.launches, c.downloads, c.waits), (3, 0, 1), "an import of three bool columns: {c:?}");
    for (got, want) in taken.iter().zip(&columns) {
        let (got, want) = (to_place(got, Place::Cpu).unwrap(), to_place(want, Place::Cpu).unwrap());
        assert_eq!(got.tensor().bytes().unwrap(), want.tensor().bytes().unwrap());
    }
    unsafe { (schema.release.unwrap())(&mut schema) };
}

/// A device import reads the LoD offsets and validity bits it needs on the host in one copy down,
/// after one wait, where they come to 64 KiB or less: the lists below the first are copied whole,
/// so a piece too large for that is left to be read when it is needed. It keeps each level's
/// offsets on the device (a launch a level, from the producer's), so an op there uploads none.
/// Each import is checked to take what was lent.
#[test]
fn arrow_device_imports_read_their_offsets_in_one_copy_and_keep_them_there() {
    use lodtensor::interop::arrow::{
        from_arrow_device, from_arrow_device_record_batch, to_arrow_device, to_arrow_device_record_batch,
        Encoding::Values,
    };
    let _device = DEVICE.lock().unwrap_or_else(|e| e.into_inner());
    if !gpu_or_skip() || common::caches_off_for_guard_pages() {
        return;
    }
    let asked = |c: &CudaCounters| (c.launches, c.downloads, c.waits);
    let lent_again = |x: &LoDTensor| {
        let (c, (mut schema, mut device)) = counted(|| to_arrow_device(x).unwrap());
        unsafe {
            (schema.release.unwrap())(&mut schema);
            (device.array.release.unwrap())(&mut device.array);
        }
        c.uploads
    };
    let same = |got: &LoDTensor, want: &LoDTensor| {
        assert_eq!(got.lod(), want.lod());
        assert_eq!(cuda_common::bytes_of(got), cuda_common::bytes_of(want));
    };
    let floats = |n: usize| (0..n).map(|i| i as f32 * 0.5).collect::<Vec<_>>();
    // Two levels over rows of two floats.
    let two = gpu(&LoDTensor::from_slice(&floats(12), &[6, 2], vec![vec![0, 2, 3], vec![0, 1, 3, 6]]).unwrap());
    // Three levels, the middle one of 20000 entries (160 KiB of offsets), all but 10 of them empty.
    let middle: Vec<usize> = (0..=20_000).map(|i: usize| i.min(10)).collect();
    let leaf: Vec<usize> = (0..=10).map(|i| 3 * i).collect();
    let three = gpu(&LoDTensor::from_slice(&floats(30), &[30], vec![vec![0, 1, 20_000], middle, leaf]).unwrap());
    for (x, want) in [(&two, (2, 1, 1)), (&three, (3, 2, 2))] {
        let (mut schema, mut device) = to_arrow_device(x).unwrap();
        let (c, taken) = counted(|| unsafe { from_arrow_device(&schema, &mut device).unwrap() });
        unsafe { (schema.release.unwrap())(&mut schema) };
        assert_eq!(asked(&c), want, "{} levels: {c:?}", x.lod().num_levels());
        same(&taken, x);
        assert_eq!(lent_again(&taken), 0, "the LoD's offsets are on the device");
    }
    // Bool elements with two levels: the bits unpacked and the levels copied on the device, a
    // launch each, waited for together (the tensor does not hold the producer's array).
    let flags = Tensor::from_bytes(DType::Bool, Dim::new(&[6]).unwrap(), &[1, 0, 1, 1, 0, 0]).unwrap();
    let flags = gpu(&LoDTensor::new(flags, two.lod().clone()).unwrap());
    let (mut schema, mut device) = to_arrow_device(&flags).unwrap();
    let (c, taken) = counted(|| unsafe { from_arrow_device(&schema, &mut device).unwrap() });
    unsafe { (schema.release.unwrap())(&mut schema) };
    assert_eq!(asked(&c), (3, 1, 2), "bool elements under 2 levels: {c:?}");
    same(&taken, &flags);
    assert_eq!(lent_again(&taken), 0, "the bool tensor's LoD offsets are on the device");

    // A batch of three columns, two with LoDs: one copy for the three levels.
    let ids = gpu(&LoDTensor::from_slice(&[4i64, 5, 6], &[3], vec![vec![0, 1, 3]]).unwrap());
    let dense = gpu(&LoDTensor::from_slice(&floats(6), &[2, 3], vec![]).unwrap());
    let columns = [(&two, "two", Values), (&ids, "ids", Values), (&dense, "dense", Values)];
    let (mut schema, mut device) = to_arrow_device_record_batch(&columns).unwrap();
    let (c, taken) = counted(|| unsafe { from_arrow_device_record_batch(&schema, &mut device).unwrap() });
    unsafe { (schema.release.unwrap())(&mut schema) };
    assert_eq!(asked(&c), (3, 1, 1), "a batch: {c:?}");
    for (got, (want, _, _)) in taken.iter().zip(&columns) {
        same(got, want);
        assert_eq!(lent_again(got), 0, "the LoD's offsets are on the device");
    }

    // Validity bits on the device for both lists of `two` (nulls not counted): read in the same
    // copy as the offsets; and a null among the entries used, found in that copy.
    let bits = |byte: u8| gpu(&LoDTensor::from_slice(&[byte; 8], &[8], vec![]).unwrap());
    for (outer, inner, refused) in [(0xff, 0xff, None), (0xff, 0xfb, Some("children[0]: entry 2 is null"))] {
        let (outer, inner) = (bits(outer), bits(inner));
        let (mut schema, mut device) = to_arrow_device(&two).unwrap();
        let (c, result) = counted(|| unsafe {
            let root = &mut device.array;
            let child = &mut **root.children;
            for (node, bits) in [(&mut *root, &outer), (child, &inner)] {
                node.null_count = -1;
                *node.buffers = bits.tensor().as_ptr().cast();
            }
            from_arrow_device(&schema, &mut device)
        });
        let launches = if refused.is_none() { 2 } else { 0 };
        assert_eq!(asked(&c), (launches, 1, 1), "validity bits, {refused:?}: {c:?}");
        match (result, refused) {
            (Ok(taken), None) => same(&taken, &two),
            (Err(Error::InvalidArgument(m)), Some(want)) if m.contains(want) => unsafe {
                assert!(device.array.release.is_some(), "a refused import took the array");
                (device.array.release.unwrap())(&mut device.array);
            },
            (other, _) => panic!("validity bits, {refused:?}: {:?}", other.map(|_| ())),
        }
        unsafe { (schema.release.unwrap())(&mut schema) };
    }
}
