//! Host allocation in a loop: each call allocates `live` outputs of one size, writes them and
//! frees them, as a loop of ops that holds a few outputs at a time does. The median time per call
//! is printed with the host block cache on (the default bound) and off (bound 0, every block
//! given back to the system: glibc's heap or its own mapping), each in a fresh process, since
//! glibc's thresholds adapt to what the process did before. Not part of `cargo test` or CI.
//!
//!   cargo bench --bench alloc

use lodtensor::memory::{set_host_cache_limit, CACHED_MIN, DEFAULT_HOST_CACHE_LIMIT};
use lodtensor::Allocation;
use std::process::Command;
use std::time::Instant;

const CALLS: usize = 301;

/// The median microseconds per call of `live` blocks of `bytes`.
fn per_call(bytes: usize, live: usize) -> f64 {
    let mut times: Vec<f64> = (0..CALLS)
        .map(|_| {
            let start = Instant::now();
            let blocks: Vec<_> = (0..live).map(|_| Allocation::uninit(bytes).unwrap()).collect();
            for b in &blocks {
                // SAFETY: each block holds `bytes` bytes and is held only here.
                unsafe { std::ptr::write_bytes(b.as_ptr(), 1, bytes) };
            }
            drop(blocks);
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[CALLS / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // A child: `--one KIB LIVE LIMIT` measures one configuration and prints its time.
    if args.first().map(String::as_str) == Some("--one") {
        let n: Vec<usize> = args[1..4].iter().map(|a| a.parse().unwrap()).collect();
        set_host_cache_limit(n[2]);
        println!("{}", per_call(n[0] << 10, n[1]));
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let child = |kib: usize, live: usize, limit: usize| -> f64 {
        let out = Command::new(&exe).args(["--one", &kib.to_string(), &live.to_string(), &limit.to_string()]).output();
        String::from_utf8(out.unwrap().stdout).unwrap().trim().parse().unwrap()
    };
    println!("blocks of CACHED_MIN = {} KiB and more are kept; {CALLS} calls, medians\n", CACHED_MIN >> 10);
    println!("| block KiB | live | cache on us | GB/s | cache off us | GB/s |");
    println!("|---:|---:|---:|---:|---:|---:|");
    // (KiB, live): single blocks, a TensorArray's small steps, and outputs held in twos and threes.
    #[rustfmt::skip]
    const CONFIGS: [(usize, usize); 15] = [
        (1, 1), (1, 1500), (4, 1), (4, 64), (8, 1500), (16, 1), (16, 16), (64, 1),
        (64, 3), (256, 1), (256, 2), (512, 2), (900, 2), (2048, 2), (8192, 2),
    ];
    for (kib, live) in CONFIGS {
        let (on, off) = (child(kib, live, DEFAULT_HOST_CACHE_LIMIT), child(kib, live, 0));
        let gbs = |us: f64| (kib << 10) as f64 * live as f64 / us / 1e3;
        println!("| {kib} | {live} | {on:.1} | {:.1} | {off:.1} | {:.1} |", gbs(on), gbs(off));
    }
}
