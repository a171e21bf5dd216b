//! The operator benchmark on a CUDA device: the cases of benches/ops.rs (benches/common), their
//! inputs moved to cuda:0 with `to_place`, each op timed with `synchronize(cuda:0)` before and
//! after it, against a calibration on the same device of the same traffic, interleaved with it
//! (op, calibration, op, ...) so both see the same conditions. Not part of `cargo test` or CI.
//!
//!   cargo bench --features cuda --bench gpu              # every case, markdown table
//!   cargo bench --features cuda --bench gpu -- pool      # only cases whose name contains "pool"
//!   BENCH_REPS=5 BENCH_SMALL=1 ...                       # fewer runs / every case 16x smaller
//!   cargo bench --features cuda --bench gpu -- --load-only  # only the kernels' load time
//!
//! It first loads every kernel file (`cuda_load_kernels`) and prints how long that took: a compile
//! where the disk cache (`LODTENSOR_KERNEL_CACHE`) has no entry yet, a read where it has. Then the
//! time of a copy to the host of a few sizes, each one wait for the device: what an op that reads
//! a count or offsets back pays for it (64 KiB or less through the device's page-locked buffer).
//!
//! It also builds with `cuda-emulator` (numbers meaningless there: an end-to-end check of every
//! case, with BENCH_SMALL=1) and without either feature; with no usable device it prints "no CUDA
//! device: nothing measured" and exits 0.
//!
//! A case's GB/s is `(read + write) / median time`, its minimum traffic as in ops.rs. Calibrations:
//! - copy (every case whose CPU calibration moves bytes: copy, copy + fill, row gather, plain
//!   loop): `to_place` of a device tensor of the output's size onto its own device, a
//!   device-to-device copy into a fresh allocation, as an op's output is: GB/s = `2 x write / time`.
//! - read (the CPU's `sum`: pooling, the beam step, the UTF-8 check): `read_bandwidth_probe` over a
//!   device tensor of the input's size, a read-only sum kernel: GB/s = `read / time`.
//!
//! The ratio is op GB/s / calibration GB/s, taken per pair of adjacent runs, then the median.
//! Times include what the op does on the host (validation, planning, table uploads), as a caller
//! sees it; "returned ms" is the part until the call returned (host work, and any wait for the
//! device inside the call), and the last columns say what one call asked of the device (launches,
//! uploads and their KiB, downloads, waits: `cuda_counters`), so a case far below its ceiling
//! shows whether the host, the waits or the kernels hold it back. An op without a CUDA path in this build is listed with its error, not measured.

mod common;

use common::{cases, Calib, Case};
use lodtensor::backend::cuda::read_bandwidth_probe;
use lodtensor::{
    cuda_counters, cuda_device_count, cuda_load_kernels, synchronize, to_place, CudaCounters, DType, Dim, LoDTensor,
    Place, Tensor,
};
use std::time::{Duration, Instant};

const GPU: Place = Place::Cuda(0);

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// What one call of an op took: its time between two synchronizations of the device, the time until
/// it returned (the host's part, and any wait inside it), and what it asked of the device.
struct Timing {
    total: Duration,
    returned: Duration,
    asked: CudaCounters,
}

/// `f` timed between two synchronizations of the device.
fn timed(f: impl FnOnce() -> lodtensor::Result<()>) -> lodtensor::Result<Timing> {
    synchronize(GPU)?;
    let before = cuda_counters(0)?;
    let t = Instant::now();
    f()?;
    let returned = t.elapsed();
    let asked = cuda_counters(0)?.since(&before);
    synchronize(GPU)?;
    Ok(Timing { total: t.elapsed(), returned, asked })
}

/// A device tensor of `bytes` bytes (u8), zeros.
fn device_bytes(bytes: usize) -> lodtensor::Result<LoDTensor> {
    to_place(&LoDTensor::dense(Tensor::zeros(DType::U8, Dim::new(&[bytes])?)?), GPU)
}

struct Row {
    op_ms: f64,
    returned_ms: f64,
    op_gbs: f64,
    ceil_gbs: f64,
    ratio: f64,
    /// What the last timed call asked of the device.
    asked: CudaCounters,
}

/// The median time of a copy of `bytes` bytes from cuda:0 to the host, over `reps` copies.
fn download_time(bytes: usize, reps: usize) -> lodtensor::Result<Duration> {
    let source = device_bytes(bytes)?;
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        times.push(timed(|| to_place(&source, Place::Cpu).map(drop))?.total.as_secs_f64());
    }
    Ok(Duration::from_secs_f64(median(times)))
}

