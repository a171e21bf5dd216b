//! Many threads calling ops on one device at once, as a server's do: every call gives what the same
//! call gives alone, including the calls that race to put a LoD on the device first and those
//! that count bad indices, whose errors stay their own. Without a usable device it says it was
//! skipped.

mod common;
mod cuda_common;

use common::Rng;
use cuda_common::{bytes_of, gpu, gpu_or_skip};
use lodtensor::ops::{gather_rows, sequence_concat, sequence_reverse, sequence_softmax};
use lodtensor::{
    beam_search_fused_step, scatter_rows, sequence_expand, sequence_pad, sequence_pool, sequence_unpad, top_k,
    LoDTensor, Lod, PoolType, ScatterMode, Tensor,
};

/// The inputs on the device, each LoD new (not yet on the device).
struct Inputs {
    /// float32 [rows, 4], 200 sequences of 0-6 rows; the same values as a column.
    x: LoDTensor,
    col: LoDTensor,
    /// float32 [200, 4], a row per sequence.
    per_seq: LoDTensor,
    /// sequence_pad's one-element pad value, x padded to its longest sequence and the lengths.
    pad: LoDTensor,
    padded: LoDTensor,
    lengths: LoDTensor,
    /// float32 [50, 4], an int64 index of its rows (one per row of x), the same with one value out
    /// of range, and updates for scatter_rows.
    table: LoDTensor,
    index: LoDTensor,
    bad_index: LoDTensor,
    updates: LoDTensor,
    /// A beam step: 12 sources of 0-4 prefixes, their ids and scores, log-probs over `VOCAB` tokens.
    pre_ids: LoDTensor,
    pre_scores: LoDTensor,
    log_probs: LoDTensor,
}

/// Tokens of the beam step: a row of log-probs in three of the fused step's chunks, so that its
/// blocks count each row's finished chunks.
const VOCAB: usize = 20_000;

/// The same inputs for the same `seed`, on the device, each time with LoDs of their own.
fn inputs(seed: u64) -> Inputs {
    let mut rng = Rng(seed);
    let lengths: Vec<usize> = (0..200).map(|_| rng.below(7)).collect();
    let rows: usize = lengths.iter().sum();
    let lod = Lod::from_lengths(std::slice::from_ref(&lengths)).unwrap();
    let floats = |rng: &mut Rng, n: usize| (0..n).map(|_| rng.unit() - 0.5).collect::<Vec<f32>>();
    let (xs, per_seq) = (floats(&mut rng, rows * 4), floats(&mut rng, 800));
    let (table, updates) = (floats(&mut rng, 200), floats(&mut rng, rows * 4));
    let prefix_lengths: Vec<usize> = (0..12).map(|_| rng.below(5)).collect();
    let prefixes: usize = prefix_lengths.iter().sum();
    let beam_lod = Lod::from_lengths(&[prefix_lengths, vec![1; prefixes]]).unwrap();
    let (scores, log_probs) = (floats(&mut rng, prefixes), floats(&mut rng, prefixes * VOCAB));
    let index: Vec<i64> = (0..rows).map(|_| rng.below(50) as i64).collect();
    let mut bad_index = index.clone();
    bad_index[rng.below(rows)] = 50;
    let pre_ids: Vec<i64> = (0..prefixes).map(|_| 1 + rng.below(VOCAB - 1) as i64).collect();
    let dense = |t: Tensor| gpu(&LoDTensor::dense(t));
    let x = LoDTensor::new(Tensor::from_slice(&xs, &[rows, 4]).unwrap(), lod.clone()).unwrap();
    let pad = LoDTensor::dense(Tensor::from_slice(&[0f32], &[1]).unwrap());
    let (padded, lengths) = sequence_pad(&x, &pad, -1).unwrap();
    Inputs {
        col: gpu(&LoDTensor::new(Tensor::from_slice(&xs[..rows], &[rows, 1]).unwrap(), lod).unwrap()),
        x: gpu(&x),
        per_seq: dense(Tensor::from_slice(&per_seq, &[200, 4]).unwrap()),
        pad: gpu(&pad),
        padded: gpu(&padded),
        lengths: gpu(&lengths),
        table: dense(Tensor::from_slice(&table, &[50, 4]).unwrap()),
        index: dense(Tensor::from_slice(&index, &[rows]).unwrap()),
        bad_index: dense(Tensor::from_slice(&bad_index, &[rows]).unwrap()),
        updates: dense(Tensor::from_slice(&updates, &[rows, 4]).unwrap()),
        pre_ids: gpu(&LoDTensor::new(Tensor::from_slice(&pre_ids, &[prefixes, 1]).unwrap(), beam_lod.clone()).unwrap()),
        pre_scores: gpu(&LoDTensor::new(Tensor::from_slice(&scores, &[prefixes, 1]).unwrap(), beam_lod).unwrap()),
        log_probs: dense(Tensor::from_slice(&log_probs, &[prefixes, VOCAB]).unwrap()),
    }
}

