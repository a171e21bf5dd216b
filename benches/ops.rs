//! The operator benchmark: every hot operator against a calibration kernel of the same
//! size, measured in the same process and interleaved with it (op, calibration, op, ...) so both
//! see the same noise from other work on the machine. Not part of `cargo test` or CI.
//!
//!   cargo bench --bench ops                 # every case, 1 and 2 threads, markdown table
//!   cargo bench --bench ops -- pool         # only cases whose name contains "pool"
//!   BENCH_REPS=3 BENCH_THREADS=1 ...        # fewer repetitions / one thread count (profiling)
//!   BENCH_SMALL=1 ...                       # every case 16x smaller (a quick end-to-end run)
//!
//! The cases and their data are in benches/common (shared with the GPU benchmark, benches/gpu.rs).
//!
//! Each case declares the minimum bytes the operator must move: `read` (every input byte it
//! needs, once) and `write` (every output byte, once). Its GB/s is `(read + write) / median time`.
//! The calibration is the plainest kernel with the same traffic, at the best this machine does:
//! the kernels that write memory (copy, copy + fill, row gather) run once with plain stores and
//! once with streaming stores each time, and the way with the smaller median counts, for every run
//! (streaming stores skip reading the destination into the cache, which the library's large
//! outputs use too; glibc's `memcpy` streams only far larger copies). The table names the way.
//! What they read is in the library's allocations, as the ops' inputs are (huge pages for large
//! blocks), written before the first run. The host block cache's bound
//! is raised to 1 GiB, so that from the second run on neither an op's outputs nor its
//! calibration's buffer (the op's output bytes in one block, up to a size class larger) fault in
//! fresh pages.
//! - `copy`: writes `write` bytes into a new buffer, allocated for each run and freed after it
//!   exactly as an op's output is (`Allocation::uninit`, the library's allocator), from a source
//!   of `min(read, write)` bytes, tiled when the output is larger (expand, whose source rows are
//!   each written several times): GB/s = `(source + write) / time`. So the ratio measures the
//!   kernel, not the allocator.
//! - `copy + fill` (pad): the same new buffer, the `read` bytes copied into its front once and the
//!   rest zero-filled: each input byte read once and each output byte written once, which a tiled
//!   copy overstates for a source larger than the cache (it reads the source once per tile).
//!   GB/s = `(read + write) / time`.
//! - `sum`: a read-only f32 sum over `read` bytes (pooling, and the fused beam-search step, whose
//!   ceiling is one read of the logits): GB/s = `read / time`.
//! - `row gather` (unpack/pack): the op's own rows, gathered in its order by a plain loop into a
//!   new buffer (ranges derived in this file from the lengths): GB/s = `(read + write) / time`.
//!   A time step of every sequence is short rows from many places, slower than one stream; the
//!   plain copy of the same size and the op's ratio to it are printed as well ("copy GB/s").
//! - `element gather` (gather_tree): `out[i] = ids[index[i]]` over 8-byte elements, with the
//!   positions the op ends up reading precomputed in this file: the op's reads of the ids, with a
//!   position read in place of each parent. GB/s = `(read + write) / time`; the copy is printed
//!   as well.
//! - `plain loop` (row scatter-add): the sequential loop the op must equal, credited with the op's
//!   bytes; the copy's GB/s and the op's ratio to it are printed as well (see the case).
//!
//! Every timed run, of an op or of a calibration, starts after a read of 64 MiB (twice the L3 of
//! the machine measured), so that each starts from the same clean caches: none pays for the dirty
//! lines of the run before it, and none finds its inputs in the cache because the run before read
//! them. Small cases are therefore measured with their inputs in memory, not in the cache.
//!
//! The ratio is op GB/s / calibration GB/s, taken per pair of adjacent runs (op, then its
//! calibration) and then the median over pairs. The same copy into a buffer reused across runs ("warm
//! copy") is printed too, for the cost of fresh pages.

mod common;

use common::{cases, Calib, Case};
use lodtensor::backend::cpu::pool::{pool, set_num_threads};
use lodtensor::backend::cpu::{has_avx2, has_avx512};
use lodtensor::{Allocation, Tensor};
use rayon::prelude::*;
use std::alloc::{alloc, dealloc, Layout};
use std::hint::black_box;
use std::ops::Range;
use std::time::{Duration, Instant};

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

/// Runs `write(start, part)` over `threads` consecutive parts of `dst` (`start`: the part's offset
/// in `dst`), one task each.
fn in_parts(dst: &mut [u8], threads: usize, write: impl Fn(usize, &mut [u8]) + Sync) {
    let part = dst.len().div_ceil(threads).max(1);
    if threads == 1 {
        write(0, dst);
    } else {
        pool().unwrap().install(|| dst.par_chunks_mut(part).enumerate().for_each(|(k, d)| write(k * part, d)));
    }
}

