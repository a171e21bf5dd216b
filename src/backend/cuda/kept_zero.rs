//! Device memory kept zeroed from one call to the next, so that a kernel that counts into it needs
//! no fill before each call (a fill is one more item on the stream: on a GPU, microseconds of a
//! decoder step that does little else):
//! - counters that the kernels using them set back to zero themselves (the beam steps count each
//!   row's finished chunks, each source's finished rows, the finished blocks; the block that
//!   completes a count resets it, common.cuh's `block_completes`): one block a device, shared by
//!   every such call and grown as needed ([`zeroed_counters`]);
//! - slots for counts of bad input values that the host reads back after the kernels ([`BadCount`]):
//!   a slot found non-zero is set back to zero, on the stream, before it is handed out again.
//!
//! What makes both safe is the order of a device's one stream: a call's kernels run after the
//! previous call's kernels, and the fill that resets a slot, have finished.

use super::device::{zeroed_tensor, Device};
use super::driver::DevicePtr;
use crate::dim::Dim;
use crate::dtype::DType;
use crate::error::Result;
use crate::memory::Allocation;
use crate::tensor::Tensor;
use std::sync::{Arc, Mutex};

/// Bad-value slots a device keeps (slot 0 is the sink of `BadCount::unread`). A call in flight
/// beyond the others' takes a zeroed block of its own.
const SLOTS: usize = 64;

/// A device's memory kept zeroed between calls (see the module's comment).
#[derive(Default)]
pub(crate) struct KeptZero {
    counters: Mutex<Option<Arc<Allocation>>>,
    slots: Mutex<Option<Slots>>,
}

/// The bad-value slots: `SLOTS` u32s, each zero unless taken (or the sink).
struct Slots {
    block: Tensor,
    free: Vec<usize>,
}

impl KeptZero {
    /// The blocks to give back with the device's cache: the counters, and the slots when none is
    /// taken. A call holding the counters keeps them until it has queued its kernel; the next call
    /// makes (and zeroes) a new block.
    pub(crate) fn release(&self) -> (Option<Arc<Allocation>>, Option<Tensor>) {
        let counters = self.counters.lock().expect("kept counters lock").take();
        let mut slots = self.slots.lock().expect("kept slots lock");
        let idle = slots.as_ref().is_some_and(|s| s.free.len() == SLOTS - 1);
        (counters, if idle { slots.take().map(|s| s.block) } else { None })
    }
}

/// At least `len` bytes of zeroed u32 counters on `d`, for a kernel that leaves every counter it
/// touches zero again when it finishes. Every such call on `d` gets the same block (their kernels
/// run one after another on the stream); it is made, with one fill, only when a call needs more
/// than it holds.
pub(crate) fn zeroed_counters(d: &Arc<Device>, len: usize) -> Result<Arc<Allocation>> {
    if let Some(kept) = d.kept.counters.lock().expect("kept counters lock").as_ref().filter(|a| a.len() >= len) {
        return Ok(kept.clone());
    }
    // Made without the lock held: an allocation that finds the device full empties its cache,
    // which takes the lock. A power of two, so that a batch growing a row at a time grows it rarely.
    let block = d.allocation(len.next_power_of_two())?;
    d.set_bytes(block.as_ptr() as DevicePtr, 0, block.len())?;
    let mut kept = d.kept.counters.lock().expect("kept counters lock");
    if kept.as_ref().is_none_or(|k| k.len() < block.len()) {
        *kept = Some(block.clone());
    }
    Ok(block)
}

/// A count of bad input values (out of range) that kernels add to, zero when handed out: the
/// launchers that check an index where it lies report through it. Read it with `unless_counted`;
/// one dropped unread is set back to zero on the stream.
pub(crate) struct BadCount {
    d: Arc<Device>,
    at: Where,
}

/// Where a `BadCount` lives.
enum Where {
    /// Slot `slot` of the device's slots (`block`, held so that it outlives the count).
    Slot { block: Tensor, slot: usize },
    /// The device's sink: never read, never reset.
    Sink(Tensor),
    /// A zeroed block of its own, when every slot is taken.
    Own(Tensor),
    /// Read as zero and given back.
    Returned,
}

