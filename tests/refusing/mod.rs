//! The harness of the allocation-failure tests (`allocation_failure`, and
//! `cuda_allocation_failure` on the emulated device): this crate's allocator, which refuses the
//! large allocations of an export from a chosen one on, [`refuse_each`], which runs a case once
//! for each large allocation it makes (and, on the emulated device, once for each driver call it
//! makes, that call failing: `driver.rs`), and inputs made through the C API. A test crate that
//! includes this module gets its allocator; `mod common;` must come first.
#![allow(dead_code)]

use lodtensor::capi::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::CStr;
use std::io::Write;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;

pub use lodtensor_status_t::{
    LODTENSOR_INTERNAL as INTERNAL, LODTENSOR_OK as OK, LODTENSOR_OUT_OF_MEMORY as OUT_OF_MEMORY,
};

mod driver;

/// Allocations of at least this many bytes are large: the ones counted and refused. Smaller ones
/// (messages, handles, short lists) always succeed; the inputs below keep the library's own
/// lists of a call (LoD offsets, sequence bounds) under it unless a case is about them.
pub const LARGE: usize = 64 << 10;

/// The system allocator, which refuses large allocations from a chosen one on while a call is
/// armed: memory runs out there and stays out, so a caller's retry (a device allocator gives its
/// kept blocks back and tries again) is refused too.
struct Refusing;

/// Whether large allocations are counted (during the export under test only).
static ARMED: AtomicBool = AtomicBool::new(false);
/// Large allocations asked for while armed, refused or not.
static SEEN: AtomicUsize = AtomicUsize::new(0);
/// The index (in `SEEN` order) of the first large allocation refused; `usize::MAX` refuses none.
static REFUSE_AT: AtomicUsize = AtomicUsize::new(usize::MAX);
/// Bytes of large allocations live now, armed or not.
static LIVE: AtomicUsize = AtomicUsize::new(0);

fn refuse(size: usize) -> bool {
    size >= LARGE && ARMED.load(SeqCst) && SEEN.fetch_add(1, SeqCst) >= REFUSE_AT.load(SeqCst)
}

fn note_alloc(p: *mut u8, size: usize) -> *mut u8 {
    if !p.is_null() && size >= LARGE {
        LIVE.fetch_add(size, SeqCst);
    }
    p
}

fn note_free(size: usize) {
    if size >= LARGE {
        LIVE.fetch_sub(size, SeqCst);
    }
}

