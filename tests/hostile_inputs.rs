//! Every public operator on random inputs, many of which break its rules: small tensors of random
//! dtypes, shapes (empty ones included) and LoDs, filled with small integers (valid and invalid
//! ids, lengths, indices and parents alike), and random attributes (negative, zero, small and
//! overflowing). Whatever an op is given, it must return `Ok` or a documented error: no panic and
//! no `Internal` error, which is what a caught panic or a broken invariant becomes at the C
//! boundary. Every LoD it returns must be valid for its tensor. A failure prints the seed;
//! `HOSTILE_SEED=<seed>` replays that case alone, with the panic's message and backtrace.

mod common;

use common::{Rng, POOLS};
use lodtensor::ops::{
    cast, gather_rows, log_softmax, sequence_concat, sequence_conv, sequence_enumerate, sequence_erase, sequence_mask,
    sequence_reshape, sequence_reverse, sequence_slice, sequence_softmax,
};
use lodtensor::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

const DTYPES: [DType; 8] =
    [DType::F32, DType::F64, DType::I32, DType::I64, DType::U8, DType::Bool, DType::F16, DType::I8];

/// What a tensor argument is for, which sets its usual dtype.
#[derive(Clone, Copy)]
enum Kind {
    /// Values (mostly float32).
    Data,
    /// Ids, indices, lengths or parents (mostly int64).
    Index,
}

/// The generator. Most tensors of one call share its context (a row count, a width and a LoD),
/// so that the arguments of an op often fit together and the op gets past its checks; the rest,
/// and every mutation, are random.
struct Gen {
    rng: Rng,
    rows: usize,
    width: usize,
    lod: Lod,
}

impl Gen {
    fn new(seed: u64) -> Gen {
        let mut g = Gen { rng: Rng(seed), rows: 0, width: 0, lod: Lod::empty() };
        g.rows = g.below(6);
        g.width = 1 + g.below(3);
        g.lod = g.lod(g.rows);
        g
    }

    fn below(&mut self, n: usize) -> usize {
        self.rng.below(n)
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len())]
    }

    /// Mostly small values, sometimes ones whose use as a size overflows.
    fn int(&mut self) -> i64 {
        match self.below(12) {
            0 => i64::MAX,
            1 => i64::MIN,
            2 => -1,
            _ => self.below(7) as i64 - 1,
        }
    }

    fn size(&mut self) -> usize {
        match self.below(16) {
            0 => usize::MAX,
            _ => self.below(6),
        }
    }

    /// A random valid LoD of up to 2 levels over `rows` rows (none a third of the time).
    fn lod(&mut self, rows: usize) -> Lod {
        let levels = self.below(3);
        let mut lengths: Vec<Vec<usize>> = vec![];
        let mut below = rows;
        for _ in 0..levels {
            // `below` entries cut into sequences of random lengths, empty ones included (a level
            // has at least one sequence).
            let mut level = vec![];
            let mut left = below;
            while left > 0 || level.is_empty() {
                let n = if left == 0 { 0 } else { self.below(left + 1) };
                level.push(n);
                left -= n;
                if level.len() > 8 {
                    level.push(left);
                    break;
                }
            }
            below = level.len();
            lengths.insert(0, level);
        }
        Lod::from_lengths(&lengths).unwrap()
    }

    /// A shape and a LoD.
    fn spec(&mut self) -> (Vec<usize>, Lod) {
        if self.below(4) == 0 {
            let rank = self.below(4);
            let dims: Vec<usize> = (0..rank).map(|i| self.below(if i == 0 { 7 } else { 4 })).collect();
            let lod = if rank == 0 { Lod::empty() } else { self.lod(dims[0]) };
            return (dims, lod);
        }
        // The context: [rows, 1] (most often), [rows, width], [rows], [rows, width, 2]; one row
        // per sequence of the last level ([sequences, 1]: offsets, lengths); or a filter of c
        // context rows ([c * width, width]). Those of `rows` rows with the context's LoD (most
        // often), its last level alone, or none.
        let (r, w, c) = (self.rows, self.width, self.below(4));
        let sequences = self.lod.levels().last().map_or(r, |l| l.len() - 1);
        let shapes = [&[r, 1][..], &[r, 1], &[r, 1], &[r, w], &[r, w], &[r], &[r, w, 2], &[sequences, 1], &[c * w, w]];
        let dims = shapes[self.below(shapes.len())].to_vec();
        let lod = match self.below(4) {
            _ if dims[0] != r => Lod::empty(),
            0 => Lod::empty(),
            1 if self.lod.num_levels() == 2 => Lod::from_offsets(vec![self.lod.levels()[1].clone()]).unwrap(),
            _ => self.lod.clone(),
        };
        (dims, lod)
    }

    fn tensor_of(&mut self, (dims, lod): (Vec<usize>, Lod), kind: Kind) -> LoDTensor {
        let n: usize = dims.iter().product();
        // Small integers: mostly valid as ids, indices, lengths, offsets and parents (half of them
        // 0 or 1), sometimes not.
        let values: Vec<i64> = (0..n)
            .map(|_| if self.below(2) == 0 { self.below(2) as i64 } else { self.below(self.rows + 3) as i64 - 1 })
            .collect();
        let x = LoDTensor::new(Tensor::from_slice(&values, &dims).unwrap(), lod).unwrap();
        let dtype = match (self.below(5), kind) {
            (0, _) => self.pick(&DTYPES),
            (_, Kind::Data) => DType::F32,
            (_, Kind::Index) => DType::I64,
        };
        cast(&x, dtype).unwrap()
    }

    fn tensor(&mut self, kind: Kind) -> LoDTensor {
        let spec = self.spec();
        self.tensor_of(spec, kind)
    }

    /// Up to 3 tensors, most often of one shape and LoD (the time steps of a decoder).
    fn array(&mut self, kind: Kind) -> TensorArray {
        let (n, spec) = (self.below(4), self.spec());
        let same = self.below(4) > 0;
        TensorArray::from_vec(
            (0..n).map(|_| if same { self.tensor_of(spec.clone(), kind) } else { self.tensor(kind) }).collect(),
        )
    }
}

