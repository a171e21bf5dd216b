//! Running out of host memory. Every export whose documented statuses include
//! LODTENSOR_OUT_OF_MEMORY (but lodtensor_cuda_stream, whose allocations are a device's setup) is
//! called with inputs whose results or working lists need large blocks: once to count the large
//! allocations the call makes, then once for each of them with this test's allocator refusing
//! that one and every later one. Each refused call must return LODTENSOR_OUT_OF_MEMORY with a
//! message, write no output (an export that changes an input leaves it as it was), and give back
//! every large block it took; the same call then succeeds again, with as many large allocations.
//!
//! An allocation failure the library does not turn into a status aborts the process (Rust's
//! allocation error handler): the last "allocation failure:" line on stderr names the export.
//!
//! With `LODTENSOR_GUARD_PAGES=1` the library maps every host block itself, past any allocator,
//! so the test says so and stops; the runs without the variable cover it.

mod common;
mod refusing;

use lodtensor::capi::*;
use refusing::*;
use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

/// lodtensor_split of `t` into `n` pieces.
fn split_case(name: &str, t: &T, n: usize) {
    let mut pieces = vec![null_mut(); n];
    refuse_each(name, || unsafe {
        let mut count = usize::MAX;
        let s = armed(|| lodtensor_split(t.ptr(), n, pieces.as_mut_ptr(), n, &mut count));
        if s == OK {
            pieces[..count].iter().for_each(|&p| lodtensor_destroy(p));
        } else {
            assert_eq!(count, usize::MAX, "a failed split wrote its count");
        }
        pieces.iter_mut().for_each(|p| *p = null_mut());
        s
    });
}

// ---------------------------------------------------------------------------------------------
// Tensors and rows.

#[test]
fn tensors_are_made_or_nothing() {
    let _serial = serial();
    let data = ramp(ROWS * WIDTH, 0.5);
    let dims = [ROWS as i64, WIDTH as i64];
    refuse_each("lodtensor_create", || unsafe {
        let (sizes, lod) = ([LENGTHS.len()], LENGTHS);
        let mut out = null_mut();
        let s = armed(|| {
            lodtensor_create(
                F32,
                dims.as_ptr(),
                2,
                data.as_ptr().cast(),
                data.len() * 4,
                LODTENSOR_LOD_LENGTHS,
                sizes.as_ptr(),
                1,
                lod.as_ptr(),
                lod.len(),
                &mut out,
            )
        });
        one(s, out)
    });
    refuse_each("lodtensor_fill", || unsafe {
        let mut out = null_mut();
        one(armed(|| lodtensor_fill(F32, dims.as_ptr(), 2, 1.5, &mut out)), out)
    });
    refuse_each("lodtensor_fill_on", || unsafe {
        let mut out = null_mut();
        one(armed(|| lodtensor_fill_on(CPU, I32, dims.as_ptr(), 2, -3.0, &mut out)), out)
    });
    let x = batch();
    refuse_each("lodtensor_copy", || unsafe {
        let mut out = null_mut();
        one(armed(|| lodtensor_copy(x.ptr(), &mut out)), out)
    });
    refuse_each("lodtensor_to_place", || unsafe {
        let mut out = null_mut();
        one(armed(|| lodtensor_to_place(x.ptr(), CPU, &mut out)), out)
    });
    refuse_each("lodtensor_cast", || unsafe {
        let mut out = null_mut();
        one(armed(|| lodtensor_cast(x.ptr(), F64, &mut out)), out)
    });
    refuse_each("lodtensor_log_softmax", || unsafe {
        let mut out = null_mut();
        one(armed(|| lodtensor_log_softmax(x.ptr(), &mut out)), out)
    });
    refuse_each("lodtensor_topk", || unsafe {
        let (mut values, mut indices) = (null_mut(), null_mut());
        outputs(armed(|| lodtensor_topk(x.ptr(), 512, true, &mut values, &mut indices)), &[values, indices])
    });
    refuse_each("lodtensor_merge", || unsafe {
        let xs = [x.ptr(), x.ptr()];
        let mut out = null_mut();
        one(armed(|| lodtensor_merge(xs.as_ptr(), 2, &mut out)), out)
    });
    let index = tensor(I64, &[128], &(0..128i64).map(|i| (i * 7) % ROWS as i64).collect::<Vec<_>>(), &[]);
    refuse_each("lodtensor_gather_rows", || unsafe {
        let mut out = null_mut();
        one(armed(|| lodtensor_gather_rows(x.ptr(), index.ptr(), &mut out)), out)
    });
    let updates = tensor(F32, &[128, WIDTH as i64], &ramp(128 * WIDTH, 2.0), &[]);
    for (mode, name) in [(LODTENSOR_SCATTER_OVERWRITE, "overwrite"), (LODTENSOR_SCATTER_ADD, "add")] {
        refuse_each(&format!("lodtensor_scatter_rows ({name})"), || unsafe {
            let mut out = null_mut();
            one(armed(|| lodtensor_scatter_rows(x.ptr(), index.ptr(), updates.ptr(), mode, &mut out)), out)
        });
    }
    // Many pieces: the list of them is the large allocation.
    let rows = tensor(I32, &[16384], &vec![7i32; 16384], &[]);
    split_case("lodtensor_split", &rows, 16384);
}

