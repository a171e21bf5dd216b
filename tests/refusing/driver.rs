//! The driver-failure half of [`refuse_each`](super::refuse_each), in the emulator's build: the
//! case run once for each of its driver calls, that call failing (the emulator's
//! `emulated_driver_failures`; allocations are the other half's). Each such call must return
//! LODTENSOR_INTERNAL naming the failed call, or, where the library can step past the failure (a
//! count reset after its result was read), succeed with the outputs of a call with no failure;
//! either way it keeps no memory, and the next call succeeds with those outputs too, so no state
//! of the device's (upload ring, kept-zero counters and slots, kernel modules) was left wrong.
//! The device's cache keeps freed blocks here, as it does by default, so that the calls counted
//! are the export's own, not waits to free blocks. A case of more than [`SPREAD`] calls fails
//! that many of them, spread evenly from the first to the last, unless
//! `LODTENSOR_DRIVER_FAILURES=all` (every call: a run of tens of minutes).
//! Without the emulator every item here does nothing.

use super::*;
use std::collections::hash_map::DefaultHasher;
use std::hash::Hasher;

/// The most driver calls of a case made to fail, unless `LODTENSOR_DRIVER_FAILURES=all`.
const SPREAD: usize = 12;

/// The index of the driver call that fails during the armed export; `usize::MAX` fails none.
static FAIL_AT: AtomicUsize = AtomicUsize::new(usize::MAX);
/// The driver calls the last armed export made, and the one that failed.
static COUNTED: Mutex<(usize, Option<String>)> = Mutex::new((0, None));
/// Whether the cases' outputs are noted (as [`DIGESTS`]): during this half only.
static NOTING: AtomicBool = AtomicBool::new(false);
/// A digest of each output of the calls since `NOTING` was last set, in order.
static DIGESTS: Mutex<Vec<u64>> = Mutex::new(Vec::new());

#[cfg(feature = "cuda-emulator")]
use lodtensor::backend::cuda::emulated_driver_failures as failures;

/// Starts counting this thread's driver calls (for [`armed`](super::armed)).
pub fn arm() {
    #[cfg(feature = "cuda-emulator")]
    failures::arm(Some(FAIL_AT.load(SeqCst)).filter(|&k| k != usize::MAX));
}

/// Stops counting, keeping the count.
pub fn disarm() {
    #[cfg(feature = "cuda-emulator")]
    {
        let counted = failures::disarm();
        *COUNTED.lock().unwrap() = (counted.calls, counted.failed);
    }
}

/// Notes output `o` (a live handle, or NULL: nothing) while this half runs: a digest of its
/// record in Paddle's format (dtype, dims, LoD and elements), read from wherever it lies.
pub fn note_output(o: *const lodtensor_t) {
    if o.is_null() || !NOTING.load(SeqCst) {
        return;
    }
    let mut len = 0;
    // SAFETY: a live handle; a buffer of the length asked for.
    let record = unsafe {
        assert_eq!(lodtensor_serialize(o, null_mut(), 0, &mut len), OK, "{}", last_error());
        let mut record = vec![0u8; len];
        assert_eq!(lodtensor_serialize(o, record.as_mut_ptr().cast(), len, &mut len), OK, "{}", last_error());
        record
    };
    let mut h = DefaultHasher::new();
    h.write(&record);
    DIGESTS.lock().unwrap().push(h.finish());
}

/// Notes each element of array `out` (a live array, or NULL: nothing) as [`note_output`] does.
pub fn note_array(out: *const tensor_array_t) {
    if out.is_null() || !NOTING.load(SeqCst) {
        return;
    }
    for i in 0..array_size(out) {
        let mut item = null_mut();
        // SAFETY: a live array and an index below its size.
        assert_eq!(unsafe { tensor_array_read(out, i, false, &mut item) }, OK, "{}", last_error());
        note_output(item);
        // SAFETY: the handle just made.
        unsafe { lodtensor_destroy(item) };
    }
}

