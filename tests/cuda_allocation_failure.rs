//! Running out of memory on a CUDA device: `allocation_failure`'s check (tests/refusing) of the
//! exports that run on a device, with their inputs on the emulated device, whose memory is this
//! crate's allocator's. So both the device blocks of a call (its results, its scratch) and the
//! host lists it makes for them (LoD offsets, row tables, the copies it brings back to check)
//! are refused in turn: each refused call must return LODTENSOR_OUT_OF_MEMORY, write no output,
//! and give back every block it took, host and device (the device's memory in use is as before).
//! The device's block cache is off meanwhile, so every device block is asked of the allocator.
//! Then each case's driver calls fail in turn (tests/refusing/driver.rs): each failed call must
//! return LODTENSOR_INTERNAL naming the call, or give the results of a call with no failure,
//! keep no memory, and leave the device as it was for the next call.
//!
//! Only with the emulator (`--features cuda-emulator`): a real device's memory comes from its
//! driver, past this crate's allocator (`cuda_oom` runs a real device out of memory).
#![cfg(feature = "cuda-emulator")]

mod common;
mod cuda_common;
mod refusing;

use cuda_common::gpu_or_skip;
use lodtensor::capi::*;
use refusing::*;
use std::ptr::{null, null_mut};

const DEVICE: lodtensor_place_t = lodtensor_place_t { device_type: LODTENSOR_DEVICE_CUDA, device_id: 0 };

/// A copy of `t` on the device.
fn on_device(t: &T) -> T {
    let mut out = null_mut();
    // SAFETY: a live handle and a valid out pointer.
    assert_eq!(unsafe { lodtensor_to_place(t.ptr(), DEVICE, &mut out) }, OK, "{}", last_error());
    T(out)
}

/// A device tensor as `tensor` makes a host one.
fn device_tensor<E: Copy>(dtype: lodtensor_dtype_t, dims: &[i64], data: &[E], lengths: &[&[usize]]) -> T {
    tensor_on(DEVICE, dtype, dims, data, lengths)
}

/// `refuse_each` of an export with one tensor output.
fn one_output(name: &str, call: impl Fn(*mut *mut lodtensor_t) -> lodtensor_status_t) {
    refuse_each(name, || {
        let mut out = null_mut();
        one(armed(|| call(&mut out)), out)
    });
}

#[test]
fn device_tensors_are_made_or_nothing() {
    let _serial = serial();
    if !gpu_or_skip() {
        return;
    }
    let host = batch();
    // SAFETY (every call below): live handles and valid out pointers.
    one_output("lodtensor_to_place (to the device)", |out| unsafe { lodtensor_to_place(host.ptr(), DEVICE, out) });
    let x = on_device(&host);
    one_output("lodtensor_to_place (to the host)", |out| unsafe { lodtensor_to_place(x.ptr(), CPU, out) });
    one_output("lodtensor_copy (device)", |out| unsafe { lodtensor_copy(x.ptr(), out) });
    let dims = [ROWS as i64, WIDTH as i64];
    one_output("lodtensor_fill_on (device)", |out| unsafe {
        lodtensor_fill_on(DEVICE, F32, dims.as_ptr(), 2, 0.5, out)
    });
    one_output("lodtensor_cast (device)", |out| unsafe { lodtensor_cast(x.ptr(), F64, out) });
    one_output("lodtensor_log_softmax (device)", |out| unsafe { lodtensor_log_softmax(x.ptr(), out) });
    refuse_each("lodtensor_topk (device)", || unsafe {
        let (mut values, mut indices) = (null_mut(), null_mut());
        outputs(armed(|| lodtensor_topk(x.ptr(), 512, true, &mut values, &mut indices)), &[values, indices])
    });
    let xs = [x.ptr(), x.ptr()];
    one_output("lodtensor_merge (device)", |out| unsafe { lodtensor_merge(xs.as_ptr(), 2, out) });
    let index = device_tensor(I64, &[128], &(0..128i64).map(|i| (i * 7) % ROWS as i64).collect::<Vec<_>>(), &[]);
    one_output("lodtensor_gather_rows (device)", |out| unsafe { lodtensor_gather_rows(x.ptr(), index.ptr(), out) });
    let updates = device_tensor(F32, &[128, WIDTH as i64], &ramp(128 * WIDTH, 2.0), &[]);
    for (mode, name) in [(LODTENSOR_SCATTER_OVERWRITE, "overwrite"), (LODTENSOR_SCATTER_ADD, "add")] {
        one_output(&format!("lodtensor_scatter_rows ({name}, device)"), |out| unsafe {
            lodtensor_scatter_rows(x.ptr(), index.ptr(), updates.ptr(), mode, out)
        });
    }
}