#[test]
fn records_and_arrays_are_read_or_nothing() {
    let _serial = serial();
    let x = batch();
    let mut len = 0;
    // SAFETY: live handle; a NULL buffer asks for the length.
    assert_eq!(unsafe { lodtensor_serialize(x.ptr(), null_mut(), 0, &mut len) }, OK);
    let mut record = vec![0u8; len];
    // SAFETY: `record` holds `len` bytes.
    assert_eq!(unsafe { lodtensor_serialize(x.ptr(), record.as_mut_ptr().cast(), len, &mut len) }, OK);
    refuse_each("lodtensor_deserialize", || unsafe {
        let (mut consumed, mut out) = (usize::MAX, null_mut());
        let s = armed(|| lodtensor_deserialize(record.as_ptr().cast(), record.len(), &mut consumed, &mut out));
        if s != OK {
            assert_eq!(consumed, usize::MAX, "a failed read wrote its length");
        }
        one(s, out)
    });
    // A partial load of half the rows of a record without LoD: the slice's copy is the block.
    let dense = tensor(F32, &[ROWS as i64, WIDTH as i64], &ramp(ROWS * WIDTH, 0.001), &[]);
    // SAFETY: live handle; a NULL buffer asks for the length.
    assert_eq!(unsafe { lodtensor_serialize(dense.ptr(), null_mut(), 0, &mut len) }, OK);
    let mut record = vec![0u8; len];
    // SAFETY: `record` holds `len` bytes.
    assert_eq!(unsafe { lodtensor_serialize(dense.ptr(), record.as_mut_ptr().cast(), len, &mut len) }, OK);
    let half = [ROWS as i64 / 2, WIDTH as i64];
    refuse_each("lodtensor_deserialize_slice", || unsafe {
        let (mut consumed, mut out) = (usize::MAX, null_mut());
        let s = armed(|| {
            let (buf, seek) = (record.as_ptr().cast(), WIDTH as i64);
            lodtensor_deserialize_slice(buf, record.len(), seek, half.as_ptr(), 2, &mut consumed, &mut out)
        });
        if s != OK {
            assert_eq!(consumed, usize::MAX, "a failed read wrote its length");
        }
        one(s, out)
    });

    // Bool elements are unpacked from Arrow's bits into a tensor of their own: 1 MiB of them.
    let n = 1 << 20;
    let flags = tensor(BOOL, &[n as i64], &(0..n).map(|i| (i % 3 == 0) as u8).collect::<Vec<_>>(), &[]);
    from_arrow_case("lodtensor_from_arrow", &flags);

    // A record batch of 8192 one-row columns (through the host forms; the device forms are
    // among the many-inputs cases).
    let columns: Vec<T> = (0..8192).map(|i| tensor(F32, &[1, 2], &[i as f32, 1.0], &[&[1]])).collect();
    let columns: Vec<*const lodtensor_t> = columns.iter().map(T::ptr).collect();
    record_batch_cases(&columns, None, false, "many columns");
    // The same as text columns, each a string of "é" lent as UTF-8, through the host forms.
    let texts: Vec<T> = (0..8192).map(|_| tensor(U8, &[2], "é".as_bytes(), &[&[2]])).collect();
    let texts: Vec<*const lodtensor_t> = texts.iter().map(T::ptr).collect();
    record_batch_cases(&texts, Some(&vec![LODTENSOR_ARROW_UTF8; texts.len()]), false, "many text columns");
}

/// lodtensor_from_arrow of `t` exported with lodtensor_to_arrow: taken (moved out) whole, with
/// `t`'s elements and LoD, or not at all (still the caller's to release).
fn from_arrow_case(name: &str, t: &T) {
    use lodtensor::interop::arrow::{ArrowArray, ArrowSchema};
    refuse_each(name, || unsafe {
        let mut schema = std::mem::MaybeUninit::<ArrowSchema>::uninit();
        let mut array = std::mem::MaybeUninit::<ArrowArray>::uninit();
        let (schema_ptr, array_ptr) = (schema.as_mut_ptr(), array.as_mut_ptr());
        assert_eq!(lodtensor_to_arrow(t.ptr(), schema_ptr.cast(), array_ptr.cast()), OK, "{}", last_error());
        let mut out = null_mut();
        let s = armed(|| lodtensor_from_arrow(schema_ptr.cast(), array_ptr.cast(), &mut out));
        if s == OK {
            assert!((*array_ptr).release.is_none(), "a taken array was not moved out");
            assert_eq!(bytes(out), bytes(t.ptr()));
            assert_eq!(lod_of(out), lod_of(t.ptr()));
        } else {
            ((*array_ptr).release.expect("a failed import took the array"))(array_ptr);
        }
        ((*schema_ptr).release.expect("the schema is the caller's"))(schema_ptr);
        one(s, out)
    });
}

