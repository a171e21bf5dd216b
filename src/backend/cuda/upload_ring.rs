//! Copies to a device through a ring of page-locked host memory. A copy from pageable memory goes
//! through the driver's own staging: the call returns only once the driver has copied the bytes,
//! and may first wait for the device's queued work, which keeps the host from running ahead.
//! A copy from page-locked memory is the copy engine's alone, read after the call returns. Each
//! upload of up to [`QUARTER`] bytes (a call's tables: LoD offsets, row starts, addresses) is
//! copied into the next free bytes of the device's ring and queued from there. The ring is used
//! in four quarters; leaving one records an event after its copies, and coming back to it a lap
//! later waits for that event, so no copy reads bytes written over for a later one. Larger
//! uploads go straight from their source (`Device::htod`).

use super::driver::{Context, DevicePtr, Event};
use crate::error::Result;
use std::sync::Mutex;

/// The bytes of a quarter of the ring, and the largest upload that goes through it.
pub(crate) const QUARTER: usize = 1 << 20;
const QUARTERS: usize = 4;
/// Each upload starts at a multiple of this in the ring (whole cache lines for the host's copy).
const ALIGN: usize = 64;

/// A device's ring: made at its first use, kept for the life of the process (like the device's
/// context), and used by one upload at a time.
#[derive(Default)]
pub(crate) struct UploadRing(Mutex<Ring>);

#[derive(Default)]
enum Ring {
    #[default]
    NotYet,
    Ready(Quarters),
    /// The driver would not give page-locked memory or events: uploads go straight from their
    /// source.
    Refused,
}

struct Quarters {
    base: *mut u8,
    /// The offset in the ring of the next free byte, in quarter `quarter`.
    next: usize,
    quarter: usize,
    /// Each quarter's event, recorded after its copies when the ring last left it (`None`
    /// before that).
    fences: [Option<Event>; QUARTERS],
    /// Events made but not yet recorded, one a quarter.
    spare: Vec<Event>,
}

// SAFETY: the ring is host memory used only under the mutex.
unsafe impl Send for Quarters {}

/// What an upload through the ring did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Upload {
    /// Queued from the ring; `waited` when the ring had to wait for a lap's copies first.
    Queued { waited: bool },
    /// Not taken (too large, or no ring): the caller copies from the source.
    NotTaken,
}

impl UploadRing {
    /// Queues a copy of `src` (1 to [`QUARTER`] bytes) to device address `dst` through the ring;
    /// `src` may change as soon as this returns.
    pub(crate) fn upload(&self, ctx: &Context, dst: DevicePtr, src: &[u8]) -> Result<Upload> {
        if src.is_empty() || src.len() > QUARTER {
            return Ok(Upload::NotTaken);
        }
        let mut ring = self.0.lock().expect("upload ring lock");
        if let Ring::NotYet = *ring {
            *ring = Quarters::new(ctx).map_or(Ring::Refused, Ring::Ready);
        }
        let Ring::Ready(quarters) = &mut *ring else {
            return Ok(Upload::NotTaken);
        };
        let (at, waited) = quarters.reserve(ctx, src.len())?;
        // SAFETY: `src.len()` bytes of the ring from `at` (reserve keeps them inside it), which no
        // queued copy reads any more.
        let staged = unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), quarters.base.add(at), src.len());
            std::slice::from_raw_parts(quarters.base.add(at), src.len())
        };
        ctx.htod(dst, staged)?;
        quarters.next = at + src.len();
        Ok(Upload::Queued { waited })
    }
}

impl Quarters {
    fn new(ctx: &Context) -> Option<Quarters> {
        let spare = (0..QUARTERS).map(|_| ctx.event()).collect::<Result<Vec<_>>>().ok()?;
        let base = ctx.malloc_host(QUARTERS * QUARTER).ok()?;
        Some(Quarters { base, next: 0, quarter: 0, fences: Default::default(), spare })
    }