/// Every LoD an op returns is valid for its tensor.
fn check_outputs(outputs: &[&LoDTensor]) -> Result<(), String> {
    for (i, o) in outputs.iter().enumerate() {
        let rows = o.dims().as_slice().first().copied();
        if !o.lod().is_empty() {
            check_lod(o.lod().levels(), rows).map_err(|e| format!("output {i}: invalid LoD {:?}: {e}", o.lod()))?;
        }
    }
    Ok(())
}

/// One random op call: its name, and whether it returned `Ok` (`Err`: the failure to report).
fn call(g: &mut Gen) -> (&'static str, Result<bool, String>) {
    use Kind::{Data as D, Index as I};
    let x = g.tensor(D);
    let int = g.int();
    let table = RankTable::from_lod_tensor(&g.tensor(D), g.below(3));
    macro_rules! op {
        ($name:expr, $e:expr, |$o:ident| $outs:expr) => {{
            let r: Result<_> = $e;
            (
                $name,
                match r {
                    Err(Error::Internal(m)) => Err(format!("Internal: {m}")),
                    Err(_) => Ok(false),
                    Ok($o) => check_outputs(&$outs).map(|()| true),
                },
            )
        }};
    }
    match g.below(34) {
        0 => op!("sequence_expand", sequence_expand(&x, &g.tensor(D), int), |o| [&o]),
        1 => op!("sequence_expand_as", sequence_expand_as(&x, &g.tensor(D)), |o| [&o]),
        2 => op!("sequence_pad", sequence_pad(&x, &g.tensor(D), int), |o| [&o.0, &o.1]),
        3 => op!("sequence_unpad", sequence_unpad(&x, &g.tensor(I)), |o| [&o]),
        4 => {
            let pool = g.pick(&POOLS);
            op!("sequence_pool", sequence_pool(&x, pool, int as f64), |o| [&o.out])
        }
        5 => op!("sequence_first_step", sequence_first_step(&x), |o| [&o]),
        6 => op!("sequence_last_step", sequence_last_step(&x), |o| [&o]),
        7 => op!("sequence_scatter", sequence_scatter(&x, &g.tensor(I), &g.tensor(D)), |o| [&o]),
        8 => {
            let (ids, updates, mut x) = (g.tensor(I), g.tensor(D), x);
            op!("sequence_scatter_inplace", sequence_scatter_inplace(&mut x, &ids, &updates).map(|()| x), |o| [&o])
        }
        9 => {
            let mode = g.pick(&[ScatterMode::Overwrite, ScatterMode::Add]);
            op!("scatter_rows", scatter_rows(&x, &g.tensor(I), &g.tensor(D), mode), |o| [&o])
        }
        10 => op!("sequence_softmax", sequence_softmax(&x), |o| [&o]),
        11 => op!("log_softmax", log_softmax(&x), |o| [&o]),
        12 => op!("sequence_concat", sequence_concat(&[&x, &g.tensor(D)]), |o| [&o]),
        13 => op!("sequence_slice", sequence_slice(&x, &g.tensor(I), &g.tensor(I)), |o| [&o]),
        14 => op!("sequence_reverse", sequence_reverse(&x), |o| [&o]),
        15 => op!("sequence_mask", sequence_mask(&g.tensor(I), int, g.pick(&DTYPES)), |o| [&o]),
        16 => op!("sequence_enumerate", sequence_enumerate(&g.tensor(I), int, g.int()), |o| [&o]),
        17 => op!("sequence_erase", sequence_erase(&g.tensor(I), &[int, g.int()]), |o| [&o]),
        18 => op!("sequence_reshape", sequence_reshape(&x, int), |o| [&o]),
        19 => {
            let (filter, padding) = (g.tensor(D), g.tensor(D));
            let padding = if g.below(2) == 0 { Some(&padding) } else { None };
            let conv = sequence_conv(&x, &filter, padding, int, g.int(), g.int(), g.below(2) == 0);
            op!("sequence_conv", conv, |o| [&o])
        }
        20 => op!("lod_tensor_to_array", table.and_then(|t| lod_tensor_to_array(&x, &t)), |o| o
            .as_slice()
            .iter()
            .collect::<Vec<_>>()),
        21 => {
            let array = g.array(D);
            op!("array_to_lod_tensor", table.and_then(|t| array_to_lod_tensor(&array, &t)), |o| [&o])
        }
        22 => op!("shrink_rnn_memory", table.and_then(|t| shrink_rnn_memory(&x, &t, g.size())), |o| [&o]),
        23 => op!("reorder_lod_tensor_by_rank", table.and_then(|t| reorder_lod_tensor_by_rank(&x, &t)), |o| [&o]),
        24 => {
            let array = g.array(D);
            op!("tensor_array_to_tensor", tensor_array_to_tensor(&array, int, g.below(2) == 0), |o| [&o.0])
        }
        25 => op!("unstack", unstack(&x, int), |o| o.as_slice().iter().collect::<Vec<_>>()),
        26 => op!("cast", cast(&x, g.pick(&DTYPES)), |o| [&o]),
        27 => op!("gather_rows", gather_rows(&x, &g.tensor(I)), |o| [&o]),
        28 => op!("top_k", top_k(&x, g.size(), g.below(2) == 0), |o| [&o.0, &o.1]),
        29 => {
            let (pre_ids, pre_scores, ids, scores) = (g.tensor(I), g.tensor(D), g.tensor(I), g.tensor(D));
            let ids = if g.below(2) == 0 { Some(&ids) } else { None };
            let (level, beam) = (g.size(), g.size());
            let step = beam_search_step(&pre_ids, &pre_scores, ids, &scores, level, beam, int, g.below(2) == 0);
            op!("beam_search_step", step, |o| [&o.selected_ids, &o.selected_scores])
        }
        30 => {
            let step = beam_search_fused_step(&g.tensor(I), &g.tensor(D), &x, g.size(), int);
            op!("beam_search_fused_step", step, |o| [&o.selected_ids, &o.selected_scores])
        }
        31 => op!("beam_search_gather_state", beam_search_gather_state(&x, &g.tensor(I)), |o| [&o]),
        32 => {
            let (ids, scores) = (g.array(I), g.array(D));
            op!("beam_search_decode", beam_search_decode(&ids, &scores, g.size(), int), |o| [&o.0, &o.1])
        }
        _ => op!("beam_search_gather_tree", beam_search_gather_tree(&g.tensor(I), &g.tensor(I)), |o| [&o]),
    }
}

