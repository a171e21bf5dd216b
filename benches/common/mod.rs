//! What the operator benchmarks share (benches/ops.rs on the CPU, benches/gpu.rs on a CUDA
//! device): the fixed-seed data, and the cases themselves: every hot operator with its inputs,
//! the minimum bytes it must move and the CPU calibration that fits it (the GPU bench maps each
//! calibration to a device one). `on` puts each input where the op should run (identity for the
//! CPU, `to_place(cuda:0)` for the GPU) before the op closure takes it; `small` shrinks every
//! case (for a quick end-to-end run, e.g. on the emulator).
#![allow(dead_code)]

use half::f16;
use lodtensor::interop::arrow::{to_arrow_device_strings, Encoding};
use lodtensor::{
    array_to_lod_tensor, beam_search_fused_step, beam_search_gather_states, beam_search_gather_tree,
    lod_tensor_to_array, sequence_expand_as, sequence_pad, sequence_pool, sequence_scatter, sequence_unpad, LoDTensor,
    Place, PoolType, RankTable, Tensor,
};
use lodtensor::{scatter_rows, tensor_array_to_tensor, unstack, ScatterMode, TensorArray};
use std::hint::black_box;
use std::ops::Range;
use std::rc::Rc;

/// splitmix64: fixed-seed lengths and ids, no dependency.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `[lo, hi]`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }
}

