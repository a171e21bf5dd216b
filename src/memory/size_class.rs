//! Size classes of the caching allocators (the host block cache and each CUDA device's). A freed
//! block is kept under its class, and a request takes any block of its class, so a loop that asks
//! for the same sizes every call reuses its blocks instead of asking the system. Small sizes round
//! up to a power of two (at least 512 bytes, the CUDA driver's own granularity is coarser anyway);
//! above [`CACHED_MIN`] (4 KiB, the smallest block the host cache keeps) each power of two is
//! split into 8 steps, so a kept block wastes at most 1/8 of its size.

use super::CACHED_MIN;

/// The smallest block handed out.
pub const MIN_BLOCK: usize = 512;
const FINE_ABOVE: usize = CACHED_MIN;

/// The block size that serves a request of `len` bytes (`None` when it overflows).
pub fn size_class(len: usize) -> Option<usize> {
    if len <= MIN_BLOCK {
        return Some(MIN_BLOCK);
    }
    let p = len.checked_next_power_of_two()?;
    if p <= FINE_ABOVE {
        return Some(p);
    }
    let step = p / 16;
    len.checked_add(step - 1).map(|n| n / step * step)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_cover_the_request_and_waste_little() {
        assert_eq!(size_class(0), Some(512));
        assert_eq!(size_class(512), Some(512));
        assert_eq!(size_class(513), Some(1024));
        assert_eq!(size_class(4 << 10), Some(4 << 10));
        assert_eq!(size_class((4 << 10) + 1), Some(4608));
        assert_eq!(size_class(64 << 10), Some(64 << 10));
        assert_eq!(size_class((64 << 10) + 1), Some(72 << 10));
        assert_eq!(size_class(1 << 20), Some(1 << 20));
        assert_eq!(size_class((1 << 20) + 1), Some((1 << 20) + (1 << 17)));
        assert_eq!(size_class(usize::MAX), None);
        for len in (1..5000).map(|i| i * 7919).chain([3 << 20, (5 << 20) + 1, 1 << 30]) {
            let c = size_class(len).unwrap();
            assert!(c >= len && (len <= FINE_ABOVE || c - len <= len / 8), "{len} -> {c}");
            // Requests that share a class are served by any block of it.
            assert_eq!(size_class(c), Some(c));
        }
    }
}
