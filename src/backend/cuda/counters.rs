//! What the library has asked of each CUDA device since the process started: kernel launches,
//! fills, copies each way and their bytes, waits, and allocations. Each is counted once it was
//! queued (or done) without error. Two readings, taken around a call, say what the call cost the
//! device beyond its kernels' own time: how many launches and waits, how many bytes of tables went
//! up, whether the allocator had to ask the driver for memory.

use std::sync::atomic::{AtomicU64, Ordering};

/// A reading of one CUDA device's counters (all zero for a device the library has not used).
/// Counts only grow; [`CudaCounters::since`] gives what happened between two readings. The
/// counters are shared by every thread using the device, so a difference includes what other
/// threads asked of it meanwhile.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CudaCounters {
    /// Kernels launched.
    pub launches: u64,
    /// Fills of device memory with one byte value (for example counters zeroed before a kernel
    /// adds to them).
    pub fills: u64,
    /// Copies from device memory to device memory (of a tensor to the same device).
    pub device_copies: u64,
    /// Copies from host memory to the device: tensors moved there and the tables (LoD offsets,
    /// addresses) that calls upload for their kernels.
    pub uploads: u64,
    /// The bytes of those uploads.
    pub upload_bytes: u64,
    /// Copies from the device to host memory: tensors moved to the host, and what calls read back
    /// (sizes that decide an output's shape, counts of bad input values). Each waits for the
    /// device's queued work.
    pub downloads: u64,
    /// The bytes of those downloads.
    pub download_bytes: u64,
    /// Times a calling thread waited for the device to finish its queued work: every download,
    /// every synchronize, every return of cached blocks to the driver, every copy to the device
    /// of more than 1 MiB from page-locked or managed host memory, and the upload ring's waits
    /// for a lap's copies that had not finished.
    pub waits: u64,
    /// Device blocks handed out, from the cache or new.
    pub allocations: u64,
    /// Of those, blocks the driver was asked for (the cache held none of their size class).
    pub driver_allocations: u64,
}

/// The number of counters: the length of [`CudaCounters::values`].
pub const CUDA_COUNTERS: usize = 10;

impl CudaCounters {
    /// The counters in their fixed order (the C API's `LODTENSOR_CUDA_COUNTER_*` indices): launches,
    /// fills, device copies, uploads, upload bytes, downloads, download bytes, waits, allocations,
    /// driver allocations.
    pub fn values(&self) -> [u64; CUDA_COUNTERS] {
        [
            self.launches,
            self.fills,
            self.device_copies,
            self.uploads,
            self.upload_bytes,
            self.downloads,
            self.download_bytes,
            self.waits,
            self.allocations,
            self.driver_allocations,
        ]
    }

    /// The counters from their values in [`CudaCounters::values`]' order.
    fn from_values(v: [u64; CUDA_COUNTERS]) -> CudaCounters {
        let [launches, fills, device_copies, uploads, upload_bytes, downloads, download_bytes, waits, allocations, driver_allocations] =
            v;
        CudaCounters {
            launches,
            fills,
            device_copies,
            uploads,
            upload_bytes,
            downloads,
            download_bytes,
            waits,
            allocations,
            driver_allocations,
        }
    }

    /// What was counted after `earlier` (a reading of the same device taken before this one).
    pub fn since(&self, earlier: &CudaCounters) -> CudaCounters {
        let (now, then) = (self.values(), earlier.values());
        CudaCounters::from_values(std::array::from_fn(|i| now[i].saturating_sub(then[i])))
    }
}

/// One counter, by its place in [`CudaCounters::values`].
#[cfg_attr(not(any(feature = "cuda", feature = "cuda-emulator")), allow(dead_code))]
#[derive(Clone, Copy)]
pub(crate) enum Counter {
    Launches,
    Fills,
    DeviceCopies,
    Uploads,
    UploadBytes,
    Downloads,
    DownloadBytes,
    Waits,
    Allocations,
    DriverAllocations,
}

/// A device's counters, added to by the device's calls.
#[cfg_attr(not(any(feature = "cuda", feature = "cuda-emulator")), allow(dead_code))]
#[derive(Default)]
pub(crate) struct Counters([AtomicU64; CUDA_COUNTERS]);

#[cfg_attr(not(any(feature = "cuda", feature = "cuda-emulator")), allow(dead_code))]
impl Counters {
    pub(crate) fn add(&self, counter: Counter, n: u64) {
        self.0[counter as usize].fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn read(&self) -> CudaCounters {
        CudaCounters::from_values(std::array::from_fn(|i| self.0[i].load(Ordering::Relaxed)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each counter lands in its own field, in `values`' order, and `since` subtracts field by
    /// field.
    #[test]
    fn counters_keep_their_order() {
        let c = Counters::default();
        let all = [
            Counter::Launches,
            Counter::Fills,
            Counter::DeviceCopies,
            Counter::Uploads,
            Counter::UploadBytes,
            Counter::Downloads,
            Counter::DownloadBytes,
            Counter::Waits,
            Counter::Allocations,
            Counter::DriverAllocations,
        ];
        let before = c.read();
        for (i, counter) in all.into_iter().enumerate() {
            c.add(counter, 10 + i as u64);
        }
        let after = c.read();
        assert_eq!(after.values(), std::array::from_fn(|i| 10 + i as u64));
        assert_eq!(after.launches, 10);
        assert_eq!(after.driver_allocations, 19);
        assert_eq!(after.since(&before), after);
        c.add(Counter::Waits, 5);
        let diff = c.read().since(&after);
        assert_eq!(diff, CudaCounters { waits: 5, ..CudaCounters::default() });
    }
}