// SAFETY: every request goes to `System` unchanged, or fails with a null pointer as the
// interface allows; the counters never touch the memory.
unsafe impl GlobalAlloc for Refusing {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if refuse(layout.size()) {
            return null_mut();
        }
        note_alloc(System.alloc(layout), layout.size())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if refuse(layout.size()) {
            return null_mut();
        }
        note_alloc(System.alloc_zeroed(layout), layout.size())
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note_free(layout.size());
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() && refuse(new_size) {
            return null_mut(); // the old block stays as it was
        }
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            note_free(layout.size());
            note_alloc(p, new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Refusing = Refusing;

/// The tests share the allocator's counters, and a call armed by one would count (and refuse) the
/// allocations of another's setup: each test holds this lock throughout.
static SERIAL: Mutex<()> = Mutex::new(());

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs the export `f` with large allocations counted (and one of them refused, if chosen).
/// Each case calls it around the export alone, so that its own setup and checks are not counted.
pub fn armed<R>(f: impl FnOnce() -> R) -> R {
    ARMED.store(true, SeqCst);
    driver::arm();
    let r = f();
    driver::disarm();
    ARMED.store(false, SeqCst);
    r
}

pub fn last_error() -> String {
    // SAFETY: never NULL; valid until the next failure on this thread.
    unsafe { CStr::from_ptr(lodtensor_last_error_message()) }.to_string_lossy().into_owned()
}

/// Runs `case` (which calls its export inside [`armed`] and returns its status) once to warm up
/// (kernels loaded, a device's kept blocks made, input LoDs uploaded), once to count its large
/// allocations, then once refusing each of them, checking what the module comment of the test
/// says; the case itself checks that a failed call wrote no output and changed no input. With a
/// CUDA device 0, its memory in use must be no more than a call that succeeds leaves. Then, on
/// the emulated device, once for each of its driver calls (up to a spread of them), that call
/// failing ([`driver`]).
pub fn refuse_each(name: &str, mut case: impl FnMut() -> lodtensor_status_t) {
    if crate::common::caches_off_for_guard_pages() {
        return;
    }
    // Freed blocks go back to the allocator at once (the caches would hand them out uncounted
    // and keep them live). Without a device the second call is UNSUPPORTED, which is fine.
    assert_eq!(lodtensor_set_host_cache_limit(0), OK);
    let _ = lodtensor_cuda_set_cache_limit(0, 0);
    large_allocations(name, &mut case);
    let large = large_allocations(name, &mut case);
    assert!(large > 0, "{name} asked for no block of {LARGE} bytes or more: its inputs are too small to test it");
    let _ = writeln!(std::io::stderr(), "allocation failure: {name}: refusing each of {large} large allocations");
    let mut rewarm = false;
    for k in 0..large {
        // With a device, from what a call that succeeds leaves: a refused call that dropped a
        // block the device keeps zeroed between calls is followed by one that makes it again.
        if rewarm {
            large_allocations(name, &mut case);
        }
        let (live, on_device) = (LIVE.load(SeqCst), device_memory());
        SEEN.store(0, SeqCst);
        REFUSE_AT.store(k, SeqCst);
        let status = case();
        REFUSE_AT.store(usize::MAX, SeqCst);
        let message = last_error();
        assert_eq!(status, OUT_OF_MEMORY, "{name}, large allocation {k} of {large} refused: {message}");
        assert!(!message.is_empty(), "{name}, large allocation {k} of {large} refused: no message");
        // No more device memory in use than before: a block the device keeps zeroed between calls
        // may go with a failed call (its contents unknown), to be made again by the next.
        let now = device_memory();
        assert!(
            now.map(|m| m.0) <= on_device.map(|m| m.0),
            "{name}, large allocation {k} of {large} refused: device memory in use {now:?}, was {on_device:?}"
        );
        rewarm = now.map(|m| m.0) < on_device.map(|m| m.0);
        // No large block kept. With a device, fewer may be live than before: a device that runs
        // out gives back the blocks its cache keeps, and the cache's own lists of them.
        let leaked = LIVE.load(SeqCst).wrapping_sub(live) as isize;
        assert!(
            leaked == 0 || (leaked < 0 && on_device.is_some()),
            "{name}, large allocation {k} of {large} refused: {leaked} bytes of large blocks kept"
        );
    }
    // From what a call that succeeds leaves, as in the loop: the last refusal may have dropped a
    // block the device keeps zeroed between calls.
    if rewarm {
        large_allocations(name, &mut case);
    }
    assert_eq!(
        large_allocations(name, &mut case),
        large,
        "{name}: another count of large allocations after the refusals"
    );
    driver::fail_each_call(name, &mut case);
    assert_eq!(lodtensor_set_host_cache_limit(DEFAULT_CACHE), OK);
    let _ = lodtensor_cuda_set_cache_limit(0, usize::MAX);
}

/// The large allocations that `case` (an export called inside [`armed`]) makes, none refused; it
/// must succeed.
pub fn large_allocations(name: &str, case: impl FnOnce() -> lodtensor_status_t) -> usize {
    SEEN.store(0, SeqCst);
    REFUSE_AT.store(usize::MAX, SeqCst);
    assert_eq!(case(), OK, "{name}: {}", last_error());
    SEEN.load(SeqCst)
}

/// The bytes in use on CUDA device 0, and those its cache keeps, where there is one.
fn device_memory() -> Option<(usize, usize)> {
    let (mut in_use, mut kept) = (0, 0);
    // SAFETY: valid out pointers.
    (unsafe { lodtensor_cuda_memory_info(0, &mut in_use, &mut kept) } == OK).then_some((in_use, kept))
}

pub const DEFAULT_CACHE: usize = lodtensor::memory::DEFAULT_HOST_CACHE_LIMIT;

// ---------------------------------------------------------------------------------------------
// Inputs, made through the C API.

pub const F32: lodtensor_dtype_t = lodtensor_dtype_t { code: LODTENSOR_DTYPE_CODE_FLOAT, bits: 32, lanes: 1 };
pub const F64: lodtensor_dtype_t = lodtensor_dtype_t { code: LODTENSOR_DTYPE_CODE_FLOAT, bits: 64, lanes: 1 };
pub const I32: lodtensor_dtype_t = lodtensor_dtype_t { code: LODTENSOR_DTYPE_CODE_INT, bits: 32, lanes: 1 };
pub const I64: lodtensor_dtype_t = lodtensor_dtype_t { code: LODTENSOR_DTYPE_CODE_INT, bits: 64, lanes: 1 };
pub const U8: lodtensor_dtype_t = lodtensor_dtype_t { code: LODTENSOR_DTYPE_CODE_UINT, bits: 8, lanes: 1 };
pub const BOOL: lodtensor_dtype_t = lodtensor_dtype_t { code: LODTENSOR_DTYPE_CODE_BOOL, bits: 8, lanes: 1 };
pub const CPU: lodtensor_place_t = lodtensor_place_t { device_type: LODTENSOR_DEVICE_CPU, device_id: 0 };

/// An owned handle, destroyed on drop.
pub struct T(pub *mut lodtensor_t);

impl Drop for T {
    fn drop(&mut self) {
        // SAFETY: a handle this test made and owns.
        unsafe { lodtensor_destroy(self.0) }
    }
}

impl T {
    pub fn ptr(&self) -> *const lodtensor_t {
        self.0
    }
}

/// A host tensor of `dtype` and `dims` holding `data` (of the dtype's size), with a LoD of the
/// given lengths, top level first (none when empty).
pub fn tensor<E: Copy>(dtype: lodtensor_dtype_t, dims: &[i64], data: &[E], lengths: &[&[usize]]) -> T {
    let sizes: Vec<usize> = lengths.iter().map(|l| l.len()).collect();
    let lod: Vec<usize> = lengths.concat();
    let mut out = null_mut();
    // SAFETY: every buffer is valid for the length passed with it.
    let s = unsafe {
        lodtensor_create(
            dtype,
            dims.as_ptr(),
            dims.len(),
            data.as_ptr().cast(),
            std::mem::size_of_val(data),
            LODTENSOR_LOD_LENGTHS,
            sizes.as_ptr(),
            sizes.len(),
            lod.as_ptr(),
            lod.len(),
            &mut out,
        )
    };
    assert_eq!(s, OK, "input {dims:?}: {}", last_error());
    T(out)
}

/// [`tensor`] on `place`: made on the host and copied there.
pub fn tensor_on<E: Copy>(
    place: lodtensor_place_t,
    dtype: lodtensor_dtype_t,
    dims: &[i64],
    data: &[E],
    lengths: &[&[usize]],
) -> T {
    let t = tensor(dtype, dims, data, lengths);
    if place == CPU {
        return t;
    }
    let mut out = null_mut();
    // SAFETY: a live handle and a valid out pointer.
    assert_eq!(unsafe { lodtensor_to_place(t.ptr(), place, &mut out) }, OK, "{}", last_error());
    T(out)
}

/// `n` values `0, 1, 2, ...` (from 0 again after 999) scaled by `scale`, as f32.
pub fn ramp(n: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|i| (i % 1000) as f32 * scale).collect()
}

/// The batch most cases take: 64 rows of 1024 float32 (256 KiB) in sequences of 16, 0, 32 and
/// 16 rows (an empty one among them).
pub const LENGTHS: [usize; 4] = [16, 0, 32, 16];
pub const ROWS: usize = 64;
pub const WIDTH: usize = 1024;

pub fn batch() -> T {
    tensor(F32, &[ROWS as i64, WIDTH as i64], &ramp(ROWS * WIDTH, 0.001), &[&LENGTHS])
}

/// The elements of a host tensor, as bytes.
pub fn bytes(t: *const lodtensor_t) -> Vec<u8> {
    let (mut data, mut len) = (null(), 0);
    // SAFETY: a live host handle; its data is `len` bytes.
    unsafe {
        assert_eq!(lodtensor_data(t, &mut data), OK);
        assert_eq!(lodtensor_nbytes(t, &mut len), OK);
        if len == 0 {
            return vec![];
        }
        std::slice::from_raw_parts(data.cast::<u8>(), len).to_vec()
    }
}

/// The default decoder options with a vocabulary of `vocab_size`, beams of 4, at most
/// `max_length` steps and 2 sentences a source.
pub fn decoder_options(vocab_size: usize, max_length: usize) -> beam_search_decoder_options_t {
    let mut options = std::mem::MaybeUninit::uninit();
    // SAFETY: `options` is written by init before it is read.
    let options = unsafe {
        assert_eq!(beam_search_decoder_options_init(options.as_mut_ptr()), OK);
        options.assume_init()
    };
    beam_search_decoder_options_t { vocab_size, beam_size: 4, max_length, num_hypotheses: 2, ..options }
}

/// A decoder of `options`, for the caller to destroy.
pub fn decoder(options: &beam_search_decoder_options_t) -> *mut beam_search_decoder_t {
    let mut decoder = null_mut();
    // SAFETY: valid options and out pointer.
    assert_eq!(unsafe { beam_search_decoder_create(options, &mut decoder) }, OK, "{}", last_error());
    decoder
}

/// A handle over the `rows x cols` float32s at `data` on `place`, which stay the caller's (no
/// release): the log-probs a decoder's step hands back without asking for a block.
///
/// # Safety
/// `data` holds that many floats on `place` while the handle lives.
pub unsafe fn f32_rows_over(
    place: lodtensor_place_t,
    data: *mut std::ffi::c_void,
    rows: usize,
    cols: usize,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    let dims = [rows as i64, cols as i64];
    let lod_kind = LODTENSOR_LOD_OFFSETS;
    lodtensor_from_buffer(
        place,
        F32,
        dims.as_ptr(),
        2,
        data,
        rows * cols * 4,
        lod_kind,
        null(),
        0,
        null(),
        0,
        None,
        null_mut(),
        out,
    )
}

/// Arrow record batches of `columns` (handles on one place; `what` in the case's name): lent as one
/// (the device forms with `device`, which also take host tensors, else the host forms; the
/// `_encoded` forms with `encodings`, one a column), then taken back, each whole or not at all; a
/// refused export writes neither struct, a refused import takes nothing.
pub fn record_batch_cases(columns: &[*const lodtensor_t], encodings: Option<&[i32]>, device: bool, what: &str) {
    use lodtensor::interop::arrow::{ArrowArray, ArrowDeviceArray, ArrowSchema};
    use std::mem::MaybeUninit;
    // Made before the calls are armed, as every list of the case's own.
    let names = vec![c"x".as_ptr(); columns.len()];
    let release = |schema: *mut ArrowSchema, array: *mut ArrowArray| unsafe {
        ((*schema).release.expect("the schema is the caller's"))(schema);
        if let Some(r) = (*array).release {
            r(array);
        }
    };
    refuse_each(&format!("lodtensor_to_arrow_record_batch{} ({what})", form(device, encodings)), || unsafe {
        let mut schema = MaybeUninit::<ArrowSchema>::zeroed();
        let mut array = MaybeUninit::<ArrowDeviceArray>::zeroed();
        let s =
            armed(|| lend_record_batch(columns, &names, encodings, device, schema.as_mut_ptr(), array.as_mut_ptr()));
        if s == OK {
            release(schema.as_mut_ptr(), &raw mut (*array.as_mut_ptr()).array);
        } else {
            assert!((*schema.as_ptr()).release.is_none(), "a refused export wrote the schema");
            assert!((*array.as_ptr()).array.release.is_none(), "a refused export wrote the array");
        }
        s
    });
    record_batch_import_cases(columns, encodings, device, what);
}

/// The name of the record batch calls' form: `_device`, `_encoded`, both or neither.
fn form(device: bool, encodings: Option<&[i32]>) -> &'static str {
    match (device, encodings.is_some()) {
        (false, false) => "",
        (true, false) => "_device",
        (false, true) => "_encoded",
        (true, true) => "_device_encoded",
    }
}