#[test]
fn no_input_panics_an_op_or_breaks_its_output() {
    let seeds: Vec<u64> = match std::env::var("HOSTILE_SEED") {
        Ok(s) => vec![s.parse().expect("HOSTILE_SEED: a number")],
        Err(_) => (1..=200_000u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1).collect(),
    };
    let mut failures = vec![];
    // Per op: calls, and calls that returned Ok.
    let mut ran = std::collections::BTreeMap::<&str, (usize, usize)>::new();
    // The panics are collected below with their seeds; the default hook would print each one.
    let hook = std::panic::take_hook();
    if std::env::var_os("HOSTILE_SEED").is_none() {
        std::panic::set_hook(Box::new(|_| {}));
    }
    for seed in seeds {
        let outcome = catch_unwind(AssertUnwindSafe(|| call(&mut Gen::new(seed))));
        match outcome {
            Ok((name, result)) => {
                let count = ran.entry(name).or_default();
                count.0 += 1;
                match result {
                    Ok(ok) => count.1 += usize::from(ok),
                    Err(why) => failures.push(format!("seed {seed}: {name}: {why}")),
                }
            }
            Err(panic) => {
                let msg = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
                failures.push(format!("seed {seed}: panicked: {}", msg.unwrap_or_default()));
            }
        }
    }
    std::panic::set_hook(hook);
    assert!(
        failures.is_empty(),
        "{} failing cases, the first ones:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
    // Every op was called, and on some inputs it accepted: a generator that stopped reaching an
    // op, or whose inputs an op always refused, would test nothing but its argument checks.
    eprintln!("(calls, Ok) per op: {ran:?}");
    assert_eq!(ran.len(), 34, "ops called: {ran:?}");
    assert!(ran.values().all(|&(_, ok)| ok > 0), "ops that never returned Ok: {ran:?}");
}