impl BadCount {
    /// A zero count on `d`: a free slot, made zero by the call that used it before.
    pub(crate) fn new(d: &Arc<Device>) -> Result<BadCount> {
        let at = match with_slots(d, |s| s.free.pop().map(|slot| (s.block.clone(), slot)))? {
            Some((block, slot)) => Where::Slot { block, slot },
            None => Where::Own(zeroed_tensor(d, DType::I32, Dim::new(&[1])?)?),
        };
        Ok(BadCount { d: d.clone(), at })
    }

    /// A count that no one reads, for a kernel whose inputs the caller has already checked: the
    /// device's sink slot, which may hold anything.
    pub(crate) fn unread(d: &Arc<Device>) -> Result<BadCount> {
        let block = with_slots(d, |s| s.block.clone())?;
        Ok(BadCount { d: d.clone(), at: Where::Sink(block) })
    }

    /// The counter's device address (a u32), for the kernels' arguments.
    pub(crate) fn address(&self) -> u64 {
        match &self.at {
            Where::Slot { block, slot } => block.as_ptr() as u64 + 4 * *slot as u64,
            Where::Sink(block) => block.as_ptr() as u64,
            Where::Own(t) => t.as_ptr() as u64,
            Where::Returned => 0,
        }
    }

    /// `out` when the kernels counted nothing, else `None`; reading the count waits for the device.
    pub(crate) fn unless_counted<T>(mut self, out: T) -> Result<Option<T>> {
        let mut count = [0u8; 4];
        self.d.dtoh(&mut count, self.address() as DevicePtr)?;
        if u32::from_ne_bytes(count) != 0 {
            return Ok(None); // reset by the drop
        }
        // Read as zero: back to the free slots as it is.
        if let Where::Slot { block, slot } = std::mem::replace(&mut self.at, Where::Returned) {
            give_back(&self.d, block, slot);
        }
        Ok(Some(out))
    }
}

impl Drop for BadCount {
    fn drop(&mut self) {
        if let Where::Slot { block, slot } = std::mem::replace(&mut self.at, Where::Returned) {
            // Counted, or not read: zero again before any later call's kernels. If the fill cannot
            // be queued the slot is not given back (a later call takes another, or a block of its
            // own).
            if self.d.set_bytes(block.as_ptr() as DevicePtr + 4 * slot as DevicePtr, 0, 4).is_ok() {
                give_back(&self.d, block, slot);
            }
        }
    }
}

/// `f` of `d`'s slots, made (one allocation, one fill) at their first use.
fn with_slots<T>(d: &Arc<Device>, f: impl FnOnce(&mut Slots) -> T) -> Result<T> {
    if let Some(s) = d.kept.slots.lock().expect("kept slots lock").as_mut() {
        return Ok(f(s));
    }
    // Made without the lock held, as in `zeroed_counters`.
    let block = zeroed_tensor(d, DType::I32, Dim::new(&[SLOTS])?)?;
    let mut slots = d.kept.slots.lock().expect("kept slots lock");
    Ok(f(slots.get_or_insert_with(|| Slots { block, free: (1..SLOTS).collect() })))
}