pub fn data(n: usize, rng: &mut Rng) -> Vec<f32> {
    (0..n).map(|_| (rng.next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5).collect()
}

pub fn offsets(lengths: &[usize]) -> Vec<usize> {
    let mut o = vec![0];
    for &n in lengths {
        o.push(o[o.len() - 1] + n);
    }
    o
}

/// A one-level f32 LoDTensor of `lengths` sequences of rows of `width`.
pub fn sequences(lengths: &[usize], width: usize, rng: &mut Rng) -> LoDTensor {
    let o = offsets(lengths);
    let rows = o[o.len() - 1];
    LoDTensor::from_slice(&data(rows * width, rng), &[rows, width], vec![o]).unwrap()
}

#[derive(Clone)]
pub enum Calib {
    Copy,
    /// The input copied once into the front of the output, the rest filled (pad).
    CopyFill,
    Sum,
    /// A plain loop copying these row blocks one after the other, block `(s, rows)` being rows
    /// `rows` of `sources[s]` (rows of `row_bytes`): the op's own memory pattern with none of its
    /// bookkeeping. On the CPU `sources` are the op's own inputs, so that the calibration reads
    /// the memory the op reads, warm or cold as the op finds it.
    Gather {
        sources: Rc<Vec<Tensor>>,
        row_bytes: usize,
        ranges: Rc<Vec<(usize, Range<usize>)>>,
    },
    /// A plain loop of 8-byte element loads at given positions: `out[i] = source[index[i]]`, the
    /// positions of `source` that the op ends up reading, in its output order (gather_tree: the
    /// same reads of the ids, with a precomputed position in place of each parent).
    ElementGather {
        source: Rc<Vec<u64>>,
        index: Rc<Vec<usize>>,
    },
    /// Row scatter-add as the plain sequential loop: the output is a copy of `x`, then
    /// `out[index[i]] += updates[i]` for i in order (rows of `width` f32).
    ScatterLoop {
        x: Rc<LoDTensor>,
        updates: Rc<LoDTensor>,
        index: Rc<Vec<usize>>,
        width: usize,
    },
}

pub struct Case {
    pub name: String,
    pub read: usize,
    pub write: usize,
    pub calib: Calib,
    pub op: Box<dyn Fn() -> lodtensor::Result<()>>,
}

pub fn case(
    name: impl Into<String>,
    read: usize,
    write: usize,
    calib: Calib,
    op: impl Fn() -> lodtensor::Result<()> + 'static,
) -> Case {
    Case { name: name.into(), read, write, calib, op: Box::new(op) }
}

/// Every case, inputs placed by `on`; `small` divides the batch-like dimensions by 16.
pub fn cases(on: &dyn Fn(LoDTensor) -> LoDTensor, small: bool) -> Vec<Case> {
    let s = |n: usize| if small { (n / 16).max(1) } else { n };
    let mut rng = Rng(0x1234_5678);
    let f = 4usize; // f32
    let mut v = Vec::new();

    // expand_as: NMT encoder memory to beams, and many short rows.
    {
        let (n, w, beams) = (s(64), 50 * 512, 5);
        let x = on(LoDTensor::dense(Tensor::from_slice(&data(n * w, &mut rng), &[n, w]).unwrap()));
        let y = LoDTensor::from_slice(&vec![0f32; n * beams], &[n * beams, 1], vec![offsets(&vec![beams; n])]).unwrap();
        let y = on(y);
        v.push(case(format!("expand_as {n}x25600 x5"), n * w * f, n * beams * w * f, Calib::Copy, move || {
            black_box(sequence_expand_as(&x, &y)).map(drop)
        }));
    }
    {
        let (n, w) = (s(4096), 128);
        let lengths: Vec<usize> = (0..n).map(|_| rng.range(1, 64)).collect();
        let total: usize = lengths.iter().sum();
        let x = on(LoDTensor::dense(Tensor::from_slice(&data(n * w, &mut rng), &[n, w]).unwrap()));
        let y = on(LoDTensor::from_slice(&vec![0f32; total], &[total, 1], vec![offsets(&lengths)]).unwrap());
        v.push(case(format!("expand_as {n}x128 U[1,64]"), n * w * f, total * w * f, Calib::Copy, move || {
            black_box(sequence_expand_as(&x, &y)).map(drop)
        }));
    }

    // sequence_scatter, Paddle style: 50 updates into each row of X[320, 32000].
    {
        let (n, w, per) = (s(320), 32000, 50);
        let x = LoDTensor::dense(Tensor::from_slice(&data(n * w, &mut rng), &[n, w]).unwrap());
        let ids: Vec<i64> = (0..n * per).map(|_| rng.range(0, w - 1) as i64).collect();
        let ids = LoDTensor::from_slice(&ids, &[n * per, 1], vec![offsets(&vec![per; n])]).unwrap();
        let upd = LoDTensor::from_slice(&data(n * per, &mut rng), &[n * per, 1], vec![offsets(&vec![per; n])]).unwrap();
        let (x, ids, upd) = (on(x), on(ids), on(upd));
        let read = n * w * f + n * per * (8 + f);
        v.push(case(format!("scatter {n}x32000 50/row"), read, n * w * f, Calib::Copy, move || {
            black_box(sequence_scatter(&x, &ids, &upd)).map(drop)
        }));
    }

    // scatter_rows ADD (index_add): 262144 update rows of 128 floats into x[100000, 128], indices
    // uniform; its own generator, so the cases after it keep their data. Minimum traffic: read x,
    // the updates and the int64 index once, write the output once.
    // Calibration: "plain loop", the sequential loop the op must equal bit for bit (copy x, then
    // `out[index[i]] += updates[i]` in order), credited with the same minimum bytes; its copy's
    // ratio is printed too ("copy GB/s"). Why not the copy alone: with random indices the 134 MB
    // of updates cannot be read (nor the output rows updated) in one stream; one of the two is
    // 512-byte rows in random order, which on the benchmark VM moves at a quarter to a third of
    // a sequential read (benches/REPORT.md), so no kernel of this op reaches a copy's speed. The
    // plain loop does the op's work with none of its design (no grouping by destination row, no
    // prefetching); a plain loop over the rows grouped by destination was slower still.
    {
        let mut rng = Rng(0x5CA7_7E12);
        let (n, m, w) = (s(100_000), s(262_144), 128);
        let x = LoDTensor::dense(Tensor::from_slice(&data(n * w, &mut rng), &[n, w]).unwrap());
        let index: Vec<usize> = (0..m).map(|_| rng.range(0, n - 1)).collect();
        let upd = LoDTensor::dense(Tensor::from_slice(&data(m * w, &mut rng), &[m, w]).unwrap());
        let index_t: Vec<i64> = index.iter().map(|&r| r as i64).collect();
        let index_t = LoDTensor::dense(Tensor::from_slice(&index_t, &[m]).unwrap());
        let calib = Calib::ScatterLoop {
            x: Rc::new(x.clone()),
            updates: Rc::new(upd.clone()),
            index: Rc::new(index),
            width: w,
        };
        let (x, index_t, upd) = (on(x), on(index_t), on(upd));
        let read = n * w * f + m * w * f + m * 8;
        v.push(case(format!("scatter_add {m}x128 into {n}"), read, n * w * f, calib, move || {
            black_box(scatter_rows(&x, &index_t, &upd, ScatterMode::Add)).map(drop)
        }));
    }

    // TensorArray unpack (lod_tensor_to_array) and pack (array_to_lod_tensor). Calibration: the
    // same rows gathered by a plain loop from the same tensors (x; the array's steps), the ranges
    // derived here from the lengths alone.
    for (n, lo, hi, w) in [(64, 10, 100, 512), (32, 200, 1500, 80), (32, 200, 1500, 512)] {
        let n = s(n);
        let lengths: Vec<usize> = (0..n).map(|_| rng.range(lo, hi)).collect();
        let host_x = sequences(&lengths, w, &mut rng);
        let bytes = host_x.tensor().nbytes();
        let table = RankTable::from_lod_tensor(&host_x, 0).unwrap();
        let x = on(host_x.clone());
        // Made where the op runs; where it cannot, pack reports the same error.
        let array = lod_tensor_to_array(&x, &table);
        // Rank order: longest first, ties by index; step t holds row t of each sequence alive.
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(lengths[i]));
        let o = offsets(&lengths);
        let steps = lengths.iter().copied().max().unwrap_or(0);
        let mut unpack_rows: Vec<(usize, Range<usize>)> = vec![];
        for t in 0..steps {
            unpack_rows.extend(order.iter().filter(|&&i| lengths[i] > t).map(|&i| (0, o[i] + t..o[i] + t + 1)));
        }
        // Sequence i is row rank[i] of every step it is alive in.
        let mut rank = vec![0; n];
        for (k, &i) in order.iter().enumerate() {
            rank[i] = k;
        }
        let mut pack_rows: Vec<(usize, Range<usize>)> = vec![];
        for i in 0..n {
            pack_rows.extend((0..lengths[i]).map(|t| (t, rank[i]..rank[i] + 1)));
        }
        // The op's own steps where they are on the host (the CPU bench), else host ones.
        let host_steps = match &array {
            Ok(a) if a.as_slice().iter().all(|s| s.tensor().place() == Place::Cpu) => a.clone(),
            _ => lod_tensor_to_array(&host_x, &table).unwrap(),
        };
        let steps: Vec<Tensor> = host_steps.as_slice().iter().map(|s| s.tensor().clone()).collect();
        let row_bytes = w * f;
        let unpack_cal =
            Calib::Gather { sources: Rc::new(vec![host_x.tensor().clone()]), row_bytes, ranges: Rc::new(unpack_rows) };
        let pack_cal = Calib::Gather { sources: Rc::new(steps), row_bytes, ranges: Rc::new(pack_rows) };
        let t2 = table.clone();
        v.push(case(format!("unpack {n} U[{lo},{hi}] w{w}"), bytes, bytes, unpack_cal, move || {
            black_box(lod_tensor_to_array(&x, &table)).map(drop)
        }));
        v.push(case(format!("pack {n} U[{lo},{hi}] w{w}"), bytes, bytes, pack_cal, move || {
            black_box(array_to_lod_tensor(array.as_ref().map_err(|e| e.clone())?, &t2)).map(drop)
        }));
    }

    // pad / unpad.
    for (n, lo, hi, padded, w) in [(128, 0, 127, -1i64, 512), (4096, 1, 128, 256, 64)] {
        let n = s(n);
        let lengths: Vec<usize> = (0..n).map(|_| rng.range(lo, hi)).collect();
        let x = sequences(&lengths, w, &mut rng);
        let pad = LoDTensor::dense(Tensor::from_slice(&[0f32], &[1]).unwrap());
        let (padded_t, length) = sequence_pad(&x, &pad, padded).unwrap();
        let (x, pad, padded_t, length) = (on(x), on(pad), on(padded_t), on(length));
        let l = padded_t.dims().as_slice()[1];
        let bytes = x.tensor().nbytes();
        let label = if padded < 0 { "max".to_string() } else { padded.to_string() };
        v.push(case(
            format!("pad {n} U[{lo},{hi}] to {label} w{w}"),
            bytes,
            n * l * w * f + n * 8,
            Calib::CopyFill,
            move || black_box(sequence_pad(&x, &pad, padded)).map(drop),
        ));
        v.push(case(format!("unpad {n} U[{lo},{hi}] from {l} w{w}"), bytes + n * 8, bytes, Calib::Copy, move || {
            black_box(sequence_unpad(&padded_t, &length)).map(drop)
        }));
    }

    // sequence_pool.
    for (n, hi, w) in [(4096, 64, 128), (65536, 32, 16), (262144, 128, 1), (262144, 32, 4)] {
        let n = s(n);
        let lengths: Vec<usize> = (0..n).map(|_| rng.range(1, hi)).collect();
        let x = Rc::new(on(sequences(&lengths, w, &mut rng)));
        let bytes = x.tensor().nbytes();
        for (p, name) in [(PoolType::Sum, "sum"), (PoolType::Average, "mean"), (PoolType::Max, "max")] {
            let x = x.clone();
            // max also writes the int32 index of every output element.
            let write = n * w * f + if p == PoolType::Max { n * w * 4 } else { 0 };
            v.push(case(format!("pool {name} {n} U[1,{hi}] w{w}"), bytes, write, Calib::Sum, move || {
                black_box(sequence_pool(&x, p, 0.0)).map(drop)
            }));
        }
    }
    // The fused beam-search step: batch x beam prefix rows over a vocabulary, mid-decode (two
    // LoD levels, no finished rows). Its ceiling is a read of the logits (sum calibration).
    for (batch, beam, vocab) in [(64usize, 5usize, 32000usize), (8, 4, 128256), (32, 10, 5000)] {
        let batch = s(batch);
        let p = batch * beam;
        let source: Vec<usize> = (0..=batch).map(|b| b * beam).collect();
        let rows: Vec<usize> = (0..=p).collect();
        let pre_ids: Vec<i64> = (0..p).map(|_| rng.range(2, vocab - 1) as i64).collect();
        let pre_ids = LoDTensor::from_slice(&pre_ids, &[p, 1], vec![source, rows]).unwrap();
        let pre_scores: Vec<f32> = (0..p).map(|_| -(rng.range(0, 1000) as f32) / 100.0).collect();
        let pre_scores = LoDTensor::dense(Tensor::from_slice(&pre_scores, &[p, 1]).unwrap());
        let logits: Vec<f32> = data(p * vocab, &mut rng).iter().map(|v| v * 20.0 - 10.0).collect();
        let log_probs = LoDTensor::dense(Tensor::from_slice(&logits, &[p, vocab]).unwrap());
        let (pre_ids, pre_scores, log_probs) = (on(pre_ids), on(pre_scores), on(log_probs));
        let read = p * vocab * f + p * (8 + f);
        let write = batch * beam * (8 + f + 4);
        v.push(case(format!("beam step {batch}x{beam}x{vocab}"), read, write, Calib::Sum, move || {
            black_box(beam_search_fused_step(&pre_ids, &pre_scores, &log_probs, beam, 1)).map(drop)
        }));
    }
    // gather_tree: T = 100 steps, batch 64, beam 5, int64.
    {
        let (t, batch, beam) = (s(100), 64usize, 5usize);
        let n = t * batch * beam;
        let ids: Vec<i64> = (0..n).map(|_| rng.range(0, 31999) as i64).collect();
        let parents: Vec<i64> = (0..n).map(|_| rng.range(0, beam - 1) as i64).collect();
        // Where output element (t, b, k) is read from: follow chain (b, k) back from the last step.
        let mut index = vec![0usize; n];
        for b in 0..batch {
            for k in 0..beam {
                let mut slot = k;
                for step in (0..t).rev() {
                    let at = (step * batch + b) * beam;
                    index[at + k] = at + slot;
                    slot = parents[at + slot] as usize;
                }
            }
        }
        let calib =
            Calib::ElementGather { source: Rc::new(ids.iter().map(|&v| v as u64).collect()), index: Rc::new(index) };
        let ids = LoDTensor::dense(Tensor::from_slice(&ids, &[t, batch, beam]).unwrap());
        let parents = LoDTensor::dense(Tensor::from_slice(&parents, &[t, batch, beam]).unwrap());
        let (ids, parents) = (on(ids), on(parents));
        v.push(case(format!("gather_tree T{t} b64 k5"), 2 * n * 8, n * 8, calib, move || {
            black_box(beam_search_gather_tree(&ids, &parents)).map(drop)
        }));
    }

    // TensorArray unstack of a time-major batch along axis 0: 512 steps of [64, 512] float32
    // (128 KiB a step, 64 MiB in all).
    {
        let (t, b, w) = (s(512), 64, 512);
        let x = on(LoDTensor::dense(Tensor::from_slice(&data(t * b * w, &mut rng), &[t, b, w]).unwrap()));
        let bytes = t * b * w * f;
        v.push(case(format!("unstack {t}x{b}x{w} axis 0"), bytes, bytes, Calib::Copy, move || {
            black_box(unstack(&x, 0)).map(drop)
        }));
    }
    // Unstack and stack along an inner axis, where each part is a row of every outer block:
    // 4096 parts of [64, 16] float32 (64-byte rows, 16 MiB), and the 512 columns of a
    // [4096, 512] float32 matrix (4-byte rows, a transpose, 8 MiB).
    for (outer, n, w) in [(s(64), 4096usize, 16usize), (s(4096), 512, 1)] {
        let x = LoDTensor::dense(Tensor::from_slice(&data(outer * n * w, &mut rng), &[outer, n, w]).unwrap());
        let bytes = outer * n * w * f;
        let parts = unstack(&x, 1).unwrap();
        let x = on(x);
        v.push(case(format!("unstack {outer}x{n}x{w} axis 1"), bytes, bytes, Calib::Copy, move || {
            black_box(unstack(&x, 1)).map(drop)
        }));
        let parts = TensorArray::from_vec(parts.into_vec().into_iter().map(on).collect());
        v.push(case(format!("stack {n}x[{outer},{w}] axis 1"), bytes, bytes, Calib::Copy, move || {
            black_box(tensor_array_to_tensor(&parts, 1, true)).map(drop)
        }));
    }
    // The columns of matrices of narrower words: [4096, 1024] float16 and [4096, 2048] uint8
    // (8 MiB each).
    {
        let outer = s(4096);
        let halves: Vec<f16> = data(outer * 1024, &mut rng).into_iter().map(f16::from_f32).collect();
        let bytes: Vec<u8> = data(outer * 2048, &mut rng).into_iter().map(|x| (x * 255.0) as u8).collect();
        let matrices = [
            ("float16", Tensor::from_slice(&halves, &[outer, 1024, 1]).unwrap()),
            ("uint8", Tensor::from_slice(&bytes, &[outer, 2048, 1]).unwrap()),
        ];
        for (dtype, x) in matrices {
            let (n, bytes) = (x.dims().as_slice()[1], x.nbytes());
            let x = LoDTensor::dense(x);
            let parts = TensorArray::from_vec(unstack(&x, 1).unwrap().into_vec().into_iter().map(on).collect());
            let x = on(x);
            v.push(case(format!("unstack {outer}x{n}x1 {dtype} axis 1"), bytes, bytes, Calib::Copy, move || {
                black_box(unstack(&x, 1)).map(drop)
            }));
            v.push(case(format!("stack {n}x[{outer},1] {dtype} axis 1"), bytes, bytes, Calib::Copy, move || {
                black_box(tensor_array_to_tensor(&parts, 1, true)).map(drop)
            }));
        }
    }
    // A decoder's state reordered after a step by the step's parents (beam_search_gather_states):
    // the keys and values of 24 layers (48 states) for 64 x 5 prefixes, float32 rows of 512, each
    // prefix's parent one of its source's 5. Calibration: the same rows gathered by a plain loop
    // (runs of consecutive parents as one block, as the op reads them).
    {
        let (p, w, layers) = (s(320), 512, 48);
        let host: Vec<LoDTensor> = (0..layers)
            .map(|_| LoDTensor::dense(Tensor::from_slice(&data(p * w, &mut rng), &[p, w]).unwrap()))
            .collect();
        let parents: Vec<usize> = (0..p).map(|i| (i / 5 * 5 + rng.range(0, 4)).min(p - 1)).collect();
        let mut runs: Vec<Range<usize>> = vec![];
        for &r in &parents {
            match runs.last_mut() {
                Some(run) if run.end == r => run.end += 1,
                _ => runs.push(r..r + 1),
            }
        }
        let blocks = (0..layers).flat_map(|k| runs.iter().map(move |r| (k, r.clone()))).collect();
        let sources = host.iter().map(|t| t.tensor().clone()).collect();
        let calib = Calib::Gather { sources: Rc::new(sources), row_bytes: w * f, ranges: Rc::new(blocks) };
        let states: Vec<LoDTensor> = host.into_iter().map(on).collect();
        let parents: Vec<i64> = parents.iter().map(|&r| r as i64).collect();
        let parents = on(LoDTensor::dense(Tensor::from_slice(&parents, &[p]).unwrap()));
        let bytes = layers * p * w * f;
        v.push(case(format!("gather_states {layers}x{p}x{w}"), bytes, bytes, calib, move || {
            let refs: Vec<&LoDTensor> = states.iter().collect();
            black_box(beam_search_gather_states(&refs, &parents)).map(drop)
        }));
    }

    // A decoder's text lent to Arrow as UTF-8 strings: the check reads every byte (and each
    // string's first), nothing is written (the strings are lent in place). 2^20 strings of 24
    // bytes of 1-3 byte characters.
    {
        let n = s(1 << 20);
        let sentence = "Grüße schöne Welt 語".as_bytes();
        let bytes: Vec<u8> = sentence.iter().copied().cycle().take(n * sentence.len()).collect();
        let text = LoDTensor::from_slice(&bytes, &[bytes.len()], vec![offsets(&vec![sentence.len(); n])]).unwrap();
        let text = on(text);
        let read = bytes.len() + (n + 1) * 8;
        v.push(case(format!("utf8 strings {n}x{}", sentence.len()), read, 0, Calib::Sum, move || {
            let (mut schema, mut device) = to_arrow_device_strings(&text, Encoding::Utf8)?;
            // SAFETY: both structs were just filled by the export; each is released once.
            unsafe {
                (schema.release.unwrap())(&mut schema);
                (device.array.release.unwrap())(&mut device.array);
            }
            Ok(())
        }));
    }
    v
}