fn measure(c: &Case, reps: usize) -> lodtensor::Result<Row> {
    let read_probe = matches!(c.calib, Calib::Sum);
    let cal_bytes = if read_probe { c.read } else { 2 * c.write };
    let source = device_bytes(if read_probe { c.read } else { c.write })?;
    let calibrate = || -> lodtensor::Result<()> {
        if read_probe {
            read_bandwidth_probe(source.tensor())
        } else {
            to_place(&source, GPU).map(drop)
        }
    };
    let warmup = 3;
    let (mut t_op, mut t_returned, mut ratios, mut asked) = (vec![], vec![], vec![], CudaCounters::default());
    for rep in 0..warmup + reps {
        let op = timed(|| (c.op)())?;
        let cal = timed(calibrate)?.total.as_secs_f64();
        if rep >= warmup {
            let total = op.total.as_secs_f64();
            t_op.push(total);
            t_returned.push(op.returned.as_secs_f64());
            ratios.push(cal / total * (c.read + c.write) as f64 / cal_bytes as f64);
            asked = op.asked;
        }
    }
    let op = median(t_op);
    let op_gbs = (c.read + c.write) as f64 / op / 1e9;
    let ratio = median(ratios);
    let returned_ms = median(t_returned) * 1e3;
    Ok(Row { op_ms: op * 1e3, returned_ms, op_gbs, ceil_gbs: op_gbs / ratio, ratio, asked })
}

fn main() {
    let count = match cuda_device_count() {
        Ok(n) if n > 0 => n,
        _ => {
            println!("no CUDA device: nothing measured");
            return;
        }
    };
    let started = Instant::now();
    if let Err(e) = cuda_load_kernels(0) {
        println!("loading the kernel files failed: {e}");
        std::process::exit(1);
    }
    println!("kernel files loaded in {:.2} s", started.elapsed().as_secs_f64());
    if std::env::args().any(|a| a == "--load-only") {
        return;
    }
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let reps: usize = std::env::var("BENCH_REPS").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let small = std::env::var("BENCH_SMALL").is_ok_and(|v| v == "1");
    println!(
        "device: cuda:0 of {count}; {reps} timed runs after 3 warm-ups, medians{}; ceiling: a device copy \
         (2 x output bytes), or a device read of the input (pool, beam step, utf8 strings)",
        if small { "; BENCH_SMALL (16x smaller cases)" } else { "" }
    );
    let sizes = [8, 4 << 10, 64 << 10, 1 << 20];
    let downloads: lodtensor::Result<Vec<String>> = sizes
        .iter()
        .map(|&b| download_time(b, 10 * reps).map(|t| format!("{} B {:.1} us", b, t.as_secs_f64() * 1e6)))
        .collect();
    match downloads {
        Ok(d) => println!("copies to the host, one wait each (median of {}): {}", 10 * reps, d.join(", ")),
        Err(e) => println!("copies to the host: not measured: {e}"),
    }
    println!();
    println!(
        "returned ms: the median time until the call returned (its host work, and any wait inside it); launches, \
         uploads (their KiB), downloads, waits: what the last timed call asked of the device"
    );
    println!();
    println!("| case | median ms | returned ms | GB/s | ceiling GB/s | ratio | launches | uploads (KiB) | downloads | waits |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let on = |t: LoDTensor| to_place(&t, GPU).expect("inputs to cuda:0");
    let cases: Vec<Case> = cases(&on, small)
        .into_iter()
        .filter(|c| filter.is_empty() || filter.iter().any(|f| c.name.contains(f.as_str())))
        .collect();
    for c in &cases {
        match measure(c, reps) {
            Ok(r) => {
                let a = r.asked;
                println!(
                    "| {} | {:.3} | {:.3} | {:.1} | {:.1} | {:.2} | {} | {} ({:.1}) | {} | {} |",
                    c.name,
                    r.op_ms,
                    r.returned_ms,
                    r.op_gbs,
                    r.ceil_gbs,
                    r.ratio,
                    a.launches,
                    a.uploads,
                    a.upload_bytes as f64 / 1024.0,
                    a.downloads,
                    a.waits
                )
            }
            Err(e) => println!("| {} | not run: {e} | - | - | - | - | - | - | - | - |", c.name),
        }
    }
}