/// `columns` lent as [`record_batch_cases`] lends them, named `names`, into `schema` and `array`.
///
/// # Safety
/// Live handles, a name a column, and structs for the call to fill.
unsafe fn lend_record_batch(
    columns: &[*const lodtensor_t],
    names: &[*const std::ffi::c_char],
    encodings: Option<&[i32]>,
    device: bool,
    schema: *mut lodtensor::interop::arrow::ArrowSchema,
    array: *mut lodtensor::interop::arrow::ArrowDeviceArray,
) -> lodtensor_status_t {
    let (n, names, plain) = (columns.len(), names.as_ptr(), (&raw mut (*array).array).cast());
    let columns = columns.as_ptr();
    match (device, encodings) {
        (true, None) => lodtensor_to_arrow_device_record_batch(columns, names, n, schema.cast(), array.cast()),
        (false, None) => lodtensor_to_arrow_record_batch(columns, names, n, schema.cast(), plain),
        (true, Some(e)) => {
            lodtensor_to_arrow_device_record_batch_encoded(columns, names, e.as_ptr(), n, schema.cast(), array.cast())
        }
        (false, Some(e)) => {
            lodtensor_to_arrow_record_batch_encoded(columns, names, e.as_ptr(), n, schema.cast(), plain)
        }
    }
}