/// A LoD given by the caller, read from a record or taken with an Arrow or DLPack array is
/// copied into the tensor's own lists: 16384 sequences (128 KiB of offsets) over 16384 rows of
/// 4 float32.
#[test]
fn lods_given_by_the_caller_are_taken_or_nothing() {
    let _serial = serial();
    let rows = 16384;
    let dims = [rows as i64, 4];
    let data = ramp(rows * 4, 0.5);
    let lengths: Vec<usize> = (0..rows).map(|i| [2, 0, 1, 1][i % 4]).collect();
    let lod_offsets: Vec<usize> = std::iter::once(0)
        .chain(lengths.iter().scan(0, |a, &n| {
            *a += n;
            Some(*a)
        }))
        .collect();
    for (kind, values, name) in [
        (LODTENSOR_LOD_LENGTHS, &lengths, "lodtensor_create (LoD lengths)"),
        (LODTENSOR_LOD_OFFSETS, &lod_offsets, "lodtensor_create (LoD offsets)"),
    ] {
        refuse_each(name, || unsafe {
            let mut out = null_mut();
            let s = armed(|| {
                lodtensor_create(
                    F32,
                    dims.as_ptr(),
                    2,
                    data.as_ptr().cast(),
                    data.len() * 4,
                    kind,
                    &values.len(),
                    1,
                    values.as_ptr(),
                    values.len(),
                    &mut out,
                )
            });
            if s == OK {
                assert_eq!(offsets(out, 0), lod_offsets);
            }
            one(s, out)
        });
    }
    let x = tensor(F32, &dims, &data, &[&lengths]);
    let other: Vec<usize> = (0..rows).map(|i| [1, 3, 0, 0][i % 4]).collect();
    refuse_each("lodtensor_set_lod", || unsafe {
        let s = armed(|| lodtensor_set_lod(x.0, LODTENSOR_LOD_LENGTHS, &other.len(), 1, other.as_ptr(), other.len()));
        let now = offsets(x.ptr(), 0);
        if s == OK {
            assert_ne!(now, lod_offsets);
            assert_eq!(
                lodtensor_set_lod(
                    x.0,
                    LODTENSOR_LOD_OFFSETS,
                    &lod_offsets.len(),
                    1,
                    lod_offsets.as_ptr(),
                    lod_offsets.len()
                ),
                OK
            );
        } else {
            assert_eq!(now, lod_offsets, "a failed lodtensor_set_lod changed the LoD");
        }
        s
    });

    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    unsafe extern "C" fn release(_data: *mut c_void, _user: *mut c_void) {
        RELEASED.fetch_add(1, SeqCst);
    }
    let mut buffer = data.clone();
    refuse_each("lodtensor_from_buffer", || unsafe {
        let before = RELEASED.load(SeqCst);
        let mut out = null_mut();
        let s = armed(|| {
            lodtensor_from_buffer(
                CPU,
                F32,
                dims.as_ptr(),
                2,
                buffer.as_mut_ptr().cast(),
                buffer.len() * 4,
                LODTENSOR_LOD_LENGTHS,
                &lengths.len(),
                1,
                lengths.as_ptr(),
                lengths.len(),
                Some(release),
                null_mut(),
                &mut out,
            )
        });
        let s = one(s, out);
        // Released once when the handle went, or never for a failed call.
        assert_eq!(RELEASED.load(SeqCst) - before, usize::from(s == OK), "release calls");
        s
    });

    refuse_each("lodtensor_from_dlpack", || unsafe {
        let mut managed = null_mut();
        assert_eq!(lodtensor_to_dlpack(x.ptr(), &mut managed), OK);
        let mut out = null_mut();
        let s = armed(|| {
            lodtensor_from_dlpack(
                managed,
                LODTENSOR_LOD_LENGTHS,
                &lengths.len(),
                1,
                lengths.as_ptr(),
                lengths.len(),
                &mut out,
            )
        });
        if s != OK {
            // Not taken: still the caller's to delete.
            let m = managed.cast::<lodtensor::interop::dlpack::DLManagedTensorVersioned>();
            ((*m).deleter.expect("a deleter"))(m);
        }
        one(s, out)
    });
    refuse_each("lodtensor_from_dlpack_legacy", || unsafe {
        let mut managed = null_mut();
        assert_eq!(lodtensor_to_dlpack_legacy(x.ptr(), &mut managed), OK);
        let mut out = null_mut();
        let s = armed(|| {
            let (sizes, lod) = (&lengths.len(), lengths.as_ptr());
            lodtensor_from_dlpack_legacy(managed, LODTENSOR_LOD_LENGTHS, sizes, 1, lod, lengths.len(), &mut out)
        });
        if s != OK {
            let m = managed.cast::<lodtensor::interop::dlpack::DLManagedTensor>();
            ((*m).deleter.expect("a deleter"))(m);
        }
        one(s, out)
    });

    let mut len = 0;
    // SAFETY: live handle; a NULL buffer asks for the length.
    assert_eq!(unsafe { lodtensor_serialize(x.ptr(), null_mut(), 0, &mut len) }, OK);
    let mut record = vec![0u8; len];
    // SAFETY: `record` holds `len` bytes.
    assert_eq!(unsafe { lodtensor_serialize(x.ptr(), record.as_mut_ptr().cast(), len, &mut len) }, OK);
    refuse_each("lodtensor_deserialize (many sequences)", || unsafe {
        let (mut consumed, mut out) = (usize::MAX, null_mut());
        let s = armed(|| lodtensor_deserialize(record.as_ptr().cast(), record.len(), &mut consumed, &mut out));
        if s == OK {
            assert_eq!(offsets(out, 0), lod_offsets);
        }
        one(s, out)
    });

    from_arrow_case("lodtensor_from_arrow (many sequences)", &x);
}

// ---------------------------------------------------------------------------------------------
// Sequence operators.