/// The sequence operators on `x` (on the device, `width` float32 a row, in sequences of
/// `lengths`); `suffix` tells the two batches apart.
fn sequence_ops(lengths: &[usize], width: usize, suffix: &str) {
    let (seqs, rows) = (lengths.len(), lengths.iter().sum::<usize>());
    let x = device_tensor(F32, &[rows as i64, width as i64], &ramp(rows * width, 0.01), &[lengths]);
    let short = device_tensor(F32, &[seqs as i64, width as i64], &ramp(seqs * width, 1.0), &[]);
    // SAFETY (every call below): live handles and valid out pointers.
    one_output(&format!("sequence_expand{suffix}"), |out| unsafe { sequence_expand(short.ptr(), x.ptr(), 0, out) });
    one_output(&format!("sequence_expand_as{suffix}"), |out| unsafe { sequence_expand_as(short.ptr(), x.ptr(), out) });
    let xs = [x.ptr(), x.ptr()];
    one_output(&format!("sequence_concat{suffix}"), |out| unsafe { sequence_concat(xs.as_ptr(), 2, out) });
    one_output(&format!("sequence_reverse{suffix}"), |out| unsafe { sequence_reverse(x.ptr(), out) });
    one_output(&format!("sequence_reshape{suffix}"), |out| unsafe { sequence_reshape(x.ptr(), width as i64 / 2, out) });
    let offset: Vec<i64> = lengths.iter().map(|&n| n.min(1) as i64).collect();
    let length: Vec<i64> = lengths.iter().map(|&n| n.saturating_sub(1) as i64).collect();
    let offset = device_tensor(I64, &[seqs as i64], &offset, &[]);
    let length = device_tensor(I64, &[seqs as i64], &length, &[]);
    one_output(&format!("sequence_slice{suffix}"), |out| unsafe {
        sequence_slice(x.ptr(), offset.ptr(), length.ptr(), out)
    });
    let pad_value = device_tensor(F32, &[1], &[-1f32], &[]);
    refuse_each(&format!("sequence_pad{suffix}"), || unsafe {
        let (mut out, mut kept) = (null_mut(), null_mut());
        outputs(armed(|| sequence_pad(x.ptr(), pad_value.ptr(), -1, &mut out, &mut kept)), &[out, kept])
    });
    let longest = *lengths.iter().max().expect("sequences");
    let padded =
        device_tensor(F32, &[seqs as i64, longest as i64, width as i64], &ramp(seqs * longest * width, 1.0), &[]);
    let kept = device_tensor(I64, &[seqs as i64], &lengths.iter().map(|&n| n as i64).collect::<Vec<_>>(), &[]);
    one_output(&format!("sequence_unpad{suffix}"), |out| unsafe { sequence_unpad(padded.ptr(), kept.ptr(), out) });
    // Pooling makes a row per sequence: rows wide enough for 256 KiB of them.
    let pool_width = width.max((64 << 10) / seqs);
    let wide = device_tensor(F32, &[rows as i64, pool_width as i64], &ramp(rows * pool_width, 0.25), &[lengths]);
    for (pool, name) in [(LODTENSOR_POOL_SUM, "sum"), (LODTENSOR_POOL_MAX, "max")] {
        refuse_each(&format!("sequence_pool ({name}){suffix}"), || unsafe {
            let (mut out, mut index) = (null_mut(), null_mut());
            outputs(armed(|| sequence_pool(wide.ptr(), pool, 0.0, &mut out, &mut index)), &[out, index])
        });
    }
    let filter = device_tensor(F32, &[3 * width as i64, width as i64], &ramp(3 * width * width, 0.001), &[]);
    one_output(&format!("sequence_conv{suffix}"), |out| unsafe {
        sequence_conv(x.ptr(), filter.ptr(), null(), 3, -1, 1, false, out)
    });
    // One element per row: the sequences scaled to 16384 rows at least.
    let scale = 16384usize.div_ceil(rows);
    let token_lengths: Vec<usize> = lengths.iter().map(|&n| n * scale).collect();
    let (lengths, rows) = (&token_lengths[..], rows * scale);
    let tokens: Vec<i64> = (0..rows as i64).map(|i| i % 5).collect();
    let tokens = device_tensor(I64, &[rows as i64, 1], &tokens, &[lengths]);
    one_output(&format!("sequence_enumerate{suffix}"), |out| unsafe { sequence_enumerate(tokens.ptr(), 4, -1, out) });
    let erased = [2i64];
    one_output(&format!("sequence_erase{suffix}"), |out| unsafe {
        sequence_erase(tokens.ptr(), erased.as_ptr(), 1, out)
    });
    let scores = device_tensor(F32, &[rows as i64, 1], &ramp(rows, 0.01), &[lengths]);
    one_output(&format!("sequence_softmax{suffix}"), |out| unsafe { sequence_softmax(scores.ptr(), out) });
    one_output(&format!("sequence_mask{suffix}"), |out| unsafe { sequence_mask(tokens.ptr(), 4096, F32, out) });
}