/// The import half of [`record_batch_cases`]: `columns` lent (not counted), then taken back
/// whole or not at all, a refused import taking nothing.
pub fn record_batch_import_cases(columns: &[*const lodtensor_t], encodings: Option<&[i32]>, device: bool, what: &str) {
    use lodtensor::interop::arrow::{ArrowDeviceArray, ArrowSchema};
    use std::mem::MaybeUninit;
    let (n, names) = (columns.len(), vec![c"x".as_ptr(); columns.len()]);
    refuse_each(&format!("lodtensor_from_arrow{}_record_batch ({what})", form(device, encodings)), || unsafe {
        let mut schema = MaybeUninit::<ArrowSchema>::zeroed();
        let mut array = MaybeUninit::<ArrowDeviceArray>::zeroed();
        let (schema, array) = (schema.as_mut_ptr(), array.as_mut_ptr());
        assert_eq!(lend_record_batch(columns, &names, encodings, device, schema, array), OK, "{}", last_error());
        let mut out = vec![null_mut(); n];
        let mut count = usize::MAX;
        let s = armed(|| {
            if device {
                lodtensor_from_arrow_device_record_batch(
                    schema.cast(),
                    array.cast(),
                    out.as_mut_ptr(),
                    out.len(),
                    &mut count,
                )
            } else {
                let plain = &raw mut (*array).array;
                lodtensor_from_arrow_record_batch(schema.cast(), plain.cast(), out.as_mut_ptr(), out.len(), &mut count)
            }
        });
        if s == OK {
            assert!((*array).array.release.is_none(), "a taken batch was not moved out");
            assert_eq!(count, n);
        } else {
            assert_eq!(count, usize::MAX, "a refused import wrote its count");
            assert!((*array).array.release.is_some(), "a refused import took the batch");
        }
        ((*schema).release.expect("the schema is the caller's"))(schema);
        if let Some(r) = (*array).array.release {
            r(&raw mut (*array).array);
        }
        outputs(s, &out)
    });
}

