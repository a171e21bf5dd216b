//! CPU kernels. Parallel work runs on the library's own rayon pool ([`pool`]), split over output
//! rows or segments so that each output element is written by exactly one task: results never
//! depend on the thread count. Small inputs stay on the calling thread.

/// Runs `$f::<N>(args)` with `N` the row size when it is `Some` small power of two (the copies of
/// rows then compile to a few loads and stores, not a call to `memcpy` each), else with `N` = 0
/// (sizes read at run time). Defined before the kernel modules, which use it.
macro_rules! by_row_size {
    ($size:expr, $f:ident($($arg:expr),*)) => {
        match $size {
            Some(1) => $f::<1>($($arg),*),
            Some(2) => $f::<2>($($arg),*),
            Some(4) => $f::<4>($($arg),*),
            Some(8) => $f::<8>($($arg),*),
            Some(16) => $f::<16>($($arg),*),
            Some(32) => $f::<32>($($arg),*),
            Some(64) => $f::<64>($($arg),*),
            _ => $f::<0>($($arg),*),
        }
    };
}

pub mod beam_search;
pub mod convert;
pub mod gather_tree;
pub(crate) mod lane_extremes;
pub(crate) mod lane_sums;
pub mod pad;
pub mod pool;
pub mod pooling;
pub mod rows;
pub mod scatter;
pub mod scatter_rows;
pub mod sequence;
pub mod softmax;
pub mod tensor_array;
pub mod topk;
pub(crate) mod transpose;

/// Whether the CPU has AVX2. The library is built for baseline x86-64 (SSE2: 4 lanes of f32,
/// a blend is three instructions); a few hot kernels also exist compiled for AVX2 (8 lanes,
/// `vblendvps`, 4-lane f32-to-f64 conversion), chosen with this at run time.
pub fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether the CPU has AVX-512F, for the kernels whose AVX-512 form is a different algorithm
/// (lane permutes within a 512-bit register), not just wider lanes.
pub fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx512f");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether the CPU has AVX-512F and AVX-512BW (512-bit unpacks of bytes and 16-bit words).
pub fn has_avx512bw() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512bw");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Asks for the lines [`rows::PREFETCH_AHEAD_BYTES`] past those of `values`, where a kernel
/// reading one stream will be a little later, on CPUs where that pays ([`reads_ahead`]). For
/// kernels whose loops over the stream are short (a sequence, a block of a row) and end in a
/// mispredicted branch: on an Intel Xeon the hardware prefetcher fell behind over sequences of
/// tens of rows, and with this, sequence_pool over rows of 1, 4 and 16 float32 columns ran
/// 1.2-1.5x faster (benches/REPORT.md).
#[inline(always)]
pub(crate) fn read_ahead<T>(values: &[T]) {
    if !reads_ahead() {
        return;
    }
    prefetch_lines(
        values.as_ptr().cast::<u8>().wrapping_add(rows::PREFETCH_AHEAD_BYTES),
        std::mem::size_of_val(values),
    );
}

/// Whether [`read_ahead`] asks for lines: on Intel CPUs only. On an AMD EPYC (Zen 4) the same
/// prefetches made the kernels slower, not faster: the fused beam step over 64 x 5 x 32000 took
/// 2.25 ms with them against 1.66 without, sequence_pool over rows of 4 float32 columns 7.7
/// against 6.7 (benches/REPORT.md). Decided once, from the CPU's vendor.
#[inline(always)]
fn reads_ahead() -> bool {
    static INTEL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *INTEL.get_or_init(|| cpu_vendor() == Some(*b"GenuineIntel"))
}

/// The CPU's vendor as CPUID leaf 0 names it ("GenuineIntel", "AuthenticAMD", ...): the 12 bytes
/// of EBX, EDX and ECX. None off x86-64.
fn cpu_vendor() -> Option<[u8; 12]> {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: every x86-64 CPU has CPUID, and leaf 0 always exists. (Safe to call in newer
        // Rust, unsafe in older ones down to the crate's rust-version.)
        #[allow(unused_unsafe)]
        let id = unsafe { std::arch::x86_64::__cpuid(0) };
        let mut vendor = [0u8; 12];
        for (part, reg) in vendor.chunks_exact_mut(4).zip([id.ebx, id.edx, id.ecx]) {
            part.copy_from_slice(&reg.to_le_bytes());
        }
        Some(vendor)
    }
    #[cfg(not(target_arch = "x86_64"))]
    None
}

/// Asks ahead of their use for the cache lines of `start`, `start + 64`, ... below `start +
/// bytes`: all the lines of those bytes when `start` is line-aligned, else all but perhaps the
/// last. A prefetch is a hint: it reads nothing the program sees and never faults, so any range
/// is safe to name. The lines go to the L2 cache, not the L1: the kernels prefetch streams of
/// several KiB ahead, which the L1 cannot hold and whose requests would take the miss buffers
/// that the loads being served need (on Zen 4 an L1 hint made sequence_unpad's gather about
/// 40% slower and scatter_add's about 20%; benches/REPORT.md).
#[inline(always)]
pub(crate) fn prefetch_lines(start: *const u8, bytes: usize) {
    for at in (0..bytes).step_by(64) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: see above; `wrapping_add` makes no claim about the address either.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T2};
            _mm_prefetch::<_MM_HINT_T2>(start.wrapping_add(at).cast::<i8>());
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (start, at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vendor read from CPUID is the one Linux reports, and the read-ahead follows it.
    #[test]
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    fn the_vendor_is_the_one_linux_reports() {
        let info = std::fs::read_to_string("/proc/cpuinfo").expect("/proc/cpuinfo");
        let linux = info
            .lines()
            .find_map(|l| l.strip_prefix("vendor_id"))
            .and_then(|l| l.split(':').nth(1))
            .expect("a vendor_id line")
            .trim();
        let vendor = cpu_vendor().expect("x86-64 has CPUID");
        assert_eq!(std::str::from_utf8(&vendor), Ok(linux));
        assert_eq!(reads_ahead(), linux == "GenuineIntel");
    }
}
