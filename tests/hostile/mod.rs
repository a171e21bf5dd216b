//! The random calls of the hostile-input tests (tests/hostile_inputs.rs on the CPU,
//! tests/cuda_hostile_inputs.rs against a device): every public operator on small tensors of
//! random dtypes, shapes (empty ones included) and LoDs, filled with small integers (valid and
//! invalid ids, lengths, indices and parents alike), and random attributes (negative, zero, small
//! and overflowing). Most tensors of one call share a context, so that an op's arguments often
//! fit together and the op gets past its checks to its kernel.
#![allow(dead_code)]

use crate::common::{Rng, POOLS};
use lodtensor::ops::{
    cast, gather_rows, log_softmax, sequence_concat, sequence_conv, sequence_enumerate, sequence_erase, sequence_mask,
    sequence_reshape, sequence_reverse, sequence_slice, sequence_softmax,
};
use lodtensor::*;

/// The number of operators `random_case` draws from.
pub const OPS: usize = 42;

/// What a tensor argument is for, which sets its usual dtype.
#[derive(Clone, Copy)]
enum Kind {
    /// Values (mostly float32).
    Data,
    /// Ids, indices, lengths or parents (mostly int64).
    Index,
}

/// The generator. Most tensors of one call share its context (a row count, a width and a LoD),
/// so that the arguments of an op often fit together and the op gets past its checks; the others
/// are random.
pub struct Gen {
    rng: Rng,
    rows: usize,
    width: usize,
    lod: Lod,
}