/// What a case returns for a call with one tensor output: on success it is destroyed, on failure
/// it must not have been written.
pub fn one(status: lodtensor_status_t, out: *mut lodtensor_t) -> lodtensor_status_t {
    outputs(status, &[out])
}

/// As [`one`], for several outputs (NULL ones: outputs not asked for, or not made).
pub fn outputs(status: lodtensor_status_t, outs: &[*mut lodtensor_t]) -> lodtensor_status_t {
    for &o in outs {
        if status != OK {
            assert!(o.is_null(), "an output was written by a call that failed: {}", last_error());
        }
        driver::note_output(o);
        // SAFETY: a handle the call made (or NULL).
        unsafe { lodtensor_destroy(o) };
    }
    status
}

pub fn table_out(status: lodtensor_status_t, out: *mut rank_table_t) -> lodtensor_status_t {
    if status != OK {
        assert!(out.is_null(), "a table was written by a call that failed");
    }
    // SAFETY: a table the call made (or NULL).
    unsafe { rank_table_destroy(out) };
    status
}

pub fn array_out(status: lodtensor_status_t, out: *mut tensor_array_t) -> lodtensor_status_t {
    if status != OK {
        assert!(out.is_null(), "an array was written by a call that failed");
    }
    driver::note_array(out);
    // SAFETY: an array the call made (or NULL).
    unsafe { tensor_array_destroy(out) };
    status
}