/// Slot `slot` of `block`, zero at the stream's end, back among `d`'s free slots; not when the
/// device's slots have been given back meanwhile (the slot goes with its block).
fn give_back(d: &Arc<Device>, block: Tensor, slot: usize) {
    if let Ok(mut slots) = d.kept.slots.lock() {
        if let Some(s) = slots.as_mut().filter(|s| s.block.shares_memory_with(&block)) {
            s.free.push(slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::device::{device, devices_for_test, second_device_alone};
    use super::*;

    /// The u32 at device address `at`.
    fn read(d: &Arc<Device>, at: u64) -> u32 {
        let mut bytes = [0u8; 4];
        d.dtoh(&mut bytes, at as DevicePtr).unwrap();
        u32::from_ne_bytes(bytes)
    }

    /// A slot whose reset after a count cannot be queued (the driver's fill fails) is not handed
    /// out again: every count handed out after it is zero.
    #[cfg(feature = "cuda-emulator")]
    #[test]
    fn a_slot_not_reset_is_not_handed_out_again() {
        use super::super::driver::failures;
        if devices_for_test().is_none() {
            return;
        }
        // A device of its own, so that its slots are this test's alone.
        let d = Arc::new(Device::open(0, usize::MAX).unwrap());
        // A count found non-zero: read, then reset, its last driver call. Made three times: to
        // warm up (the first read makes the device's page-locked staging), to count the calls,
        // and failing the last.
        let found = |fail_at| {
            let counted = BadCount::new(&d).unwrap();
            d.set_bytes(counted.address() as DevicePtr, 1, 4).unwrap();
            failures::arm(fail_at);
            assert!(counted.unless_counted(()).unwrap().is_none(), "a count of 0x01010101 read as zero");
            failures::disarm()
        };
        found(None);
        let calls = found(None).calls;
        assert_eq!(found(Some(calls - 1)).failed.as_deref(), Some("memset"));
        let handed: Vec<BadCount> = (0..SLOTS).map(|_| BadCount::new(&d).unwrap()).collect();
        for c in &handed {
            assert_eq!(read(&d, c.address()), 0, "the count handed out at {:#x}", c.address());
        }
    }

    /// Counts in flight at once are each in memory of their own: the device's free slots, then a
    /// zeroed block of their own once those are taken. A count found non-zero is zero again when
    /// it is handed out next; one read as zero goes back as it is.
    #[test]
    fn bad_counts_in_flight_do_not_share_memory() {
        let Some(n) = devices_for_test() else { return };
        // The last device: the fewest other tests use it at the same time.
        let _alone = second_device_alone();
        let d = device(n as u32 - 1).unwrap();
        let counts: Vec<BadCount> = (0..SLOTS + 2).map(|_| BadCount::new(&d).unwrap()).collect();
        let mut addresses: Vec<u64> = counts.iter().map(BadCount::address).collect();
        addresses.sort_unstable();
        addresses.dedup();
        assert_eq!(addresses.len(), SLOTS + 2, "two counts in flight share memory");
        assert!(counts.iter().filter(|c| matches!(c.at, Where::Own(_))).count() >= 3, "more counts than slots");
        for c in &counts {
            assert_eq!(read(&d, c.address()), 0);
        }
        let sink = BadCount::unread(&d).unwrap();
        assert!(!addresses.contains(&sink.address()), "the sink is not a slot");
        // Counted: each slot set to 7, then dropped (reset), or read (found non-zero).
        for (i, c) in counts.into_iter().enumerate() {
            d.htod(c.address() as DevicePtr, &7u32.to_ne_bytes()).unwrap();
            if i % 2 == 0 {
                assert!(c.unless_counted(()).unwrap().is_none());
            }
        }
        for _ in 0..3 {
            let again: Vec<BadCount> = (0..SLOTS).map(|_| BadCount::new(&d).unwrap()).collect();
            for c in &again {
                assert_eq!(read(&d, c.address()), 0, "a count handed out after a call counted into it");
            }
            for c in again {
                assert!(c.unless_counted(()).unwrap().is_some());
            }
        }
    }

    /// `zeroed_counters` hands every call the same zeroed block until one needs more, then a larger
    /// zeroed one, which it keeps; emptying the device's cache lets it go. (No other test of the
    /// library's own asks for counters.)
    #[test]
    fn zeroed_counters_grow_and_stay_zero() {
        let Some(n) = devices_for_test() else { return };
        let _alone = second_device_alone();
        let d = device(n as u32 - 1).unwrap();
        let small = zeroed_counters(&d, 40).unwrap();
        assert!(small.len() >= 40);
        let again = zeroed_counters(&d, 8).unwrap();
        assert!(Arc::ptr_eq(&small, &again), "a call needing less than the block holds gets it");
        let large = zeroed_counters(&d, small.len() + 4).unwrap();
        assert!(large.len() >= small.len() + 4);
        let mut bytes = vec![1u8; large.len()];
        d.dtoh(&mut bytes, large.as_ptr() as DevicePtr).unwrap();
        assert!(bytes.iter().all(|&b| b == 0), "a new block of counters is zero");
        assert!(Arc::ptr_eq(&zeroed_counters(&d, 4).unwrap(), &large), "the larger block is kept");
        d.empty_cache().unwrap();
        let after = zeroed_counters(&d, 4).unwrap();
        assert!(!Arc::ptr_eq(&after, &large), "the cache emptied, the counters go with it");
    }
}