/// What [`run`] saw of a case.
struct Run {
    status: lodtensor_status_t,
    /// The digests of its outputs.
    outputs: Vec<u64>,
    /// The driver calls it made.
    calls: usize,
    /// The name of the call that failed (none if it made fewer calls than the index chosen).
    failed: Option<String>,
}

/// Runs `case` with driver call `fail_at` failing (`usize::MAX`: none), noting its outputs.
fn run(fail_at: usize, case: &mut impl FnMut() -> lodtensor_status_t) -> Run {
    DIGESTS.lock().unwrap().clear();
    NOTING.store(true, SeqCst);
    FAIL_AT.store(fail_at, SeqCst);
    let status = case();
    FAIL_AT.store(usize::MAX, SeqCst);
    NOTING.store(false, SeqCst);
    let (calls, failed) = std::mem::take(&mut *COUNTED.lock().unwrap());
    Run { status, outputs: std::mem::take(&mut *DIGESTS.lock().unwrap()), calls, failed }
}

/// The indices of the calls (of `calls`) to fail: every one, or [`SPREAD`] from the first to the
/// last.
fn chosen(calls: usize) -> Vec<usize> {
    if calls <= SPREAD || std::env::var("LODTENSOR_DRIVER_FAILURES").is_ok_and(|v| v == "all") {
        return (0..calls).collect();
    }
    (0..SPREAD).map(|i| i * (calls - 1) / (SPREAD - 1)).collect()
}

/// The half itself (see the module's comment); nothing for a case that makes no driver call.
pub fn fail_each_call(name: &str, case: &mut impl FnMut() -> lodtensor_status_t) {
    if !cfg!(feature = "cuda-emulator") {
        return;
    }
    assert_eq!(lodtensor_cuda_set_cache_limit(0, usize::MAX), OK);
    let reference = run(usize::MAX, case);
    assert_eq!(reference.status, OK, "{name}: {}", last_error());
    let calls = reference.calls;
    if calls == 0 {
        return;
    }
    let (mut failed, mut stepped_past) = (0, Vec::new());
    let chosen = chosen(calls);
    for &k in &chosen {
        let (live, on_device) = (LIVE.load(SeqCst), device_memory());
        let this = run(k, case);
        let what = format!("{name}, driver call {k} of {calls} failed ({:?})", this.failed);
        let same_outputs = this.outputs == reference.outputs;
        drop(this.outputs); // the harness's own, made since `live`
        if this.status == OK {
            assert!(same_outputs, "{what}, the call succeeded: its outputs differ from a call with no failure");
            stepped_past.extend(this.failed);
        } else {
            let message = last_error();
            assert_eq!(this.status, INTERNAL, "{what}: {message}");
            let named = this.failed.as_ref().is_some_and(|call| message.contains(call.as_str()));
            assert!(
                named && message.contains("(injected by the emulator)"),
                "{what}: the message does not name it: {message}"
            );
            failed += 1;
        }
        let now = device_memory();
        assert!(now.map(|m| m.0) <= on_device.map(|m| m.0), "{what}: device memory in use {now:?}, was {on_device:?}");
        // The emulated device's memory is this crate's: large blocks made since are the device's
        // cache's (a block the failed call took where the call before reused one) or nothing.
        let held = |m: Option<(usize, usize)>| m.map_or(0, |(in_use, kept)| in_use + kept) as isize;
        let leaked = LIVE.load(SeqCst).wrapping_sub(live) as isize - (held(now) - held(on_device));
        assert!(leaked <= 0, "{what}: {leaked} bytes of large blocks kept");
        let next = run(usize::MAX, case);
        assert_eq!(next.status, OK, "{what}, the next call failed: {}", last_error());
        assert!(next.outputs == reference.outputs, "{what}: the next call's outputs differ from those before");
    }
    assert!(failed > 0, "{name}: no failed driver call of {calls} made the call fail");
    let _ = writeln!(
        std::io::stderr(),
        "driver failure: {name}: failing {} of {calls} driver calls in turn; stepped past {stepped_past:?}",
        chosen.len()
    );
}