/// A table ranking level 0 of `x`.
pub fn rank_table(x: &T) -> *mut rank_table_t {
    let mut table = null_mut();
    // SAFETY: live handles.
    assert_eq!(unsafe { rank_table_create(x.ptr(), 0, &mut table) }, OK, "{}", last_error());
    table
}

pub fn array_size(a: *const tensor_array_t) -> usize {
    let mut n = 0;
    // SAFETY: a live array.
    assert_eq!(unsafe { tensor_array_size(a, &mut n) }, OK);
    n
}

/// The offsets of LoD level `level` of `t`.
pub fn offsets(t: *const lodtensor_t, level: usize) -> Vec<usize> {
    let (mut p, mut n) = (null(), 0);
    // SAFETY: a live handle; the offsets are borrowed for the copy.
    unsafe {
        assert_eq!(lodtensor_lod_offsets(t, level, &mut p, &mut n), OK);
        std::slice::from_raw_parts(p, n).to_vec()
    }
}

/// Every LoD level of `t`, as offsets.
pub fn lod_of(t: *const lodtensor_t) -> Vec<Vec<usize>> {
    let mut n = 0;
    // SAFETY: a live handle.
    assert_eq!(unsafe { lodtensor_lod_num_levels(t, &mut n) }, OK);
    (0..n).map(|k| offsets(t, k)).collect()
}