impl Gen {
    pub fn new(seed: u64) -> Gen {
        let mut g = Gen { rng: Rng(seed), rows: 0, width: 0, lod: Lod::empty() };
        // One call in 32 on a larger context, so that kernels split rows and sequences over
        // threads and blocks on these inputs too.
        let large = g.below(32) == 0;
        g.rows = g.below(if large { 100 } else { 6 });
        g.width = 1 + g.below(if large { 16 } else { 3 });
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

    /// A random valid LoD of up to 3 levels over `rows` rows (none a quarter of the time, 3 levels
    /// one time in 8).
    fn lod(&mut self, rows: usize) -> Lod {
        let levels = match self.below(8) {
            0 => 3,
            n => n % 3,
        };
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
        // often), its levels below the top one, or none.
        let (r, w, c) = (self.rows, self.width, self.below(4));
        let sequences = self.lod.levels().last().map_or(r, |l| l.len() - 1);
        let shapes = [&[r, 1][..], &[r, 1], &[r, 1], &[r, w], &[r, w], &[r], &[r, w, 2], &[sequences, 1], &[c * w, w]];
        let dims = shapes[self.below(shapes.len())].to_vec();
        let lod = match self.below(4) {
            _ if dims[0] != r => Lod::empty(),
            0 => Lod::empty(),
            1 if self.lod.num_levels() >= 2 => Lod::from_offsets(self.lod.levels()[1..].to_vec()).unwrap(),
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
            (0, _) => self.pick(&DType::ALL),
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

/// The seeds of a run: `HOSTILE_SEED` alone when it is set (to replay a case), else
/// `HOSTILE_CASES` seeds (`count` when it is not set) spread by the odd multiplier `spread`.
/// A larger `HOSTILE_CASES` runs the same first seeds and then new ones.
pub fn seeds(count: u64, spread: u64) -> Vec<u64> {
    if let Ok(s) = std::env::var("HOSTILE_SEED") {
        return vec![s.parse().expect("HOSTILE_SEED: a number")];
    }
    let count = std::env::var("HOSTILE_CASES").map_or(count, |v| v.parse().expect("HOSTILE_CASES: a number"));
    (1..=count).map(|i| i.wrapping_mul(spread) | 1).collect()
}

/// The text a caught panic carries.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let text = panic.downcast_ref::<String>().map(String::as_str);
    text.or_else(|| panic.downcast_ref::<&str>().copied()).unwrap_or_default().to_string()
}

/// Fails listing the first of `failures` (one line each, with its seed), if there are any.
#[track_caller]
pub fn assert_none(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} failing cases, the first ones:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
}

/// An op call over (`tensors`, `arrays`), or the same moved to another place: its outputs.
pub type Run = dyn Fn(&[LoDTensor], &[TensorArray]) -> Result<Vec<LoDTensor>>;

/// One op call: its inputs, and the call itself over inputs of the same shapes on any place.
pub struct Case {
    pub name: &'static str,
    pub tensors: Vec<LoDTensor>,
    pub arrays: Vec<TensorArray>,
    pub run: Box<Run>,
}

impl Case {
    /// The call on its own inputs.
    pub fn on_inputs(&self) -> Result<Vec<LoDTensor>> {
        (self.run)(&self.tensors, &self.arrays)
    }
}

fn case(
    name: &'static str,
    tensors: Vec<LoDTensor>,
    arrays: Vec<TensorArray>,
    run: impl Fn(&[LoDTensor], &[TensorArray]) -> Result<Vec<LoDTensor>> + 'static,
) -> Case {
    Case { name, tensors, arrays, run: Box::new(run) }
}

fn step_outputs(s: BeamSearchStep) -> Vec<LoDTensor> {
    vec![s.selected_ids, s.selected_scores, LoDTensor::dense(s.parent_idx)]
}

/// A random call of a random operator.
pub fn random_case(g: &mut Gen) -> Case {
    use Kind::{Data as D, Index as I};
    let x = g.tensor(D);
    let int = g.int();
    // A rank table is host bookkeeping: the same one serves every place.
    let table = RankTable::from_lod_tensor(&g.tensor(D), g.below(3));
    let ranked = move |f: &dyn Fn(&RankTable) -> Result<Vec<LoDTensor>>| table.clone().and_then(|t| f(&t));
    let one = |o: LoDTensor| vec![o];
    match g.below(OPS) {
        0 => case("sequence_expand", vec![x, g.tensor(D)], vec![], move |t, _| {
            sequence_expand(&t[0], &t[1], int).map(one)
        }),
        1 => case("sequence_expand_as", vec![x, g.tensor(D)], vec![], move |t, _| {
            sequence_expand_as(&t[0], &t[1]).map(one)
        }),
        2 => case("sequence_pad", vec![x, g.tensor(D)], vec![], move |t, _| {
            sequence_pad(&t[0], &t[1], int).map(|(o, l)| vec![o, l])
        }),
        3 => case("sequence_unpad", vec![x, g.tensor(I)], vec![], move |t, _| sequence_unpad(&t[0], &t[1]).map(one)),
        4 => {
            let pool = g.pick(&POOLS);
            case("sequence_pool", vec![x], vec![], move |t, _| {
                sequence_pool(&t[0], pool, int as f64)
                    .map(|p| [Some(p.out), p.max_index].into_iter().flatten().collect())
            })
        }
        5 => case("sequence_first_step", vec![x], vec![], move |t, _| sequence_first_step(&t[0]).map(one)),
        6 => case("sequence_last_step", vec![x], vec![], move |t, _| sequence_last_step(&t[0]).map(one)),
        7 => case("sequence_scatter", vec![x, g.tensor(I), g.tensor(D)], vec![], move |t, _| {
            sequence_scatter(&t[0], &t[1], &t[2]).map(one)
        }),
        8 => case("sequence_scatter_inplace", vec![x, g.tensor(I), g.tensor(D)], vec![], move |t, _| {
            // A copy of its own: an in-place op refuses a tensor whose memory is shared.
            let mut x = to_place(&t[0], t[0].tensor().place())?;
            sequence_scatter_inplace(&mut x, &t[1], &t[2]).map(|()| vec![x])
        }),
        9 => {
            let mode = g.pick(&[ScatterMode::Overwrite, ScatterMode::Add]);
            case("scatter_rows", vec![x, g.tensor(I), g.tensor(D)], vec![], move |t, _| {
                scatter_rows(&t[0], &t[1], &t[2], mode).map(one)
            })
        }
        10 => case("sequence_softmax", vec![x], vec![], move |t, _| sequence_softmax(&t[0]).map(one)),
        11 => case("log_softmax", vec![x], vec![], move |t, _| log_softmax(&t[0]).map(one)),
        12 => {
            case("sequence_concat", vec![x, g.tensor(D)], vec![], move |t, _| sequence_concat(&[&t[0], &t[1]]).map(one))
        }
        13 => case("sequence_slice", vec![x, g.tensor(I), g.tensor(I)], vec![], move |t, _| {
            sequence_slice(&t[0], &t[1], &t[2]).map(one)
        }),
        14 => case("sequence_reverse", vec![x], vec![], move |t, _| sequence_reverse(&t[0]).map(one)),
        15 => {
            let dtype = g.pick(&DType::ALL);
            case("sequence_mask", vec![g.tensor(I)], vec![], move |t, _| sequence_mask(&t[0], int, dtype).map(one))
        }
        16 => {
            let pad = g.int();
            case("sequence_enumerate", vec![g.tensor(I)], vec![], move |t, _| {
                sequence_enumerate(&t[0], int, pad).map(one)
            })
        }
        17 => {
            let tokens = [int, g.int()];
            case("sequence_erase", vec![g.tensor(I)], vec![], move |t, _| sequence_erase(&t[0], &tokens).map(one))
        }
        18 => case("sequence_reshape", vec![x], vec![], move |t, _| sequence_reshape(&t[0], int).map(one)),
        19 => {
            let (start, stride, trainable, padded) = (g.int(), g.int(), g.below(2) == 0, g.below(2) == 0);
            // Half the time a filter that fits its context length, with stride 1 (the only one
            // there is): rows of the context's width, one block per context row.
            let (length, stride, filter) = if g.below(2) == 0 {
                let (c, w) = (1 + g.below(3), g.width);
                (c as i64, 1, g.tensor_of((vec![c * w, w], Lod::empty()), D))
            } else {
                (int, stride, g.tensor(D))
            };
            case("sequence_conv", vec![x, filter, g.tensor(D)], vec![], move |t, _| {
                let padding = if padded { Some(&t[2]) } else { None };
                sequence_conv(&t[0], &t[1], padding, length, start, stride, trainable).map(one)
            })
        }
        20 => case("lod_tensor_to_array", vec![x], vec![], move |t, _| {
            ranked(&|table| lod_tensor_to_array(&t[0], table).map(TensorArray::into_vec))
        }),
        21 => case("array_to_lod_tensor", vec![], vec![g.array(D)], move |_, a| {
            ranked(&|table| array_to_lod_tensor(&a[0], table).map(one))
        }),
        22 => {
            let step = g.size();
            case("shrink_rnn_memory", vec![x], vec![], move |t, _| {
                ranked(&|table| shrink_rnn_memory(&t[0], table, step).map(one))
            })
        }
        23 => case("reorder_lod_tensor_by_rank", vec![x], vec![], move |t, _| {
            ranked(&|table| reorder_lod_tensor_by_rank(&t[0], table).map(one))
        }),
        24 => {
            let stack = g.below(2) == 0;
            case("tensor_array_to_tensor", vec![], vec![g.array(D)], move |_, a| {
                tensor_array_to_tensor(&a[0], int, stack).map(|(o, _)| vec![o])
            })
        }
        25 => case("unstack", vec![x], vec![], move |t, _| unstack(&t[0], int).map(TensorArray::into_vec)),
        26 => {
            let dtype = g.pick(&DType::ALL);
            case("cast", vec![x], vec![], move |t, _| cast(&t[0], dtype).map(one))
        }
        27 => case("gather_rows", vec![x, g.tensor(I)], vec![], move |t, _| gather_rows(&t[0], &t[1]).map(one)),
        28 => {
            let (k, largest) = (g.size(), g.below(2) == 0);
            case("top_k", vec![x], vec![], move |t, _| top_k(&t[0], k, largest).map(|(v, i)| vec![v, i]))
        }
        29 => {
            let (level, beam, with_ids, accumulated) = (g.size(), g.size(), g.below(2) == 0, g.below(2) == 0);
            let tensors = vec![g.tensor(I), g.tensor(D), g.tensor(I), g.tensor(D)];
            case("beam_search_step", tensors, vec![], move |t, _| {
                let ids = if with_ids { Some(&t[2]) } else { None };
                beam_search_step(&t[0], &t[1], ids, &t[3], level, beam, int, accumulated).map(step_outputs)
            })
        }
        30 => {
            let beam = g.size();
            case("beam_search_fused_step", vec![g.tensor(I), g.tensor(D), x], vec![], move |t, _| {
                beam_search_fused_step(&t[0], &t[1], &t[2], beam, int).map(step_outputs)
            })
        }
        31 => case("beam_search_gather_state", vec![x, g.tensor(I)], vec![], move |t, _| {
            beam_search_gather_state(&t[0], &t[1]).map(one)
        }),
        32 => {
            let beam = g.size();
            case("beam_search_decode", vec![], vec![g.array(I), g.array(D)], move |_, a| {
                beam_search_decode(&a[0], &a[1], beam, int).map(|(i, s)| vec![i, s])
            })
        }
        33 => case("beam_search_gather_states", vec![x, g.tensor(D), g.tensor(I)], vec![], move |t, _| {
            beam_search_gather_states(&[&t[0], &t[1]], &t[2])
        }),
        34 => case("beam_search_gather_tree", vec![g.tensor(I), g.tensor(I)], vec![], move |t, _| {
            beam_search_gather_tree(&t[0], &t[1]).map(one)
        }),
        35 => case("merge", vec![x, g.tensor(D), g.tensor(D)], vec![], move |t, _| {
            LoDTensor::merge(&t.iter().collect::<Vec<_>>()).map(one)
        }),
        36 => {
            let (with_y, append) = (g.below(2) == 0, g.below(2) == 0);
            let target: Vec<i64> = (0..g.below(5)).map(|_| g.int()).collect();
            case("lod_reset", vec![x, g.tensor(I)], vec![], move |t, _| {
                t[0].lod_reset(with_y.then_some(&t[1]), &target, append).map(one)
            })
        }
        37 => {
            let (level, begin, end) = (g.size(), g.size(), g.size());
            case("slice", vec![x], vec![], move |t, _| t[0].slice(level, begin, end).map(one))
        }
        38 => {
            let pieces = g.size();
            case("split", vec![x], vec![], move |t, _| t[0].split(pieces))
        }
        39 => {
            // The step hands on its input or its state as its output and new state, so the loop's
            // unpack, reorder, shrink and pack see the generator's tensors.
            let (level, output_is_input, state_is_input) = (g.size(), g.below(2) == 0, g.below(3) == 0);
            case("dynamic_rnn", vec![x, g.tensor(D)], vec![], move |t, _| {
                let step = |_, input: &LoDTensor, prev: &LoDTensor| {
                    let pick = |is_input| if is_input { input.clone() } else { prev.clone() };
                    Ok((pick(output_is_input), pick(state_is_input)))
                };
                dynamic_rnn(&t[0], level, &t[1], step).map(one)
            })
        }
        40 => {
            // The record of x with one byte changed (at a random place, or none), read back (a
            // host tensor) and put where x is.
            let (at, byte) = (g.below(64), g.int() as u8);
            case("serialize", vec![x], vec![], move |t, _| {
                let mut bytes = serialize(&t[0])?;
                if let Some(b) = bytes.get_mut(at) {
                    *b = byte;
                }
                let (y, used) = deserialize(&bytes)?;
                assert!(used <= bytes.len(), "a record of {used} bytes read from {}", bytes.len());
                Ok(vec![to_place(&y, t[0].tensor().place())?])
            })
        }
        _ => {
            // A write past the end fills the gap with 0-row tensors of x's dtype, row shape and
            // place; the array then goes to an op that reads every element.
            let (index, read, stack) = (g.size(), g.size(), g.below(2) == 0);
            case("tensor_array_write", vec![x], vec![g.array(D)], move |t, a| {
                let mut array = a[0].clone();
                array.write(index, t[0].clone())?;
                let (joined, _) = tensor_array_to_tensor(&array, int, stack)?;
                Ok(vec![joined, array.read_copy(read)?])
            })
        }
    }
}