    /// Where `len` (<= QUARTER) bytes go: after the last upload in the current quarter, or at the
    /// start of the next one, whose copies of the last lap are then waited for where they have
    /// not finished (`true`).
    fn reserve(&mut self, ctx: &Context, len: usize) -> Result<(usize, bool)> {
        let at = self.next.next_multiple_of(ALIGN);
        if at + len <= (self.quarter + 1) * QUARTER {
            return Ok((at, false));
        }
        let mut fence = self.fences[self.quarter].take().or_else(|| self.spare.pop()).expect("an event a quarter");
        let recorded = ctx.record(&mut fence);
        self.fences[self.quarter] = Some(fence);
        recorded?;
        // The quarter is entered only once its last lap's copies are done: a failed wait leaves
        // the ring where it was.
        let quarter = (self.quarter + 1) % QUARTERS;
        let mut waited = false;
        if let Some(fence) = &self.fences[quarter] {
            if !ctx.reached(fence)? {
                ctx.wait_for(fence)?;
                waited = true;
            }
        }
        self.quarter = quarter;
        self.next = quarter * QUARTER;
        Ok((self.next, waited))
    }
}

#[cfg(test)]
mod tests {
    use super::super::device::{byte_pattern as pattern, device, devices_for_test};
    use super::*;

    /// Uploads of every size, more than three laps of the ring's bytes with no other work between
    /// them, each from a buffer overwritten right after: on the emulator a copy from page-locked
    /// memory is made only at the device's next operation, so bytes written over before their
    /// copy ran would show.
    #[test]
    fn uploads_arrive_whole_lap_after_lap() {
        if devices_for_test().is_none() {
            return;
        }
        let d = device(0).unwrap();
        let ring = UploadRing::default();
        let sizes = [1usize, 7, 64, 4096, 65 << 10, QUARTER / 3, QUARTER, 100, QUARTER - 1, 300 << 10];
        // Made first: an allocation's poison fill (LODTENSOR_POISON_UNINIT=1) makes the queued
        // copies, and no wait would be needed.
        let blocks: Vec<_> = sizes.iter().cycle().take(60).map(|&len| d.allocation(len).unwrap()).collect();
        let mut sent = Vec::new();
        let mut src = Vec::new();
        let mut total = 0;
        for (i, block) in blocks.into_iter().enumerate() {
            let len = block.len();
            let want = pattern(len, i as u64);
            src.clone_from(&want);
            let upload = ring.upload(&d.ctx, block.as_ptr() as DevicePtr, &src).unwrap();
            assert!(matches!(upload, Upload::Queued { .. }), "upload {i} of {len} bytes: {upload:?}");
            src.fill(0xee);
            total += len;
            sent.push((block, want));
        }
        assert!(total > 3 * QUARTERS * QUARTER, "{total} bytes: fewer than three laps");
        for (i, (block, want)) in sent.iter().enumerate() {
            let mut got = vec![0; want.len()];
            d.dtoh(&mut got, block.as_ptr() as DevicePtr).unwrap();
            assert!(got == *want, "upload {i} of {} bytes", want.len());
        }
        let too_large = ring.upload(&d.ctx, 0, &vec![0; QUARTER + 1]).unwrap();
        assert_eq!(too_large, Upload::NotTaken);
        assert_eq!(ring.upload(&d.ctx, 0, &[]).unwrap(), Upload::NotTaken);
    }