#[test]
fn sequence_ops_make_results_or_nothing() {
    let _serial = serial();
    let x = batch();
    let short = tensor(F32, &[LENGTHS.len() as i64, WIDTH as i64], &ramp(LENGTHS.len() * WIDTH, 1.0), &[]);
    let y = tensor(F32, &[ROWS as i64, 1], &vec![0f32; ROWS], &[&LENGTHS]);
    refuse_each("sequence_expand", || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_expand(short.ptr(), y.ptr(), 0, &mut out)), out)
    });
    refuse_each("sequence_expand_as", || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_expand_as(short.ptr(), y.ptr(), &mut out)), out)
    });
    refuse_each("sequence_concat", || unsafe {
        let xs = [x.ptr(), x.ptr(), x.ptr()];
        let mut out = null_mut();
        one(armed(|| sequence_concat(xs.as_ptr(), 3, &mut out)), out)
    });
    refuse_each("sequence_reverse", || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_reverse(x.ptr(), &mut out)), out)
    });
    refuse_each("sequence_reshape", || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_reshape(x.ptr(), 2048, &mut out)), out)
    });
    let offset = tensor(I64, &[4], &[1i64, 0, 2, 0], &[]);
    let length = tensor(I64, &[4], &[15i64, 0, 30, 16], &[]);
    refuse_each("sequence_slice", || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_slice(x.ptr(), offset.ptr(), length.ptr(), &mut out)), out)
    });
    let pad_value = tensor(F32, &[1], &[-1f32], &[]);
    refuse_each("sequence_pad", || unsafe {
        let (mut out, mut lengths) = (null_mut(), null_mut());
        outputs(armed(|| sequence_pad(x.ptr(), pad_value.ptr(), -1, &mut out, &mut lengths)), &[out, lengths])
    });
    let padded = tensor(F32, &[4, 32, WIDTH as i64], &ramp(4 * 32 * WIDTH, 1.0), &[]);
    let kept = tensor(I64, &[4], &[32i64, 0, 17, 32], &[]);
    refuse_each("sequence_unpad", || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_unpad(padded.ptr(), kept.ptr(), &mut out)), out)
    });
    // Pooling makes a row per sequence: wide rows make it large.
    let wide = tensor(F32, &[ROWS as i64, 16384], &ramp(ROWS * 16384, 0.25), &[&LENGTHS]);
    for (pool, name) in [(LODTENSOR_POOL_SUM, "sum"), (LODTENSOR_POOL_MAX, "max")] {
        refuse_each(&format!("sequence_pool ({name})"), || unsafe {
            let (mut out, mut index) = (null_mut(), null_mut());
            outputs(armed(|| sequence_pool(wide.ptr(), pool, 0.0, &mut out, &mut index)), &[out, index])
        });
    }
    refuse_each("sequence_first_step", || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_first_step(wide.ptr(), &mut out)), out)
    });
    refuse_each("sequence_last_step", || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_last_step(wide.ptr(), &mut out)), out)
    });
    // sequence_conv: [64, 256] rows through a [3 * 256, 1024] filter, with trainable padding.
    let narrow = tensor(F32, &[ROWS as i64, 256], &ramp(ROWS * 256, 0.01), &[&LENGTHS]);
    let filter = tensor(F32, &[3 * 256, WIDTH as i64], &ramp(3 * 256 * WIDTH, 0.001), &[]);
    let padding = tensor(F32, &[2, 256], &ramp(2 * 256, 0.1), &[]);
    refuse_each("sequence_conv", || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_conv(narrow.ptr(), filter.ptr(), padding.ptr(), 3, -1, 1, true, &mut out)), out)
    });
    // One element per row: 32768 rows of token ids, and of scores.
    let n = 32768;
    let lengths = [8192, 0, 16384, 8192];
    let tokens = tensor(I64, &[n as i64, 1], &(0..n as i64).map(|i| i % 5).collect::<Vec<_>>(), &[&lengths]);
    refuse_each("sequence_enumerate", || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_enumerate(tokens.ptr(), 4, -1, &mut out)), out)
    });
    refuse_each("sequence_erase", || unsafe {
        let erased = [2i64, 4];
        let mut out = null_mut();
        one(armed(|| sequence_erase(tokens.ptr(), erased.as_ptr(), 2, &mut out)), out)
    });
    let scores = tensor(F32, &[n as i64, 1], &ramp(n, 0.01), &[&lengths]);
    refuse_each("sequence_softmax", || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_softmax(scores.ptr(), &mut out)), out)
    });
    let maxima = tensor(I64, &[ROWS as i64], &(0..ROWS as i64).map(|i| i * 50).collect::<Vec<_>>(), &[]);
    refuse_each("sequence_mask", || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_mask(maxima.ptr(), 4096, F32, &mut out)), out)
    });
    // Scatter into four rows of 16384 values (256 KiB).
    let target = tensor(F32, &[4, 16384], &ramp(4 * 16384, 1.0), &[]);
    let ids = tensor(I64, &[6, 1], &[3i64, 9, 16383, 0, 5, 5], &[&[2, 0, 3, 1]]);
    let adds = tensor(F32, &[6, 1], &[1f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[&[2, 0, 3, 1]]);
    refuse_each("sequence_scatter", || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_scatter(target.ptr(), ids.ptr(), adds.ptr(), &mut out)), out)
    });
}

