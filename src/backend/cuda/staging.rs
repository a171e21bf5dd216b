//! Small downloads through a page-locked host buffer of the device's. A copy from the device into
//! pageable memory goes through the driver's own staging and returns only after it, which costs
//! several microseconds more than a copy into page-locked memory; the waits on a device's
//! critical path are all small downloads (a beam step's row offsets, a count of bad indices, a
//! slice's bounds), one a decoder step. Larger downloads (a tensor brought to the host) go
//! straight to their destination: there a copy out of the buffer would cost more than it saves.

use super::driver::{Context, DevicePtr};
use crate::error::Result;
use std::sync::Mutex;

/// The size of each device's buffer, and the largest download that goes through it.
pub(crate) const STAGED_BYTES: usize = 64 << 10;

/// A device's staging buffer: made at its first use, kept for the life of the process (like the
/// device's context), and used by one download at a time.
#[derive(Default)]
pub(crate) struct Staging(Mutex<Buffer>);

#[derive(Default)]
enum Buffer {
    #[default]
    NotYet,
    Pinned(*mut u8),
    /// The driver would not give page-locked memory: downloads go straight to their destination.
    Refused,
}

// SAFETY: the buffer is host memory used only under the mutex.
unsafe impl Send for Buffer {}

impl Staging {
    /// Copies `dst.len()` bytes from device address `src` after the queued work, and waits for it.
    pub(crate) fn download(&self, ctx: &Context, dst: &mut [u8], src: DevicePtr) -> Result<()> {
        if dst.len() > STAGED_BYTES {
            return ctx.dtoh(dst, src);
        }
        let mut buffer = self.0.lock().expect("staging lock");
        if let Buffer::NotYet = *buffer {
            *buffer = ctx.malloc_host(STAGED_BYTES).map_or(Buffer::Refused, Buffer::Pinned);
        }
        let Buffer::Pinned(pinned) = *buffer else {
            return ctx.dtoh(dst, src);
        };
        // SAFETY: `STAGED_BYTES` bytes of host memory that only this download, under the lock,
        // touches.
        let staged = unsafe { std::slice::from_raw_parts_mut(pinned, dst.len()) };
        ctx.dtoh(staged, src)?;
        dst.copy_from_slice(staged);
        Ok(())
    }

    /// Whether the buffer has been made (and the driver gave it).
    #[cfg(test)]
    fn pinned(&self) -> bool {
        matches!(*self.0.lock().unwrap(), Buffer::Pinned(_))
    }
}

#[cfg(test)]
mod tests {
    use super::super::device::{byte_pattern as pattern, device, devices_for_test};
    use super::*;

    #[test]
    fn downloads_of_every_size_arrive_whole() {
        if devices_for_test().is_none() {
            return;
        }
        let d = device(0).unwrap();
        let staging = Staging::default();
        let mut host = Vec::new();
        // Only large downloads so far: the buffer is not made for them.
        for len in [STAGED_BYTES + 1, 3 * STAGED_BYTES + 5] {
            let want = pattern(len, len as u64);
            let block = d.allocation(len).unwrap();
            d.htod(block.as_ptr() as DevicePtr, &want).unwrap();
            host.resize(len, 0);
            staging.download(&d.ctx, &mut host, block.as_ptr() as DevicePtr).unwrap();
            assert!(host == want, "a download of {len} bytes");
        }
        assert!(!staging.pinned(), "the buffer was made for large downloads only");
        // Small ones, each after a larger one, so that a copy of the wrong length shows.
        for len in [STAGED_BYTES, 1, 7, 4096, 5, STAGED_BYTES - 1, 8] {
            let want = pattern(len, len as u64 + 1);
            let block = d.allocation(len).unwrap();
            d.htod(block.as_ptr() as DevicePtr, &want).unwrap();
            host = vec![0xa5; len];
            staging.download(&d.ctx, &mut host, block.as_ptr() as DevicePtr).unwrap();
            assert!(host == want, "a download of {len} bytes");
            assert!(staging.pinned(), "a download of {len} bytes did not go through the buffer");
        }
    }

    /// Eight threads downloading through one buffer at once. What it guards, that a download
    /// keeps the buffer from its copy in to its copy out, shows on a GPU, where the copy in waits
    /// for the device: on the emulator the two copies follow each other within nanoseconds.
    #[test]
    fn threads_downloading_at_once_each_get_their_own_bytes() {
        if devices_for_test().is_none() {
            return;
        }
        let d = device(0).unwrap();
        let staging = Staging::default();
        std::thread::scope(|s| {
            for t in 0..8u64 {
                let (d, staging) = (&d, &staging);
                s.spawn(move || {
                    let len = 4000 + t as usize * 700;
                    let want = pattern(len, t);
                    let block = d.allocation(len).unwrap();
                    d.htod(block.as_ptr() as DevicePtr, &want).unwrap();
                    let mut host = vec![0; len];
                    for i in 0..5000 {
                        staging.download(&d.ctx, &mut host, block.as_ptr() as DevicePtr).unwrap();
                        assert!(host == want, "thread {t}, download {i} of {len} bytes");
                    }
                });
            }
        });
    }
}
