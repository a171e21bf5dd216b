//! The operator benchmark: every hot operator against a calibration kernel of the same
//! size, measured in the same process and interleaved with it (op, calibration, op, ...) so both
//! see the same noise from other work on the machine. Not part of `cargo test` or CI.
//!
//!   cargo bench --bench ops                 # every case, 1 and 2 threads, markdown table
//!   cargo bench --bench ops -- pool         # only cases whose name contains "pool"
//!   BENCH_REPS=3 BENCH_THREADS=1 ...        # fewer repetitions / one thread count (profiling)
//!
//! Each case declares the minimum bytes the operator must move: `read` (every input byte it
//! needs, once) and `write` (every output byte, once). Its GB/s is `(read + write) / median time`.
//! The calibration is the plainest kernel with the same traffic:
//! - `copy`: writes `write` bytes into a new buffer, allocated for each run and freed after it
//!   exactly as an op's output is (`Allocation::zeroed`, the library's allocator), from a source
//!   of `min(read, write)` bytes, tiled when the output is larger (expand, pad):
//!   GB/s = `(source + write) / time`. So the ratio measures the kernel, not the allocator.
//! - `sum`: a read-only f32 sum over `read` bytes (pooling, and the fused beam-search step, whose
//!   ceiling is one read of the logits): GB/s = `read / time`.
//! - `row gather` (unpack/pack): the op's own rows, gathered in its order by a plain loop into a
//!   new buffer (ranges derived in this file from the lengths): GB/s = `(read + write) / time`.
//!   A time step of every sequence is short rows from many places, slower than one stream; the
//!   plain copy of the same size and the op's ratio to it are printed as well ("copy GB/s").
//! - `plain loop` (row scatter-add): the sequential loop the op must equal, credited with the op's
//!   bytes; the copy's GB/s and the op's ratio to it are printed as well (see the case).
//!
//! The ratio is op GB/s / calibration GB/s, taken per pair of adjacent runs (op, then its
//! calibration) and then the median over pairs. The same copy into a buffer reused across runs ("warm
//! copy") is printed too, for the cost of fresh pages.

use lodtensor::backend::cpu::pool::{pool, set_num_threads};
use lodtensor::{
    array_to_lod_tensor, beam_search_fused_step, beam_search_gather_tree, lod_tensor_to_array, sequence_expand_as,
    sequence_pad, sequence_pool, sequence_scatter, sequence_unpad, Allocation, LoDTensor, PoolType, RankTable, Tensor,
};
use lodtensor::{scatter_rows, ScatterMode};
use rayon::prelude::*;
use std::alloc::{alloc, dealloc, Layout};
use std::hint::black_box;
use std::ops::Range;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// splitmix64: fixed-seed lengths and ids, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `[lo, hi]`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }
}