/// How a calibration stores: plain stores, or streaming (non-temporal) stores, which skip reading
/// the destination lines into the cache first. Which one is faster depends on the sizes; each
/// calibration runs both and counts the faster (see `time_fresh_best`).
#[derive(Clone, Copy)]
enum Stores {
    Plain,
    Streaming,
}

/// Writes `src` (`None`: zeros) to `dst`, of the same length.
fn put(dst: &mut [u8], src: Option<&[u8]>, stores: Stores) {
    #[cfg(target_arch = "x86_64")]
    if let Stores::Streaming = stores {
        use std::arch::x86_64::{_mm_loadu_si128, _mm_setzero_si128, _mm_sfence, _mm_stream_si128};
        // A plain head up to 16-byte alignment and a plain tail; the body in 64-byte steps.
        let head = dst.as_ptr().align_offset(16).min(dst.len());
        let body = (dst.len() - head) / 64 * 64;
        let (first, rest) = dst.split_at_mut(head);
        let (middle, last) = rest.split_at_mut(body);
        put(first, src.map(|s| &s[..head]), Stores::Plain);
        put(last, src.map(|s| &s[head + body..]), Stores::Plain);
        let d = middle.as_mut_ptr().cast::<std::arch::x86_64::__m128i>();
        // SAFETY: SSE2 is part of x86-64; `d` is 16-byte aligned and `middle` holds `body` bytes,
        // as `src` does from `head` on; the fence orders the streaming stores before later work.
        unsafe {
            match src {
                Some(s) => {
                    // Four loads, then their four stores, as the library's streaming copy does: a
                    // load and its store one after another keeps fewer loads in flight.
                    let s = s.as_ptr().add(head).cast::<std::arch::x86_64::__m128i>();
                    for i in (0..body / 16).step_by(4) {
                        let v = [0, 1, 2, 3].map(|k| _mm_loadu_si128(s.add(i + k)));
                        for (k, v) in v.into_iter().enumerate() {
                            _mm_stream_si128(d.add(i + k), v);
                        }
                    }
                }
                None => {
                    for i in 0..body / 16 {
                        _mm_stream_si128(d.add(i), _mm_setzero_si128());
                    }
                }
            }
            _mm_sfence();
        }
        return;
    }
    let _ = stores;
    match src {
        Some(s) => dst.copy_from_slice(s),
        None => dst.fill(0),
    }
}

/// `dst[p] = src[p % src.len()]`, copying whole tiles.
fn tiled_copy(src: &[u8], dst: &mut [u8], threads: usize, stores: Stores) {
    in_parts(dst, threads, |mut p, mut d| {
        while !d.is_empty() {
            let at = p % src.len();
            let n = (src.len() - at).min(d.len());
            let (head, rest) = d.split_at_mut(n);
            put(head, Some(&src[at..at + n]), stores);
            d = rest;
            p += n;
        }
    });
}

/// `dst` = `src`, then zeros: `src` read once and `dst` written once (`src` no longer than `dst`).
fn copy_fill(src: &[u8], dst: &mut [u8], threads: usize, stores: Stores) {
    in_parts(dst, threads, |p, d| {
        let at = p.min(src.len());
        let n = (src.len() - at).min(d.len());
        let (copied, filled) = d.split_at_mut(n);
        put(copied, Some(&src[at..at + n]), stores);
        put(filled, None, stores);
    });
}

/// The row-gather calibration: blocks `(source, rows)` copied in order into `dst`, split in
/// `threads` parts of consecutive blocks.
fn row_gather(
    srcs: &[&[u8]],
    row_bytes: usize,
    ranges: &[(usize, Range<usize>)],
    dst: &mut [u8],
    threads: usize,
    stores: Stores,
) {
    let copy = |ranges: &[(usize, Range<usize>)], dst: &mut [u8]| {
        let mut at = 0;
        for (s, r) in ranges {
            let n = r.len() * row_bytes;
            put(&mut dst[at..at + n], Some(&srcs[*s][r.start * row_bytes..r.end * row_bytes]), stores);
            at += n;
        }
    };
    if threads == 1 {
        copy(ranges, dst);
    } else {
        let half = ranges.len() / 2;
        let split: usize = ranges[..half].iter().map(|(_, r)| r.len() * row_bytes).sum();
        let (a, b) = dst.split_at_mut(split);
        pool().unwrap().install(|| rayon::join(|| copy(&ranges[..half], a), || copy(&ranges[half..], b)));
    }
}