/// The working lists of an op are per sequence as well as per row: the ops again, on 16384
/// sequences of 0 to 2 rows of 16 float32 (1 MiB), whose LoD offsets (128 KiB) are large too.
#[test]
fn sequence_ops_on_many_short_sequences() {
    let _serial = serial();
    let lengths: Vec<usize> = (0..16384).map(|i| [1, 0, 2, 1][i % 4]).collect();
    let (seqs, rows, width) = (lengths.len(), lengths.iter().sum::<usize>(), 16);
    let x = tensor(F32, &[rows as i64, width as i64], &ramp(rows * width, 0.01), &[&lengths]);
    let short = tensor(F32, &[seqs as i64, width as i64], &ramp(seqs * width, 1.0), &[]);
    refuse_each("sequence_expand (many sequences)", || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_expand(short.ptr(), x.ptr(), 0, &mut out)), out)
    });
    refuse_each("sequence_expand_as (many sequences)", || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_expand_as(short.ptr(), x.ptr(), &mut out)), out)
    });
    refuse_each("sequence_concat (many sequences)", || unsafe {
        let xs = [x.ptr(), x.ptr()];
        let mut out = null_mut();
        one(armed(|| sequence_concat(xs.as_ptr(), 2, &mut out)), out)
    });
    refuse_each("sequence_reverse (many sequences)", || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_reverse(x.ptr(), &mut out)), out)
    });
    refuse_each("sequence_reshape (many sequences)", || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_reshape(x.ptr(), 8, &mut out)), out)
    });
    let offset: Vec<i64> = lengths.iter().map(|&n| n.min(1) as i64).collect();
    let length: Vec<i64> = lengths.iter().map(|&n| n.saturating_sub(1) as i64).collect();
    let (offset, length) = (tensor(I64, &[seqs as i64], &offset, &[]), tensor(I64, &[seqs as i64], &length, &[]));
    refuse_each("sequence_slice (many sequences)", || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_slice(x.ptr(), offset.ptr(), length.ptr(), &mut out)), out)
    });
    let pad_value = tensor(F32, &[1], &[-1f32], &[]);
    refuse_each("sequence_pad (many sequences)", || unsafe {
        let (mut out, mut kept) = (null_mut(), null_mut());
        outputs(armed(|| sequence_pad(x.ptr(), pad_value.ptr(), -1, &mut out, &mut kept)), &[out, kept])
    });
    let padded = tensor(F32, &[seqs as i64, 2, width as i64], &ramp(seqs * 2 * width, 1.0), &[]);
    let kept = tensor(I64, &[seqs as i64], &lengths.iter().map(|&n| n as i64).collect::<Vec<_>>(), &[]);
    refuse_each("sequence_unpad (many sequences)", || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_unpad(padded.ptr(), kept.ptr(), &mut out)), out)
    });
    for (pool, name) in [(LODTENSOR_POOL_AVERAGE, "average"), (LODTENSOR_POOL_MIN, "min")] {
        refuse_each(&format!("sequence_pool ({name}, many sequences)"), || unsafe {
            let (mut out, mut index) = (null_mut(), null_mut());
            outputs(armed(|| sequence_pool(x.ptr(), pool, 0.0, &mut out, &mut index)), &[out, index])
        });
    }
    let filter = tensor(F32, &[3 * width as i64, width as i64], &ramp(3 * width * width, 0.001), &[]);
    refuse_each("sequence_conv (many sequences)", || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_conv(x.ptr(), filter.ptr(), null(), 3, -1, 1, false, &mut out)), out)
    });
    let tokens = tensor(I64, &[rows as i64], &(0..rows as i64).map(|i| i % 5).collect::<Vec<_>>(), &[&lengths]);
    refuse_each("sequence_enumerate (many sequences)", || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_enumerate(tokens.ptr(), 4, -1, &mut out)), out)
    });
    refuse_each("sequence_erase (many sequences)", || unsafe {
        let erased = [2i64];
        let mut out = null_mut();
        one(armed(|| sequence_erase(tokens.ptr(), erased.as_ptr(), 1, &mut out)), out)
    });
    let scores = tensor(F32, &[rows as i64], &ramp(rows, 0.01), &[&lengths]);
    refuse_each("sequence_softmax (many sequences)", || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_softmax(scores.ptr(), &mut out)), out)
    });
    refuse_each("lodtensor_merge (many sequences)", || unsafe {
        let xs = [x.ptr(), x.ptr()];
        let mut out = null_mut();
        one(armed(|| lodtensor_merge(xs.as_ptr(), 2, &mut out)), out)
    });
    split_case("lodtensor_split (many sequences)", &x, 8192);
    ranked_cases(&x, " (many sequences)");
}