fn data(n: usize, rng: &mut Rng) -> Vec<f32> {
    (0..n).map(|_| (rng.next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5).collect()
}

fn offsets(lengths: &[usize]) -> Vec<usize> {
    let mut o = vec![0];
    for &n in lengths {
        o.push(o[o.len() - 1] + n);
    }
    o
}

/// A one-level f32 LoDTensor of `lengths` sequences of rows of `width`.
fn sequences(lengths: &[usize], width: usize, rng: &mut Rng) -> LoDTensor {
    let o = offsets(lengths);
    let rows = o[o.len() - 1];
    LoDTensor::from_slice(&data(rows * width, rng), &[rows, width], vec![o]).unwrap()
}

#[derive(Clone)]
enum Calib {
    Copy,
    Sum,
    /// A plain loop copying these row ranges of `source` (rows of `row_bytes`) one after the other:
    /// the op's own memory pattern with none of its bookkeeping.
    Gather {
        source: Rc<Vec<u8>>,
        row_bytes: usize,
        ranges: Rc<Vec<Range<usize>>>,
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

struct Case {
    name: String,
    read: usize,
    write: usize,
    calib: Calib,
    op: Box<dyn Fn()>,
}

fn case(name: impl Into<String>, read: usize, write: usize, calib: Calib, op: impl Fn() + 'static) -> Case {
    Case { name: name.into(), read, write, calib, op: Box::new(op) }
}

/// A 64-byte aligned buffer reused across runs: the warm-memory copy.
struct Fresh {
    ptr: *mut u8,
    layout: Layout,
}
impl Fresh {
    fn new(len: usize) -> Fresh {
        let layout = Layout::from_size_align(len.max(1), 64).unwrap();
        // SAFETY: non-zero size.
        let ptr = unsafe { alloc(layout) };
        assert!(!ptr.is_null());
        Fresh { ptr, layout }
    }
    fn slice(&mut self, len: usize) -> &mut [u8] {
        // SAFETY: `len` <= the allocation; the calibration writes every byte before any read of it.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, len) }
    }
}
impl Drop for Fresh {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

/// `dst[p] = src[p % src.len()]`, copying whole tiles; one task per half with 2 threads.
fn tiled_copy(src: &[u8], dst: &mut [u8], threads: usize) {
    let part = dst.len().div_ceil(threads).max(1);
    let run = |(k, d): (usize, &mut [u8])| {
        let mut p = k * part;
        let mut d = d;
        while !d.is_empty() {
            let at = p % src.len();
            let n = (src.len() - at).min(d.len());
            let (head, rest) = d.split_at_mut(n);
            head.copy_from_slice(&src[at..at + n]);
            d = rest;
            p += n;
        }
    };
    if threads == 1 {
        run((0, dst));
    } else {
        pool().unwrap().install(|| dst.par_chunks_mut(part).enumerate().for_each(run));
    }
}

/// The row-gather calibration: ranges copied in order into `dst`, split in `threads` parts of
/// consecutive ranges.
fn row_gather(src: &[u8], row_bytes: usize, ranges: &[Range<usize>], dst: &mut [u8], threads: usize) {
    let copy = |ranges: &[Range<usize>], dst: &mut [u8]| {
        let mut at = 0;
        for r in ranges {
            let n = r.len() * row_bytes;
            dst[at..at + n].copy_from_slice(&src[r.start * row_bytes..r.end * row_bytes]);
            at += n;
        }
    };
    if threads == 1 {
        copy(ranges, dst);
    } else {
        let half = ranges.len() / 2;
        let split: usize = ranges[..half].iter().map(|r| r.len() * row_bytes).sum();
        let (a, b) = dst.split_at_mut(split);
        pool().unwrap().install(|| rayon::join(|| copy(&ranges[..half], a), || copy(&ranges[half..], b)));
    }
}

/// The plain-loop calibration of row scatter-add: `dst` = `x`, then `dst[index[i]] +=
/// updates[i]` for i in order. With 2 threads each adds the updates of its half of the rows.
fn scatter_loop(x: &[f32], updates: &[f32], index: &[usize], w: usize, dst: &mut [f32], threads: usize) {
    let add = |rows: Range<usize>, dst: &mut [f32]| {
        dst.copy_from_slice(&x[rows.start * w..rows.end * w]);
        for (i, &r) in index.iter().enumerate() {
            if rows.contains(&r) {
                let row = &mut dst[(r - rows.start) * w..(r - rows.start + 1) * w];
                for (a, &b) in row.iter_mut().zip(&updates[i * w..(i + 1) * w]) {
                    *a += b;
                }
            }
        }
    };
    let rows = dst.len() / w;
    if threads == 1 {
        add(0..rows, dst);
    } else {
        let half = rows / 2;
        let (a, b) = dst.split_at_mut(half * w);
        pool().unwrap().install(|| rayon::join(|| add(0..half, a), || add(half..rows, b)));
    }
}

fn sum_f32(x: &[f32]) -> f32 {
    let mut acc = [0f32; 16];
    let chunks = x.chunks_exact(16);
    let tail: f32 = chunks.remainder().iter().sum();
    for c in chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a += v;
        }
    }
    acc.iter().sum::<f32>() + tail
}

fn read_sum(x: &[f32], threads: usize) -> f32 {
    if threads == 1 {
        sum_f32(x)
    } else {
        let part = x.len().div_ceil(threads).max(1);
        pool().unwrap().install(|| x.par_chunks(part).map(sum_f32).sum())
    }
}

fn time(f: impl FnOnce()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

struct Row {
    name: String,
    threads: usize,
    op: Duration,
    op_gbs: f64,
    ceil_gbs: f64,
    warm_gbs: f64,
    copy_gbs: Option<f64>,
    ratio: f64,
    calib: &'static str,
}

fn measure(c: &Case, threads: usize, reps: usize) -> Row {
    let src_len = c.read.min(c.write).max(1);
    let src: Vec<u8> = (0..src_len).map(|i| i as u8).collect();
    let sum_src: Vec<f32> = vec![1.0; c.read / 4];
    let mut warm = Fresh::new(c.write);
    let (mut t_op, mut t_cal, mut t_warm, mut t_copy) = (vec![], vec![], vec![], vec![]);
    let fresh_copy = || {
        time(|| {
            let out = Allocation::zeroed(c.write).unwrap();
            // SAFETY: a new allocation of `c.write` bytes, held only here.
            let dst = unsafe { std::slice::from_raw_parts_mut(out.as_ptr(), c.write) };
            tiled_copy(&src, dst, threads);
            black_box(out.as_ptr());
        })
    };
    let warmup = 2;
    for rep in 0..warmup + reps {
        let op = time(|| (c.op)());
        let (cal, wrm) = match &c.calib {
            Calib::Copy => (fresh_copy(), time(|| tiled_copy(&src, warm.slice(c.write), threads))),
            Calib::Gather { source, row_bytes, ranges } => {
                let t = time(|| {
                    let out = Allocation::zeroed(c.write).unwrap();
                    // SAFETY: a new allocation of `c.write` bytes, held only here.
                    let dst = unsafe { std::slice::from_raw_parts_mut(out.as_ptr(), c.write) };
                    row_gather(source, *row_bytes, ranges, dst, threads);
                    black_box(out.as_ptr());
                });
                t_copy.push(fresh_copy());
                (t, time(|| tiled_copy(&src, warm.slice(c.write), threads)))
            }
            Calib::ScatterLoop { x, updates, index, width } => {
                let x = x.tensor().as_slice::<f32>().unwrap();
                let updates = updates.tensor().as_slice::<f32>().unwrap();
                let t = time(|| {
                    let out = Allocation::zeroed(c.write).unwrap();
                    // SAFETY: a new allocation of `c.write` bytes (f32 rows), held only here.
                    let dst = unsafe { std::slice::from_raw_parts_mut(out.as_ptr().cast::<f32>(), c.write / 4) };
                    scatter_loop(x, updates, index, *width, dst, threads);
                    black_box(out.as_ptr());
                });
                t_copy.push(fresh_copy());
                (t, time(|| tiled_copy(&src, warm.slice(c.write), threads)))
            }
            Calib::Sum => {
                let t = time(|| {
                    black_box(read_sum(black_box(&sum_src), threads));
                });
                (t, t)
            }
        };
        if rep >= warmup {
            t_op.push(op);
            t_cal.push(cal);
            t_warm.push(wrm);
        }
    }
    let gbs = |bytes: usize, t: Duration| bytes as f64 / t.as_secs_f64() / 1e9;
    // The ratio of each op run to the calibration run right after it, then the median of those:
    // both runs of a pair see nearly the same load from other work on the machine, which the
    // ratio of two separate medians does not guarantee when the load comes in bursts.
    let mut pair_ratios: Vec<f64> = t_op.iter().zip(&t_cal).map(|(o, c)| c.as_secs_f64() / o.as_secs_f64()).collect();
    pair_ratios.sort_by(f64::total_cmp);
    let pair_ratio = pair_ratios[pair_ratios.len() / 2];
    let op = median(t_op);
    let (cal_bytes, calib) = match &c.calib {
        Calib::Copy => (src_len + c.write, "copy"),
        Calib::Sum => (c.read, "sum"),
        Calib::Gather { .. } => (c.read + c.write, "row gather"),
        Calib::ScatterLoop { .. } => (c.read + c.write, "plain loop"),
    };
    let copy_gbs = (!t_copy.is_empty()).then(|| gbs(src_len + c.write, median(t_copy)));
    Row {
        name: c.name.clone(),
        threads,
        op,
        op_gbs: gbs(c.read + c.write, op),
        ceil_gbs: gbs(cal_bytes, median(t_cal)),
        warm_gbs: gbs(src_len + c.write, median(t_warm)),
        copy_gbs,
        ratio: pair_ratio * (c.read + c.write) as f64 / cal_bytes as f64,
        calib,
    }
}

fn cases() -> Vec<Case> {
    let mut rng = Rng(0x1234_5678);
    let f = 4usize; // f32
    let mut v = Vec::new();

    // expand_as: NMT encoder memory to beams, and many short rows.
    {
        let (n, w, beams) = (64, 50 * 512, 5);
        let x = LoDTensor::dense(Tensor::from_slice(&data(n * w, &mut rng), &[n, w]).unwrap());
        let y = LoDTensor::from_slice(&vec![0f32; n * beams], &[n * beams, 1], vec![offsets(&vec![beams; n])]).unwrap();
        v.push(case("expand_as 64x25600 x5", n * w * f, n * beams * w * f, Calib::Copy, move || {
            drop(black_box(sequence_expand_as(&x, &y).unwrap()))
        }));
    }
    {
        let (n, w) = (4096, 128);
        let lengths: Vec<usize> = (0..n).map(|_| rng.range(1, 64)).collect();
        let total: usize = lengths.iter().sum();
        let x = LoDTensor::dense(Tensor::from_slice(&data(n * w, &mut rng), &[n, w]).unwrap());
        let y = LoDTensor::from_slice(&vec![0f32; total], &[total, 1], vec![offsets(&lengths)]).unwrap();
        v.push(case("expand_as 4096x128 U[1,64]", n * w * f, total * w * f, Calib::Copy, move || {
            drop(black_box(sequence_expand_as(&x, &y).unwrap()))
        }));
    }

    // sequence_scatter, Paddle style: 50 updates into each row of X[320, 32000].
    {
        let (n, w, per) = (320, 32000, 50);
        let x = LoDTensor::dense(Tensor::from_slice(&data(n * w, &mut rng), &[n, w]).unwrap());
        let ids: Vec<i64> = (0..n * per).map(|_| rng.range(0, w - 1) as i64).collect();
        let ids = LoDTensor::from_slice(&ids, &[n * per, 1], vec![offsets(&vec![per; n])]).unwrap();
        let upd = LoDTensor::from_slice(&data(n * per, &mut rng), &[n * per, 1], vec![offsets(&vec![per; n])]).unwrap();
        let read = n * w * f + n * per * (8 + f);
        v.push(case("scatter 320x32000 50/row", read, n * w * f, Calib::Copy, move || {
            drop(black_box(sequence_scatter(&x, &ids, &upd).unwrap()))
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
        let (n, m, w) = (100_000, 262_144, 128);
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
        let read = n * w * f + m * w * f + m * 8;
        v.push(case("scatter_add 262144x128 into 100000", read, n * w * f, calib, move || {
            drop(black_box(scatter_rows(&x, &index_t, &upd, ScatterMode::Add).unwrap()))
        }));
    }

    // TensorArray unpack (lod_tensor_to_array) and pack (array_to_lod_tensor). Calibration: the
    // same rows gathered by a plain loop, the ranges derived here from the lengths alone.
    for (n, lo, hi, w) in [(64, 10, 100, 512), (32, 200, 1500, 80), (32, 200, 1500, 512)] {
        let lengths: Vec<usize> = (0..n).map(|_| rng.range(lo, hi)).collect();
        let x = sequences(&lengths, w, &mut rng);
        let bytes = x.tensor().nbytes();
        let table = RankTable::from_lod_tensor(&x, 0).unwrap();
        let array = lod_tensor_to_array(&x, &table).unwrap();
        // Rank order: longest first, ties by index; step t holds row t of each sequence alive.
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(lengths[i]));
        let o = offsets(&lengths);
        let steps = lengths.iter().copied().max().unwrap_or(0);
        let (mut unpack_rows, mut step_start) = (vec![], vec![]);
        for t in 0..steps {
            step_start.push(unpack_rows.len());
            unpack_rows.extend(order.iter().filter(|&&i| lengths[i] > t).map(|&i| o[i] + t..o[i] + t + 1));
        }
        let mut rank = vec![0; n];
        for (k, &i) in order.iter().enumerate() {
            rank[i] = k;
        }
        let pack_rows: Vec<Range<usize>> = (0..n)
            .flat_map(|i| (0..lengths[i]).map(move |t| (i, t)))
            .map(|(i, t)| step_start[t] + rank[i]..step_start[t] + rank[i] + 1)
            .collect();
        let source = Rc::new(x.tensor().bytes().unwrap().to_vec());
        let unpack_cal = Calib::Gather { source: source.clone(), row_bytes: w * f, ranges: Rc::new(unpack_rows) };
        let pack_cal = Calib::Gather { source, row_bytes: w * f, ranges: Rc::new(pack_rows) };
        let t2 = table.clone();
        v.push(case(format!("unpack {n} U[{lo},{hi}] w{w}"), bytes, bytes, unpack_cal, move || {
            drop(black_box(lod_tensor_to_array(&x, &table).unwrap()))
        }));
        v.push(case(format!("pack {n} U[{lo},{hi}] w{w}"), bytes, bytes, pack_cal, move || {
            drop(black_box(array_to_lod_tensor(&array, &t2).unwrap()))
        }));
    }

    // pad / unpad.
    for (n, lo, hi, padded, w) in [(128, 0, 127, -1i64, 512), (4096, 1, 128, 256, 64)] {
        let lengths: Vec<usize> = (0..n).map(|_| rng.range(lo, hi)).collect();
        let x = sequences(&lengths, w, &mut rng);
        let pad = LoDTensor::dense(Tensor::from_slice(&[0f32], &[1]).unwrap());
        let (padded_t, length) = sequence_pad(&x, &pad, padded).unwrap();
        let l = padded_t.dims().as_slice()[1];
        let bytes = x.tensor().nbytes();
        let label = if padded < 0 { "max".to_string() } else { padded.to_string() };
        v.push(case(
            format!("pad {n} U[{lo},{hi}] to {label} w{w}"),
            bytes,
            n * l * w * f + n * 8,
            Calib::Copy,
            move || drop(black_box(sequence_pad(&x, &pad, padded).unwrap())),
        ));
        v.push(case(format!("unpad {n} U[{lo},{hi}] from {l} w{w}"), bytes + n * 8, bytes, Calib::Copy, move || {
            drop(black_box(sequence_unpad(&padded_t, &length).unwrap()))
        }));
    }

    // sequence_pool.
    for (n, hi, w) in [(4096, 64, 128), (65536, 32, 16)] {
        let lengths: Vec<usize> = (0..n).map(|_| rng.range(1, hi)).collect();
        let x = std::rc::Rc::new(sequences(&lengths, w, &mut rng));
        let bytes = x.tensor().nbytes();
        for (p, name) in [(PoolType::Sum, "sum"), (PoolType::Average, "mean"), (PoolType::Max, "max")] {
            let x = x.clone();
            // max also writes the int32 index of every output element.
            let write = n * w * f + if p == PoolType::Max { n * w * 4 } else { 0 };
            v.push(case(format!("pool {name} {n} U[1,{hi}] w{w}"), bytes, write, Calib::Sum, move || {
                drop(black_box(sequence_pool(&x, p, 0.0).unwrap()))
            }));
        }
    }
    // The fused beam-search step: batch x beam prefix rows over a vocabulary, mid-decode (two
    // LoD levels, no finished rows). Its ceiling is a read of the logits (sum calibration).
    for (batch, beam, vocab) in [(64usize, 5usize, 32000usize), (8, 4, 128256), (32, 10, 5000)] {
        let p = batch * beam;
        let source: Vec<usize> = (0..=batch).map(|b| b * beam).collect();
        let rows: Vec<usize> = (0..=p).collect();
        let pre_ids: Vec<i64> = (0..p).map(|_| rng.range(2, vocab - 1) as i64).collect();
        let pre_ids = LoDTensor::from_slice(&pre_ids, &[p, 1], vec![source, rows]).unwrap();
        let pre_scores: Vec<f32> = (0..p).map(|_| -(rng.range(0, 1000) as f32) / 100.0).collect();
        let pre_scores = LoDTensor::dense(Tensor::from_slice(&pre_scores, &[p, 1]).unwrap());
        let logits: Vec<f32> = data(p * vocab, &mut rng).iter().map(|v| v * 20.0 - 10.0).collect();
        let log_probs = LoDTensor::dense(Tensor::from_slice(&logits, &[p, vocab]).unwrap());
        let read = p * vocab * f + p * (8 + f);
        let write = batch * beam * (8 + f + 4);
        v.push(case(format!("beam step {batch}x{beam}x{vocab}"), read, write, Calib::Sum, move || {
            drop(black_box(beam_search_fused_step(&pre_ids, &pre_scores, &log_probs, beam, 1).unwrap()))
        }));
    }
    // gather_tree: T = 100 steps, batch 64, beam 5, int64.
    {
        let (t, batch, beam) = (100usize, 64usize, 5usize);
        let n = t * batch * beam;
        let ids: Vec<i64> = (0..n).map(|_| rng.range(0, 31999) as i64).collect();
        let parents: Vec<i64> = (0..n).map(|_| rng.range(0, beam - 1) as i64).collect();
        let ids = LoDTensor::dense(Tensor::from_slice(&ids, &[t, batch, beam]).unwrap());
        let parents = LoDTensor::dense(Tensor::from_slice(&parents, &[t, batch, beam]).unwrap());
        v.push(case("gather_tree T100 b64 k5", 2 * n * 8, n * 8, Calib::Copy, move || {
            drop(black_box(beam_search_gather_tree(&ids, &parents).unwrap()))
        }));
    }
    v
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

fn main() {
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let reps: usize = std::env::var("BENCH_REPS").ok().and_then(|v| v.parse().ok()).unwrap_or(15);
    let threads: Vec<usize> = match std::env::var("BENCH_THREADS").ok().and_then(|v| v.parse().ok()) {
        Some(t) => vec![t],
        None => vec![1, 2],
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("machine: {}, {cores} cores; {reps} timed runs after 2 warm-up runs, medians", cpu_model());
    println!();
    println!("| case | threads | median ms | GB/s | ceiling GB/s | ratio | calibration | copy GB/s | warm copy GB/s |");
    println!("|---|---:|---:|---:|---:|---:|---|---:|---:|");
    let cases: Vec<Case> = cases()
        .into_iter()
        .filter(|c| filter.is_empty() || filter.iter().any(|f| c.name.contains(f.as_str())))
        .collect();
    for &t in &threads {
        set_num_threads(t).unwrap();
        for c in &cases {
            let r = measure(c, t, reps);
            let copy = match (r.calib, r.copy_gbs) {
                ("sum", _) => "-".to_string(),
                (_, Some(g)) => format!("{g:.1} (ratio {:.2})", r.op_gbs / g),
                (_, None) => format!("{:.1}", r.ceil_gbs),
            };
            let warm = if r.calib == "sum" { "-".to_string() } else { format!("{:.1}", r.warm_gbs) };
            println!(
                "| {} | {} | {:.3} | {:.1} | {:.1} | {:.2} | {} | {copy} | {warm} |",
                r.name,
                r.threads,
                r.op.as_secs_f64() * 1e3,
                r.op_gbs,
                r.ceil_gbs,
                r.ratio,
                r.calib,
            );
        }
    }
}