/// The element-gather calibration: `dst[i] = src[index[i]]`, in two halves with 2 threads.
fn element_gather(src: &[u64], index: &[usize], dst: &mut [u64], threads: usize) {
    let gather = |index: &[usize], dst: &mut [u64]| {
        for (d, &i) in dst.iter_mut().zip(index) {
            *d = src[i];
        }
    };
    if threads == 1 {
        gather(index, dst);
    } else {
        let half = index.len() / 2;
        let (a, b) = dst.split_at_mut(half);
        pool().unwrap().install(|| rayon::join(|| gather(&index[..half], a), || gather(&index[half..], b)));
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

/// Read before every timed run, so that each run starts from the same caches: 64 MiB, twice this
/// machine's L3, of lines left clean. Without it a run paid for what the run before left behind:
/// an op timed after the plain-store warm copy wrote back that copy's dirty lines (sequence_pad
/// w512 took 1.6-1.8 ms between the runs of the table, 1.1-1.2 ms alone), while a calibration run
/// after an op that streams its output found none.
static SCRUB: std::sync::OnceLock<Tensor> = std::sync::OnceLock::new();

fn scrub() {
    let t = SCRUB.get_or_init(|| {
        let n = (64 << 20) / 4;
        Tensor::from_slice(&vec![1f32; n], &[n]).unwrap()
    });
    black_box(sum_f32(black_box(t.as_slice::<f32>().unwrap())));
}

/// The time of `f`, run after `scrub`.
fn time(f: impl FnOnce()) -> Duration {
    scrub();
    let t = Instant::now();
    f();
    t.elapsed()
}

/// Times `fill` writing a new allocation of `bytes` bytes (as elements of `T`, a plain number
/// type), made and freed within the timing exactly as an op's output is.
fn time_fresh<T>(bytes: usize, fill: impl FnOnce(&mut [T])) -> Duration {
    time(|| {
        let out = Allocation::uninit(bytes).unwrap();
        // SAFETY: a new 64-byte aligned allocation of `bytes` bytes, held only here; `T` accepts
        // every bit pattern and the fill writes before it reads.
        let dst = unsafe { std::slice::from_raw_parts_mut(out.as_ptr().cast::<T>(), bytes / size_of::<T>()) };
        fill(dst);
        black_box(out.as_ptr());
    })
}

/// `time_fresh` of `write` with streaming stores, then with plain stores: both times.
fn time_fresh_both(bytes: usize, write: impl Fn(&mut [u8], Stores)) -> [Duration; 2] {
    let streaming = time_fresh(bytes, |dst: &mut [u8]| write(dst, Stores::Streaming));
    [streaming, time_fresh(bytes, |dst: &mut [u8]| write(dst, Stores::Plain))]
}

/// Of runs timed both ways (`time_fresh_both`), the times of the way with the smaller median, the
/// best this machine does for that traffic, and its name. The way is chosen once for all runs: the
/// faster of each pair instead would be the smaller of two noisy samples, a ceiling lower than
/// either way's typical time by about half the noise.
fn faster_way(runs: &[[Duration; 2]]) -> (Vec<Duration>, &'static str) {
    let way = |k: usize| runs.iter().map(|r| r[k]).collect::<Vec<_>>();
    let (streaming, plain) = (way(0), way(1));
    if median(streaming.clone()) <= median(plain.clone()) {
        (streaming, "streaming")
    } else {
        (plain, "plain")
    }
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
    calib: String,
}

fn measure(c: &Case, threads: usize, reps: usize) -> Row {
    // The calibrations read tensors of the library's allocator, as the ops do: large blocks on
    // huge pages where the OS allows, which a `Vec` of the same size (4 KiB pages) reads at up to a
    // fifth less bandwidth here. Every byte is written first: untouched pages would all read from
    // the kernel's one zero page, from the cache.
    let src_len = c.read.min(c.write).max(1);
    let src_t = Tensor::from_slice(&(0..src_len).map(|i| i as u8).collect::<Vec<u8>>(), &[src_len]).unwrap();
    let src = src_t.as_slice::<u8>().unwrap();
    let sum_t = Tensor::from_slice(&vec![1f32; c.read / 4], &[c.read / 4]).unwrap();
    let sum_src = sum_t.as_slice::<f32>().unwrap();
    let mut warm = Fresh::new(c.write);
    let (mut t_op, mut t_cal, mut t_warm, mut t_copy) = (vec![], vec![], vec![], vec![]);
    let fresh_copy = || time_fresh_both(c.write, |dst, stores| tiled_copy(src, dst, threads, stores));
    let warmup = 2;
    for rep in 0..warmup + reps {
        let op = time(|| (c.op)().unwrap());
        // Calibrations with one way of storing time it twice over.
        let one_way = |t: Duration| [t, t];
        let cal = match &c.calib {
            Calib::Copy => fresh_copy(),
            Calib::CopyFill => time_fresh_both(c.write, |dst, stores| copy_fill(src, dst, threads, stores)),
            Calib::Sum => one_way(time(|| {
                black_box(read_sum(black_box(sum_src), threads));
            })),
            Calib::Gather { sources, row_bytes, ranges } => {
                let srcs: Vec<&[u8]> = sources.iter().map(|s| s.bytes().unwrap()).collect();
                time_fresh_both(c.write, |dst, stores| row_gather(&srcs, *row_bytes, ranges, dst, threads, stores))
            }
            Calib::ElementGather { source, index } => {
                one_way(time_fresh(c.write, |dst: &mut [u64]| element_gather(source, index, dst, threads)))
            }
            Calib::ScatterLoop { x, updates, index, width } => {
                let x = x.tensor().as_slice::<f32>().unwrap();
                let updates = updates.tensor().as_slice::<f32>().unwrap();
                one_way(time_fresh(c.write, |dst: &mut [f32]| scatter_loop(x, updates, index, *width, dst, threads)))
            }
        };
        // The plain copy is printed next to the calibrations that are not a copy themselves.
        if !matches!(c.calib, Calib::Copy | Calib::Sum) {
            t_copy.push(fresh_copy());
        }
        let wrm = match c.calib {
            Calib::Sum => cal[0],
            _ => time(|| tiled_copy(src, warm.slice(c.write), threads, Stores::Plain)),
        };
        if rep >= warmup {
            t_op.push(op);
            t_cal.push(cal);
            t_warm.push(wrm);
        }
    }
    let gbs = |bytes: usize, t: Duration| bytes as f64 / t.as_secs_f64() / 1e9;
    let (t_cal, stores) = faster_way(&t_cal);
    // The ratio of each op run to the calibration run right after it, then the median of those:
    // both runs of a pair see nearly the same load from other work on the machine, which the
    // ratio of two separate medians does not guarantee when the load comes in bursts.
    let mut pair_ratios: Vec<f64> = t_op.iter().zip(&t_cal).map(|(o, c)| c.as_secs_f64() / o.as_secs_f64()).collect();
    pair_ratios.sort_by(f64::total_cmp);
    let pair_ratio = pair_ratios[pair_ratios.len() / 2];
    let op = median(t_op);
    let (cal_bytes, calib) = match &c.calib {
        Calib::Copy => (src_len + c.write, format!("copy, {stores}")),
        Calib::CopyFill => (src_len + c.write, format!("copy + fill, {stores}")),
        Calib::Sum => (c.read, "sum".to_string()),
        Calib::Gather { .. } => (c.read + c.write, format!("row gather, {stores}")),
        Calib::ElementGather { .. } => (c.read + c.write, "element gather".to_string()),
        Calib::ScatterLoop { .. } => (c.read + c.write, "plain loop".to_string()),
    };
    let copy_gbs = (!t_copy.is_empty()).then(|| gbs(src_len + c.write, median(faster_way(&t_copy).0)));
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

/// The CPU's name, family and model, and its widest vector extension: kernels with AVX-512 forms
/// run differently on CPUs without it, so a figure means little without this line.
fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        info.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
            .map_or("unknown", |l| l.split(':').nth(1).unwrap_or("").trim())
    };
    let simd = if has_avx512() {
        "AVX-512"
    } else if has_avx2() {
        "AVX2"
    } else {
        "no AVX2"
    };
    format!("{} (family {}, model {}), {simd}", field("model name"), field("cpu family"), field("model"))
}

fn main() {
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let reps: usize = std::env::var("BENCH_REPS").ok().and_then(|v| v.parse().ok()).unwrap_or(15);
    let threads: Vec<usize> = match std::env::var("BENCH_THREADS").ok().and_then(|v| v.parse().ok()) {
        Some(t) => vec![t],
        None => vec![1, 2],
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // With the default bound the pad w64 output (exactly 256 MiB) is kept for reuse and its
    // calibration's buffer (256 MiB and the lengths) is not, which then faults in fresh pages on
    // every run.
    lodtensor::memory::set_host_cache_limit(1 << 30);
    println!("machine: {}, {cores} cores; {reps} timed runs after 2 warm-up runs, medians", cpu_model());
    println!();
    println!("| case | threads | median ms | GB/s | ceiling GB/s | ratio | calibration | copy GB/s | warm copy GB/s |");
    println!("|---|---:|---:|---:|---:|---:|---|---:|---:|");
    let small = std::env::var("BENCH_SMALL").is_ok_and(|v| v == "1");
    let cases: Vec<Case> = cases(&|t| t, small)
        .into_iter()
        .filter(|c| filter.is_empty() || filter.iter().any(|f| c.name.contains(f.as_str())))
        .collect();
    for &t in &threads {
        set_num_threads(t).unwrap();
        for c in &cases {
            let r = measure(c, t, reps);
            let copy = match (r.calib.as_str(), r.copy_gbs) {
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