/// Views that share a tensor's memory under a LoD of their own, and the other LoD-making calls,
/// on 16384 sequences: the new LoD is the large allocation, so these calls can run out of memory
/// too.
#[test]
fn lods_of_views_are_made_or_nothing() {
    let _serial = serial();
    let lengths: Vec<usize> = (0..16384).map(|i| [1, 0, 2, 1][i % 4]).collect();
    let rows = lengths.iter().sum::<usize>();
    let x = tensor(F32, &[rows as i64, 4], &ramp(rows * 4, 0.25), &[&lengths]);
    refuse_each("lodtensor_slice", || unsafe {
        let mut out = null_mut();
        one(armed(|| lodtensor_slice(x.ptr(), 0, 1, lengths.len(), &mut out)), out)
    });
    let target: Vec<i64> = (0..=rows as i64).collect();
    refuse_each("lodtensor_lod_reset", || unsafe {
        let mut out = null_mut();
        one(armed(|| lodtensor_lod_reset(x.ptr(), null(), target.as_ptr(), target.len(), false, &mut out)), out)
    });
    refuse_each("lodtensor_lod_reset (append)", || unsafe {
        let mut out = null_mut();
        one(armed(|| lodtensor_lod_reset(x.ptr(), null(), target.as_ptr(), target.len(), true, &mut out)), out)
    });
    let by = tensor(I64, &[target.len() as i64], &target, &[]);
    refuse_each("lodtensor_lod_reset (y)", || unsafe {
        let mut out = null_mut();
        one(armed(|| lodtensor_lod_reset(x.ptr(), by.ptr(), null(), 0, false, &mut out)), out)
    });
    // Two levels: the first rank-ordered units of a 2-level tensor keep their nested level.
    let outer: Vec<usize> = vec![2; lengths.len() / 2];
    let nested = tensor(F32, &[rows as i64, 4], &ramp(rows * 4, 0.25), &[&outer, &lengths]);
    let table = rank_table(&nested);
    refuse_each("rank_table_shrink_rnn_memory", || unsafe {
        let mut out = null_mut();
        one(armed(|| rank_table_shrink_rnn_memory(table, nested.ptr(), 0, &mut out)), out)
    });
    // SAFETY: the table this test made.
    unsafe { rank_table_destroy(table) };
    refuse_each("sequence_expand (x with a LoD, many sequences)", || unsafe {
        let mut out = null_mut();
        one(armed(|| sequence_expand(x.ptr(), x.ptr(), 0, &mut out)), out)
    });
    // Bool elements are packed into Arrow's bits: 2^20 of them in 128 KiB.
    let n = 1 << 20;
    let flags = tensor(BOOL, &[n as i64], &(0..n).map(|i| (i % 5 == 0) as u8).collect::<Vec<_>>(), &[]);
    refuse_each("lodtensor_to_arrow (bool)", || unsafe {
        use lodtensor::interop::arrow::{ArrowArray, ArrowSchema};
        let mut schema = std::mem::MaybeUninit::<ArrowSchema>::uninit();
        let mut array = std::mem::MaybeUninit::<ArrowArray>::uninit();
        let (schema_ptr, array_ptr) = (schema.as_mut_ptr(), array.as_mut_ptr());
        let s = armed(|| lodtensor_to_arrow(flags.ptr(), schema_ptr.cast(), array_ptr.cast()));
        if s == OK {
            ((*array_ptr).release.expect("an exported array"))(array_ptr);
            ((*schema_ptr).release.expect("an exported schema"))(schema_ptr);
        }
        s
    });
    refuse_each("lodtensor_to_arrow_device (bool on the host)", || unsafe {
        use lodtensor::interop::arrow::{ArrowDeviceArray, ArrowSchema};
        let mut schema = std::mem::MaybeUninit::<ArrowSchema>::uninit();
        let mut array = std::mem::MaybeUninit::<ArrowDeviceArray>::uninit();
        let (schema_ptr, array_ptr) = (schema.as_mut_ptr(), array.as_mut_ptr());
        let s = armed(|| lodtensor_to_arrow_device(flags.ptr(), schema_ptr.cast(), array_ptr.cast()));
        if s == OK {
            let inner = &raw mut (*array_ptr).array;
            ((*inner).release.expect("an exported array"))(inner);
            ((*schema_ptr).release.expect("an exported schema"))(schema_ptr);
        }
        s
    });
    // A dynamic RNN over the 16384 sequences, whose step keeps its input and state.
    let init = tensor(F32, &[lengths.len() as i64, 2], &ramp(lengths.len() * 2, 1.0), &[]);
    refuse_each("tensor_array_dynamic_rnn (many sequences)", || unsafe {
        let mut out = null_mut();
        one(armed(|| tensor_array_dynamic_rnn(x.ptr(), 0, init.ptr(), Some(pass_on), null_mut(), &mut out)), out)
    });
}

/// A dynamic RNN step that passes its input on as its output and keeps the state.
unsafe extern "C" fn pass_on(
    _step: usize,
    input: *const lodtensor_t,
    state: *const lodtensor_t,
    output: *mut *mut lodtensor_t,
    new_state: *mut *mut lodtensor_t,
    _user: *mut c_void,
) -> i32 {
    if lodtensor_share(input, output) != OK {
        return 1;
    }
    lodtensor_share(state, new_state) as i32
}

// ---------------------------------------------------------------------------------------------
// TensorArray and the rank table.

/// rank_table_reorder, tensor_array_unpack and tensor_array_pack on `x` ranked at level 0; `suffix`
/// tells the cases apart.
fn ranked_cases(x: &T, suffix: &str) {
    let table = rank_table(x);
    refuse_each(&format!("rank_table_reorder{suffix}"), || unsafe {
        let mut out = null_mut();
        one(armed(|| rank_table_reorder(table, x.ptr(), &mut out)), out)
    });
    refuse_each(&format!("tensor_array_unpack{suffix}"), || unsafe {
        let mut a = null_mut();
        array_out(armed(|| tensor_array_unpack(x.ptr(), table, &mut a)), a)
    });
    let mut steps = null_mut();
    // SAFETY: live handles.
    assert_eq!(unsafe { tensor_array_unpack(x.ptr(), table, &mut steps) }, OK);
    refuse_each(&format!("tensor_array_pack{suffix}"), || unsafe {
        let mut out = null_mut();
        one(armed(|| tensor_array_pack(steps, table, &mut out)), out)
    });
    // SAFETY: what this function made, destroyed once.
    unsafe {
        tensor_array_destroy(steps);
        rank_table_destroy(table);
    }
}