/// What a call gave, on the host: each output's dims, LoD and bytes, or the error.
type Outcome = Result<Vec<(Vec<usize>, Lod, Vec<u8>)>, String>;

fn outcome(r: lodtensor::Result<Vec<LoDTensor>>) -> Outcome {
    r.map(|outs| outs.iter().map(|t| (t.dims().as_slice().to_vec(), t.lod().clone(), bytes_of(t))).collect())
        .map_err(|e| format!("{e:?}"))
}

type Op = fn(&Inputs) -> lodtensor::Result<Vec<LoDTensor>>;

/// Ops of every kind: those that read a LoD on the device (the first call uploads it), that wait
/// for the device, that count bad indices (one call with a bad index), that sort, the fused beam
/// step (its per-row counters shared by every call on the device).
fn ops() -> Vec<(&'static str, Op)> {
    vec![
        ("sequence_expand", |i| Ok(vec![sequence_expand(&i.per_seq, &i.x, 0)?])),
        ("sequence_pool sum", |i| Ok(vec![sequence_pool(&i.x, PoolType::Sum, 0.0)?.out])),
        ("sequence_pool max", |i| {
            let p = sequence_pool(&i.x, PoolType::Max, 0.0)?;
            Ok([p.out].into_iter().chain(p.max_index).collect())
        }),
        ("sequence_reverse", |i| Ok(vec![sequence_reverse(&i.x)?])),
        ("sequence_softmax", |i| Ok(vec![sequence_softmax(&i.col)?])),
        ("sequence_concat", |i| Ok(vec![sequence_concat(&[&i.x, &i.x])?])),
        ("sequence_pad", |i| sequence_pad(&i.x, &i.pad, -1).map(|(a, b)| vec![a, b])),
        ("sequence_unpad", |i| Ok(vec![sequence_unpad(&i.padded, &i.lengths)?])),
        ("gather_rows", |i| Ok(vec![gather_rows(&i.table, &i.index)?])),
        ("gather_rows, a bad index", |i| Ok(vec![gather_rows(&i.table, &i.bad_index)?])),
        ("scatter_rows add", |i| Ok(vec![scatter_rows(&i.table, &i.index, &i.updates, ScatterMode::Add)?])),
        ("scatter_rows add, a bad index", |i| {
            Ok(vec![scatter_rows(&i.table, &i.bad_index, &i.updates, ScatterMode::Add)?])
        }),
        ("top_k", |i| top_k(&i.log_probs, 3, true).map(|(a, b)| vec![a, b])),
        ("beam_search_fused_step", |i| {
            let s = beam_search_fused_step(&i.pre_ids, &i.pre_scores, &i.log_probs, 4, 0)?;
            Ok(vec![s.selected_ids, s.selected_scores, LoDTensor::dense(s.parent_idx)])
        }),
    ]
}

/// Eight threads run every op three times, each thread in an order of its own, on inputs whose
/// LoDs no call has put on the device yet; every call's outcome is the one the same op gave alone
/// (on a copy of the inputs with LoDs of their own).
#[test]
fn gpu_calls_from_many_threads_give_what_each_gives_alone() {
    if !gpu_or_skip() {
        return;
    }
    const SEED: u64 = 0x7e57_ab1e;
    let alone = inputs(SEED);
    let ops = ops();
    let want: Vec<Outcome> = ops.iter().map(|(_, op)| outcome(op(&alone))).collect();
    for (k, (name, _)) in ops.iter().enumerate() {
        assert_eq!(want[k].is_err(), name.contains("bad index"), "{name} alone: {:?}", want[k].as_ref().err());
    }
    let shared = inputs(SEED);
    std::thread::scope(|scope| {
        for t in 0..8usize {
            let (ops, want, shared) = (&ops, &want, &shared);
            scope.spawn(move || {
                for round in 0..3 {
                    for j in 0..ops.len() {
                        let n = ops.len();
                        let k = if t % 2 == 0 { j + 3 * t + round } else { n - 1 - j + 3 * t + round } % n;
                        let (name, op) = ops[k];
                        assert!(outcome(op(shared)) == want[k], "thread {t}, round {round}: {name} differs");
                    }
                }
            });
        }
    });
}