/// The beam-search steps and state reordering with inputs on `place` (`suffix` names it): 4096
/// sources of one prefix each, beam 4, so the selection is 16384 items and so are the candidate
/// lists; states of 128 rows of 1024 float32; gather_tree over [16, 64, 64].
pub fn beam_cases(place: lodtensor_place_t, suffix: &str) {
    let sources = 4096;
    let one_each = vec![1usize; sources];
    let pre_ids = tensor_on(place, I64, &[sources as i64], &vec![3i64; sources], &[&one_each, &one_each]);
    let pre_scores = tensor_on(place, F32, &[sources as i64], &vec![-0.5f32; sources], &[]);
    let scores = (0..sources * 8).map(|i| ((i * 37) % 101) as f32 / 101.0 + 0.01).collect::<Vec<_>>();
    let scores = tensor_on(place, F32, &[sources as i64, 8], &scores, &[&one_each, &one_each]);
    // SAFETY (every call below): live handles and valid out pointers.
    refuse_each(&format!("beam_search_step{suffix}"), || unsafe {
        let (mut ids, mut sc, mut parents) = (null_mut(), null_mut(), null_mut());
        let s = armed(|| {
            let (pre_ids, pre_scores) = (pre_ids.ptr(), pre_scores.ptr());
            beam_search_step(pre_ids, pre_scores, null(), scores.ptr(), 0, 4, 1, false, &mut ids, &mut sc, &mut parents)
        });
        outputs(s, &[ids, sc, parents])
    });
    let log_probs = (0..sources * 16).map(|i| -(((i * 13) % 17) as f32) / 4.0).collect::<Vec<_>>();
    let log_probs = tensor_on(place, F32, &[sources as i64, 16], &log_probs, &[]);
    refuse_each(&format!("beam_search_fused_step{suffix}"), || unsafe {
        let (mut ids, mut sc, mut parents) = (null_mut(), null_mut(), null_mut());
        let s = armed(|| {
            let (pre_ids, pre_scores) = (pre_ids.ptr(), pre_scores.ptr());
            beam_search_fused_step(pre_ids, pre_scores, log_probs.ptr(), 4, 1, &mut ids, &mut sc, &mut parents)
        });
        outputs(s, &[ids, sc, parents])
    });
    let state = tensor_on(place, F32, &[128, WIDTH as i64], &ramp(128 * WIDTH, 1.0), &[]);
    let parent = tensor_on(place, I32, &[128], &(0..128i32).map(|i| 127 - i).collect::<Vec<_>>(), &[]);
    refuse_each(&format!("beam_search_gather_state{suffix}"), || unsafe {
        let mut out = null_mut();
        one(armed(|| beam_search_gather_state(state.ptr(), parent.ptr(), &mut out)), out)
    });
    refuse_each(&format!("beam_search_gather_states{suffix}"), || unsafe {
        let states = [state.ptr(), state.ptr()];
        let mut out = [null_mut(); 2];
        outputs(armed(|| beam_search_gather_states(states.as_ptr(), 2, parent.ptr(), out.as_mut_ptr())), &out)
    });
    // Every parent is beam 0.
    let n = 16 * 64 * 64;
    let ids = tensor_on(place, I64, &[16, 64, 64], &(0..n as i64).collect::<Vec<_>>(), &[]);
    let parents = tensor_on(place, I64, &[16, 64, 64], &vec![0i64; n], &[]);
    refuse_each(&format!("beam_search_gather_tree{suffix}"), || unsafe {
        let mut out = null_mut();
        one(armed(|| beam_search_gather_tree(ids.ptr(), parents.ptr(), &mut out)), out)
    });
}