#[test]
fn tensor_arrays_change_whole_or_not_at_all() {
    let _serial = serial();
    let x = batch();
    // 16384 sequences: the table's items are the large allocation.
    let many = tensor(I32, &[16384], &vec![1i32; 16384], &[&vec![1; 16384]]);
    refuse_each("rank_table_create", || unsafe {
        let mut table = null_mut();
        table_out(armed(|| rank_table_create(many.ptr(), 0, &mut table)), table)
    });
    ranked_cases(&x, "");
    // Two levels: unpacking steps and packing them back make LoD levels of one entry per
    // sequence (12000, 94 KiB), which grow as the units are appended.
    let nested = tensor(I32, &[12000], &vec![5i32; 12000], &[&vec![1; 12000], &vec![1; 12000]]);
    ranked_cases(&nested, " (nested, many sequences)");

    // Four equal elements of 64 x 1024 float32.
    let stacked = tensor(F32, &[4, ROWS as i64, WIDTH as i64], &ramp(4 * ROWS * WIDTH, 1.0), &[]);
    refuse_each("tensor_array_unstack", || unsafe {
        let mut a = null_mut();
        array_out(armed(|| tensor_array_unstack(stacked.ptr(), 0, &mut a)), a)
    });
    let mut a = null_mut();
    // SAFETY: live handles.
    assert_eq!(unsafe { tensor_array_unstack(stacked.ptr(), 0, &mut a) }, OK);
    for use_stack in [false, true] {
        refuse_each(&format!("tensor_array_to_tensor (stack {use_stack})"), || unsafe {
            let mut sizes = [usize::MAX; 4];
            let mut out = null_mut();
            let s = armed(|| tensor_array_to_tensor(a, 0, use_stack, &mut out, sizes.as_mut_ptr(), 4));
            if s != OK {
                assert_eq!(sizes, [usize::MAX; 4], "a failed call wrote the sizes");
            }
            one(s, out)
        });
    }
    refuse_each("tensor_array_read (copy)", || unsafe {
        let mut out = null_mut();
        one(armed(|| tensor_array_read(a, 2, true, &mut out)), out)
    });
    let before = bytes(x.ptr());
    refuse_each("tensor_array_write (copy)", || unsafe {
        let s = armed(|| tensor_array_write(a, 1, x.ptr(), true));
        let mut element = null_mut();
        assert_eq!(tensor_array_read(a, 1, false, &mut element), OK);
        let element = T(element);
        assert_eq!(array_size(a), 4, "the array's size changed");
        let expected = if s == OK {
            before.clone()
        } else {
            bytes(stacked.ptr())[ROWS * WIDTH * 4..][..ROWS * WIDTH * 4].to_vec()
        };
        assert!(bytes(element.ptr()) == expected, "element 1 after a write that returned {s:?}");
        // Put element 1 back for the next call.
        let mut again = null_mut();
        assert_eq!(tensor_array_unstack(stacked.ptr(), 0, &mut again), OK);
        let mut original = null_mut();
        assert_eq!(tensor_array_read(again, 1, false, &mut original), OK);
        assert_eq!(tensor_array_write(a, 1, original, false), OK);
        lodtensor_destroy(original);
        tensor_array_destroy(again);
        s
    });
    // Growing the array by 16384 slots: its list of elements is the large allocation.
    refuse_each("tensor_array_write (growing)", || unsafe {
        let s = armed(|| tensor_array_write(a, 16384, x.ptr(), false));
        if s == OK {
            assert_eq!(array_size(a), 16385);
            // Shrink back: rebuild the array of four.
            tensor_array_destroy(a);
            a = null_mut();
            assert_eq!(tensor_array_unstack(stacked.ptr(), 0, &mut a), OK);
        } else {
            assert_eq!(array_size(a), 4, "a failed write changed the array's size");
        }
        s
    });

    // A dynamic RNN whose step passes its input on as output and keeps the state.
    let init = tensor(F32, &[4, 8], &ramp(32, 1.0), &[]);
    refuse_each("tensor_array_dynamic_rnn", || unsafe {
        let mut out = null_mut();
        let s = armed(|| tensor_array_dynamic_rnn(x.ptr(), 0, init.ptr(), Some(pass_on), null_mut(), &mut out));
        if s == OK {
            assert_eq!(bytes(out), bytes(x.ptr()), "the identity RNN changed its input");
        }
        one(s, out)
    });
    // SAFETY: what this test made, destroyed once.
    unsafe { tensor_array_destroy(a) };
}

/// Lists with an entry per input tensor, array element, state or beam: many small inputs.
#[test]
fn many_small_inputs_are_listed_or_nothing() {
    let _serial = serial();
    many_inputs_cases(CPU, "");
}

// ---------------------------------------------------------------------------------------------
// Beam search.

#[test]
fn beam_search_steps_select_or_nothing() {
    let _serial = serial();
    beam_cases(CPU, "");
}

/// A TensorArray of one `step(t, items, lod)` per LoD of `steps` (prefixes, then items per prefix).
fn array_of(steps: &[[&[usize]; 2]], step: impl Fn(usize, usize, &[&[usize]]) -> T) -> *mut tensor_array_t {
    let mut a = null_mut();
    // SAFETY: a valid out pointer.
    assert_eq!(unsafe { tensor_array_create(&mut a) }, OK);
    for (t, lod) in steps.iter().enumerate() {
        let x = step(t, lod[1].iter().sum(), lod);
        // SAFETY: live handles.
        assert_eq!(unsafe { tensor_array_write(a, t, x.ptr(), false) }, OK);
    }
    a
}

#[test]
fn beam_search_decode_backtracks_or_nothing() {
    let _serial = serial();
    // Three steps of 2048 sources: one prefix each at step 0, which selects two items at step 1,
    // each of which selects one at step 2: 4096 sentences of three tokens (96 KiB of ids), from
    // LoD levels of at most 32 KiB.
    let sources = 2048;
    let (ones, twos) = (vec![1usize; sources], vec![2usize; sources]);
    let ones_per_item = vec![1usize; 2 * sources];
    let steps: [[&[usize]; 2]; 3] = [[&ones, &ones], [&ones, &twos], [&twos, &ones_per_item]];
    let ids = array_of(&steps, |t, n, lod| tensor(I64, &[n as i64, 1], &vec![5 + t as i64; n], lod));
    let scores = array_of(&steps, |t, n, lod| {
        tensor(F32, &[n as i64, 1], &(0..n).map(|i| -(t as f32) - (i % 7) as f32 / 8.0).collect::<Vec<_>>(), lod)
    });
    refuse_each("beam_search_decode", || unsafe {
        let (mut out_ids, mut out_scores) = (null_mut(), null_mut());
        let s = armed(|| beam_search_decode(ids, scores, 2, 1, &mut out_ids, &mut out_scores));
        outputs(s, &[out_ids, out_scores])
    });
    // SAFETY: arrays this test made.
    unsafe {
        tensor_array_destroy(ids);
        tensor_array_destroy(scores);
    }
}