    /// The ring's driver calls failing in turn as it goes round: each upload is made again and
    /// again, failing each of its calls in turn (the copy, and where it leaves a quarter the
    /// event's record, query and wait), until it makes no call that fails. Each failed upload
    /// returns the driver's error and leaves the ring as it was, so that every upload arrives
    /// whole, lap after lap.
    ///
    /// On cuda:1, held alone: another test's work on the same device at once would make the
    /// ring's queued copies, and no wait would be needed (so none could fail).
    #[cfg(feature = "cuda-emulator")]
    #[test]
    fn a_failed_driver_call_leaves_the_ring_as_it_was() {
        use super::super::device::second_device_alone;
        use super::super::driver::failures;
        if devices_for_test().is_none() {
            return;
        }
        let _alone = second_device_alone();
        let d = device(1).unwrap();
        let ring = UploadRing::default();
        let first = d.allocation(1).unwrap();
        ring.upload(&d.ctx, first.as_ptr() as DevicePtr, &[1]).unwrap(); // made
        let sizes = [QUARTER / 3, 4096, QUARTER, 7, QUARTER / 2 + 1];
        // Made first, as in `uploads_arrive_whole_lap_after_lap`.
        let blocks: Vec<_> = sizes.iter().cycle().take(48).map(|&len| d.allocation(len).unwrap()).collect();
        let (mut sent, mut src, mut failed) = (Vec::new(), Vec::new(), std::collections::BTreeSet::new());
        for (i, block) in blocks.into_iter().enumerate() {
            let want = pattern(block.len(), i as u64);
            src.clone_from(&want);
            for k in 0.. {
                failures::arm(Some(k));
                let upload = ring.upload(&d.ctx, block.as_ptr() as DevicePtr, &src);
                match (upload, failures::disarm().failed) {
                    (Err(e), Some(call)) => {
                        assert!(e.to_string().contains(&call), "upload {i}, call {k}: {e}");
                        failed.insert(call);
                    }
                    (Ok(Upload::Queued { .. }), None) => break,
                    (upload, call) => panic!("upload {i}: {upload:?} with call {k} ({call:?}) failed"),
                }
            }
            src.fill(0xee);
            sent.push((block, want));
        }
        let calls = ["copy to device", "event query", "event record", "event wait"];
        assert_eq!(failed.iter().map(String::as_str).collect::<Vec<_>>(), calls, "the calls that failed");
        for (i, (block, want)) in sent.iter().enumerate() {
            let mut got = vec![0; want.len()];
            d.dtoh(&mut got, block.as_ptr() as DevicePtr).unwrap();
            assert!(got == *want, "upload {i} of {} bytes", want.len());
        }
    }

    /// A ring the driver will not make, refusing its events or its page-locked memory: uploads
    /// are left to their callers, from then on.
    #[cfg(feature = "cuda-emulator")]
    #[test]
    fn a_refused_ring_takes_no_upload() {
        use super::super::driver::failures;
        if devices_for_test().is_none() {
            return;
        }
        let d = device(0).unwrap();
        // Calls 0..QUARTERS make the events, the next the memory.
        for refused in [0, QUARTERS - 1, QUARTERS] {
            let ring = UploadRing::default();
            failures::arm(Some(refused));
            assert_eq!(ring.upload(&d.ctx, 0, &[1, 2, 3]).unwrap(), Upload::NotTaken, "call {refused} refused");
            let counted = failures::disarm();
            let what = if refused < QUARTERS { "event creation" } else { "page-locked allocation" };
            assert_eq!((counted.calls, counted.failed.as_deref()), (refused + 1, Some(what)));
            assert_eq!(ring.upload(&d.ctx, 0, &[1, 2, 3]).unwrap(), Upload::NotTaken, "after call {refused} refused");
        }
    }

    /// Eight threads uploading through one ring at once, each reading back what it sent.
    #[test]
    fn threads_uploading_at_once_each_send_their_own_bytes() {
        if devices_for_test().is_none() {
            return;
        }
        let d = device(0).unwrap();
        let ring = UploadRing::default();
        std::thread::scope(|s| {
            for t in 0..8u64 {
                let (d, ring) = (&d, &ring);
                s.spawn(move || {
                    let len = 40_000 + t as usize * 7000;
                    let block = d.allocation(len).unwrap();
                    let mut got = vec![0; len];
                    for i in 0..200 {
                        let want = pattern(len, t * 1000 + i);
                        ring.upload(&d.ctx, block.as_ptr() as DevicePtr, &want).unwrap();
                        d.dtoh(&mut got, block.as_ptr() as DevicePtr).unwrap();
                        assert!(got == want, "thread {t}, upload {i} of {len} bytes");
                    }
                });
            }
        });
    }
}