/// Lists with an entry per input tensor, array element, time step, state or beam, with inputs on
/// `place` (`suffix` names it): 16384 rows of 4 float32 unstacked into as many elements and
/// stacked or concatenated back; one sequence of 16384 rows unpacked into as many steps and
/// packed back; 8192 inputs merged and concatenated; 16384 states gathered; gather_tree over
/// [2, 512, 64]; top-k of 16384 rows.
pub fn many_inputs_cases(place: lodtensor_place_t, suffix: &str) {
    let rows = 16384;
    let x = tensor_on(place, F32, &[rows as i64, 4], &ramp(rows * 4, 1.0), &[]);
    // SAFETY (every call below): live handles and valid out pointers.
    refuse_each(&format!("tensor_array_unstack (many elements{suffix})"), || unsafe {
        let mut a = null_mut();
        array_out(armed(|| tensor_array_unstack(x.ptr(), 0, &mut a)), a)
    });
    let mut a = null_mut();
    assert_eq!(unsafe { tensor_array_unstack(x.ptr(), 0, &mut a) }, OK);
    for use_stack in [false, true] {
        refuse_each(&format!("tensor_array_to_tensor (stack {use_stack}, many elements{suffix})"), || unsafe {
            let mut out = null_mut();
            one(armed(|| tensor_array_to_tensor(a, 0, use_stack, &mut out, null_mut(), 0)), out)
        });
    }
    let long = tensor_on(place, F32, &[rows as i64, 4], &ramp(rows * 4, 0.5), &[&[rows]]);
    let table = rank_table(&long);
    let mut steps = null_mut();
    assert_eq!(unsafe { tensor_array_unpack(long.ptr(), table, &mut steps) }, OK);
    assert_eq!(array_size(steps), rows);
    refuse_each(&format!("tensor_array_pack (many steps{suffix})"), || unsafe {
        let mut out = null_mut();
        one(armed(|| tensor_array_pack(steps, table, &mut out)), out)
    });
    let mut elements = vec![null_mut(); rows];
    for (i, e) in elements.iter_mut().enumerate() {
        assert_eq!(unsafe { tensor_array_read(a, i, false, e) }, OK);
    }
    let parts: Vec<*const lodtensor_t> = elements.iter().map(|&e| e as *const lodtensor_t).collect();
    let rowed: Vec<T> = (0..8192).map(|_| tensor_on(place, F32, &[1, 4], &[1f32, 2.0, 3.0, 4.0], &[&[1]])).collect();
    let rowed: Vec<*const lodtensor_t> = rowed.iter().map(T::ptr).collect();
    refuse_each(&format!("lodtensor_merge (many inputs{suffix})"), || unsafe {
        let mut out = null_mut();
        one(armed(|| lodtensor_merge(rowed.as_ptr(), rowed.len(), &mut out)), out)
    });
    refuse_each(&format!("sequence_concat (many inputs{suffix})"), || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_concat(rowed.as_ptr(), rowed.len(), &mut out)), out)
    });
    record_batch_cases(&rowed, None, true, &format!("many columns{suffix}"));
    // Text columns, each a string of "é" lent as UTF-8: the check's list of them is the block.
    let texts: Vec<T> = (0..8192).map(|_| tensor_on(place, U8, &[2], "é".as_bytes(), &[&[2]])).collect();
    let texts: Vec<*const lodtensor_t> = texts.iter().map(T::ptr).collect();
    let utf8 = vec![LODTENSOR_ARROW_UTF8; texts.len()];
    record_batch_cases(&texts, Some(&utf8), true, &format!("many text columns{suffix}"));
    let parent = tensor_on(place, I32, &[1], &[0i32], &[]);
    refuse_each(&format!("beam_search_gather_states (many states{suffix})"), || unsafe {
        let mut out = vec![null_mut(); parts.len()];
        let s = armed(|| beam_search_gather_states(parts.as_ptr(), parts.len(), parent.ptr(), out.as_mut_ptr()));
        outputs(s, &out)
    });
    // SAFETY: handles read from the arrays, then the arrays and the table.
    unsafe {
        elements.iter().for_each(|&e| lodtensor_destroy(e));
        tensor_array_destroy(a);
        tensor_array_destroy(steps);
        rank_table_destroy(table);
    }
    // gather_tree over [2, 512, 64]: a parent list of 32768 entries.
    let n = 2 * 512 * 64;
    let ids = tensor_on(place, I64, &[2, 512, 64], &(0..n as i64).collect::<Vec<_>>(), &[]);
    let parents = tensor_on(place, I64, &[2, 512, 64], &(0..n as i64).map(|i| (i * 7) % 64).collect::<Vec<_>>(), &[]);
    refuse_each(&format!("beam_search_gather_tree (many beams{suffix})"), || unsafe {
        let mut out = null_mut();
        one(armed(|| beam_search_gather_tree(ids.ptr(), parents.ptr(), &mut out)), out)
    });
    let wide = tensor_on(place, F32, &[rows as i64, 8], &ramp(rows * 8, 0.3), &[]);
    refuse_each(&format!("lodtensor_topk (many rows{suffix})"), || unsafe {
        let (mut values, mut indices) = (null_mut(), null_mut());
        outputs(armed(|| lodtensor_topk(wide.ptr(), 2, false, &mut values, &mut indices)), &[values, indices])
    });
}