/// The log-prob of `token` after a prefix ending in `last`: every prefix prefers other tokens
/// than end_id (1) until max_length cuts it.
fn log_prob(last: i64, token: usize) -> f32 {
    -(((token as i64 * 7 + last * 3) % 29) as f32) / 8.0 - if token == 1 { 10.0 } else { 0.0 }
}

#[test]
fn decoders_decode_or_nothing() {
    let _serial = serial();
    const VOCAB: usize = 16384;
    let options = decoder_options(VOCAB, 3);
    let decoder = decoder(&options);

    unsafe extern "C" fn fill(info: *const beam_search_step_info_t, log_probs: *mut f32, _user: *mut c_void) -> i32 {
        let info = &*info;
        let ids = std::slice::from_raw_parts(info.ids, info.num_prefixes);
        let rows = std::slice::from_raw_parts_mut(log_probs, info.num_prefixes * info.vocab_size);
        for (row, &last) in rows.chunks_mut(info.vocab_size).zip(ids) {
            row.iter_mut().enumerate().for_each(|(token, v)| *v = log_prob(last, token));
        }
        0
    }
    // Sixteen sources: the log-probs of up to 64 prefixes are 4 MiB.
    refuse_each("beam_search_decoder_run", || unsafe {
        let (mut ids, mut scores) = (null_mut(), null_mut());
        let s = armed(|| beam_search_decoder_run(decoder, 16, Some(fill), None, null_mut(), &mut ids, &mut scores));
        outputs(s, &[ids, scores])
    });

    // The tensor variant, on 2048 sources over a vocabulary of 64 (the decoder's lists of
    // prefixes are the large allocations). The step lends a buffer this test owns, so that the
    // callback itself makes no large allocation and a refusal is the decoder's, not a failed
    // callback.
    let small = decoder_options(64, 3);
    let small_decoder = refusing::decoder(&small);
    struct Lent(Vec<f32>);
    unsafe extern "C" fn lend(
        info: *const beam_search_step_info_t,
        out: *mut *mut lodtensor_t,
        user: *mut c_void,
    ) -> i32 {
        let lent = &mut *user.cast::<Lent>();
        let info = &*info;
        let rows = info.num_prefixes;
        let buf = &mut lent.0[..rows * info.vocab_size];
        let ids = std::slice::from_raw_parts(info.ids, rows);
        for (row, &last) in buf.chunks_mut(info.vocab_size).zip(ids) {
            row.iter_mut().enumerate().for_each(|(token, v)| *v = log_prob(last, token));
        }
        f32_rows_over(CPU, buf.as_mut_ptr().cast(), rows, info.vocab_size, out) as i32
    }
    let sources = 2048;
    let mut lent = Lent(vec![0f32; sources * small.beam_size * small.vocab_size]);
    refuse_each("beam_search_decoder_run_tensors", || unsafe {
        let (mut ids, mut scores) = (null_mut(), null_mut());
        let user = (&mut lent as *mut Lent).cast();
        let s =
            armed(|| beam_search_decoder_run_tensors(small_decoder, sources, Some(lend), user, &mut ids, &mut scores));
        outputs(s, &[ids, scores])
    });
    refuse_each("beam_search_decoder_run (many sources)", || unsafe {
        let (mut ids, mut scores) = (null_mut(), null_mut());
        let s = armed(|| {
            beam_search_decoder_run(small_decoder, sources, Some(fill), None, null_mut(), &mut ids, &mut scores)
        });
        outputs(s, &[ids, scores])
    });
    // SAFETY: the decoders this test made.
    unsafe { beam_search_decoder_destroy(small_decoder) };
    // SAFETY: the decoder this test made.
    unsafe { beam_search_decoder_destroy(decoder) };
}

/// The exports that copy a LoD level's lengths, or a rank table's items, into the caller's
/// buffers write them as they make them: on 16384 sequences they ask for no large block, and so
/// document no LODTENSOR_OUT_OF_MEMORY.
#[test]
fn lengths_and_items_are_written_without_a_list() {
    let _serial = serial();
    let lengths: Vec<usize> = (0..16384).map(|i| [1, 0, 2, 1][i % 4]).collect();
    let rows: usize = lengths.iter().sum();
    let x = tensor(I32, &[rows as i64], &vec![3i32; rows], &[&lengths]);
    let table = rank_table(&x);
    let (mut got, mut lens, mut n) = (vec![0usize; lengths.len()], vec![0usize; lengths.len()], 0);
    let made = large_allocations("lodtensor_lod_lengths", || unsafe {
        armed(|| lodtensor_lod_lengths(x.ptr(), 0, got.as_mut_ptr(), got.len(), &mut n))
    });
    assert_eq!(made, 0, "lodtensor_lod_lengths asked for {made} large block(s)");
    assert_eq!((n, &got), (lengths.len(), &lengths));
    let made = large_allocations("rank_table_items", || unsafe {
        armed(|| rank_table_items(table, got.as_mut_ptr(), lens.as_mut_ptr(), got.len(), &mut n))
    });
    assert_eq!(made, 0, "rank_table_items asked for {made} large block(s)");
    assert_eq!(n, lengths.len());
    // The items are by length, longest first, ties by index.
    let mut want: Vec<(usize, usize)> = lengths.iter().copied().enumerate().collect();
    want.sort_by_key(|&(i, len)| (std::cmp::Reverse(len), i));
    assert!(got.iter().zip(&lens).map(|(&i, &l)| (i, l)).eq(want));
    // SAFETY: a table this test made.
    unsafe { rank_table_destroy(table) };
}