#[test]
fn device_sequence_ops_make_results_or_nothing() {
    let _serial = serial();
    if !gpu_or_skip() {
        return;
    }
    sequence_ops(&LENGTHS, 1024, " (device)");
    let many: Vec<usize> = (0..16384).map(|i| [1, 0, 2, 1][i % 4]).collect();
    sequence_ops(&many, 16, " (device, many sequences)");
    // Scatter into four device rows of 16384 values.
    let target = device_tensor(F32, &[4, 16384], &ramp(4 * 16384, 1.0), &[]);
    let ids = device_tensor(I64, &[6, 1], &[3i64, 9, 16383, 0, 5, 5], &[&[2, 0, 3, 1]]);
    let adds = device_tensor(F32, &[6, 1], &[1f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[&[2, 0, 3, 1]]);
    // SAFETY: live handles and a valid out pointer.
    one_output("sequence_scatter (device)", |out| unsafe {
        sequence_scatter(target.ptr(), ids.ptr(), adds.ptr(), out)
    });
}

#[test]
fn device_tensor_arrays_change_whole_or_not_at_all() {
    let _serial = serial();
    if !gpu_or_skip() {
        return;
    }
    let x = on_device(&batch());
    let table = rank_table(&x);
    // SAFETY (every call below): live handles and valid out pointers.
    one_output("rank_table_reorder (device)", |out| unsafe { rank_table_reorder(table, x.ptr(), out) });
    refuse_each("tensor_array_unpack (device)", || unsafe {
        let mut a = null_mut();
        array_out(armed(|| tensor_array_unpack(x.ptr(), table, &mut a)), a)
    });
    let mut steps = null_mut();
    assert_eq!(unsafe { tensor_array_unpack(x.ptr(), table, &mut steps) }, OK);
    one_output("tensor_array_pack (device)", |out| unsafe { tensor_array_pack(steps, table, out) });
    let stacked = device_tensor(F32, &[4, ROWS as i64, WIDTH as i64], &ramp(4 * ROWS * WIDTH, 1.0), &[]);
    refuse_each("tensor_array_unstack (device)", || unsafe {
        let mut a = null_mut();
        array_out(armed(|| tensor_array_unstack(stacked.ptr(), 0, &mut a)), a)
    });
    let mut a = null_mut();
    assert_eq!(unsafe { tensor_array_unstack(stacked.ptr(), 0, &mut a) }, OK);
    for use_stack in [false, true] {
        one_output(&format!("tensor_array_to_tensor (stack {use_stack}, device)"), |out| unsafe {
            tensor_array_to_tensor(a, 0, use_stack, out, null_mut(), 0)
        });
    }
    one_output("tensor_array_read (copy, device)", |out| unsafe { tensor_array_read(a, 2, true, out) });
    refuse_each("tensor_array_write (copy, device)", || unsafe {
        let s = armed(|| tensor_array_write(a, 1, x.ptr(), true));
        assert_eq!(array_size(a), 4, "the array's size changed");
        s
    });
    unsafe {
        tensor_array_destroy(a);
        tensor_array_destroy(steps);
        rank_table_destroy(table);
    }
}

#[test]
fn device_beam_search_selects_or_nothing() {
    let _serial = serial();
    if gpu_or_skip() {
        beam_cases(DEVICE, " (device)");
    }
}

#[test]
fn device_lists_of_many_inputs_are_made_or_nothing() {
    let _serial = serial();
    if gpu_or_skip() {
        many_inputs_cases(DEVICE, ", device");
    }
}

/// A bool column of 2^20 elements on the device lent through Arrow's device interface (its bits,
/// 128 KiB, packed there) and taken back (unpacked there into a new 1 MiB tensor).
#[test]
fn device_bools_go_as_bits_or_nothing() {
    let _serial = serial();
    if !gpu_or_skip() {
        return;
    }
    let n = 1 << 20;
    let flags = device_tensor(BOOL, &[n as i64], &(0..n).map(|i| (i % 3 == 0) as u8).collect::<Vec<_>>(), &[]);
    record_batch_cases(&[flags.ptr()], None, true, "a bool column of 2^20 on the device");
}

/// A device column of 2^13 sequences of 2^14 (64 and 128 KiB of offsets) taken as a record batch,
/// beside a bool column of the same LoD (its bits unpacked on the device): the offsets read to the
/// host, the LoDs made of them and each level's copy kept on the device are refused in turn, the
/// array left with the caller.
#[test]
fn device_lods_come_in_whole_or_not_at_all() {
    let _serial = serial();
    if !gpu_or_skip() {
        return;
    }
    let n = 1 << 14;
    let values: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let (outer, inner) = (vec![2usize; n / 2], vec![1usize; n]);
    let x = device_tensor(F32, &[n as i64], &values, &[&outer, &inner]);
    let flags =
        device_tensor(BOOL, &[n as i64], &(0..n).map(|i| (i % 3 == 0) as u8).collect::<Vec<_>>(), &[&outer, &inner]);
    record_batch_import_cases(&[x.ptr(), flags.ptr()], None, true, "LoDs of 2^13 sequences of 2^14 on the device");
}

/// Device text of 1 MiB that is UTF-8 as a whole but has a character split between its two
/// strings, lent as UTF-8: the kernel's check finds it, and the one large allocation is the host
/// copy of the bytes that names the broken string. Refused there, the call returns
/// OUT_OF_MEMORY; let be, the refusal of the text (INVALID_ARGUMENT, read here as success). Nothing
/// is written either way.
#[test]
fn device_text_is_checked_or_nothing() {
    use lodtensor::interop::arrow::{ArrowDeviceArray, ArrowSchema};
    use std::mem::MaybeUninit;
    let _serial = serial();
    if !gpu_or_skip() {
        return;
    }
    let n = 1 << 20;
    let mut text: Vec<u8> = (0..n).map(|i| b"abc "[i % 4]).collect();
    text[n / 2 - 1..n / 2 + 1].copy_from_slice("é".as_bytes());
    let x = device_tensor(U8, &[n as i64], &text, &[&[n / 2, n / 2]]);
    let broken = format!("t: sequence 0 of LoD level 0 (bytes 0..{}) is not UTF-8 at byte {}", n / 2, n / 2 - 1);
    refuse_each("lodtensor_to_arrow_device_strings (UTF-8 on the device)", || {
        let mut schema = MaybeUninit::<ArrowSchema>::zeroed();
        let mut array = MaybeUninit::<ArrowDeviceArray>::zeroed();
        // SAFETY: a live handle and structs the call fills.
        let status = armed(|| unsafe {
            lodtensor_to_arrow_device_strings(
                x.ptr(),
                LODTENSOR_ARROW_UTF8,
                schema.as_mut_ptr().cast(),
                array.as_mut_ptr().cast(),
            )
        });
        // SAFETY: zeroed structs, which a refused call leaves as they are.
        let (schema, array) = unsafe { (schema.assume_init(), array.assume_init()) };
        assert!(schema.release.is_none() && array.array.release.is_none(), "a refused export wrote its outputs");
        if status == lodtensor_status_t::LODTENSOR_INVALID_ARGUMENT {
            assert_eq!(last_error(), broken);
            return OK;
        }
        assert_ne!(status, OK, "text with a split character was lent as UTF-8");
        status
    });
}

/// The decoder over tensors with its log-probs on the device: 2048 sources, beams of 4 over a
/// vocabulary of 8, two steps, so that its lists of prefixes (host) and the second step's
/// selection (device) are large. Each step lends the rows of one device buffer this test made beforehand (every row the
/// same log-probs), so the callback itself asks for no large block and a refusal is the
/// decoder's, not a failed callback.
#[test]
fn device_decoders_decode_or_nothing() {
    let _serial = serial();
    if !gpu_or_skip() {
        return;
    }
    const VOCAB: usize = 8;
    const SOURCES: usize = 2048;
    let options = decoder_options(VOCAB, 2);
    let decoder = decoder(&options);
    let rows = SOURCES * options.beam_size;
    let row: Vec<f32> = (0..VOCAB).map(|t| -((t * 7 % 29) as f32) / 8.0 - if t == 1 { 10.0 } else { 0.0 }).collect();
    let all: Vec<f32> = (0..rows).flat_map(|_| row.iter().copied()).collect();
    let lent = device_tensor(F32, &[rows as i64, VOCAB as i64], &all, &[]);
    let mut base = std::ptr::null();
    // SAFETY: a live handle and a valid out pointer.
    assert_eq!(unsafe { lodtensor_data(lent.ptr(), &mut base) }, OK);

    unsafe extern "C" fn step(
        info: *const beam_search_step_info_t,
        out: *mut *mut lodtensor_t,
        user: *mut std::ffi::c_void,
    ) -> i32 {
        let info = &*info;
        f32_rows_over(DEVICE, user, info.num_prefixes, info.vocab_size, out) as i32
    }
    refuse_each("beam_search_decoder_run_tensors (device log-probs)", || unsafe {
        let (mut ids, mut scores) = (null_mut(), null_mut());
        let user = base.cast_mut();
        let s = armed(|| beam_search_decoder_run_tensors(decoder, SOURCES, Some(step), user, &mut ids, &mut scores));
        outputs(s, &[ids, scores])
    });
    // SAFETY: the decoder made above.
    unsafe { beam_search_decoder_destroy(decoder) };
}
