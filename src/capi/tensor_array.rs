//! TensorArray and rank-table exports: the array container, the rank table, unpack/pack by rank,
//! shrink/reorder, concat/stack/unstack, and the dynamic-RNN driver around a C step function.

use super::args::{copy_out, get, get_mut, null, Out};
use super::boundary;
use super::tensor::{lodtensor_t, new_handle};
use super::types::lodtensor_status_t;
use crate::error::{ensure, err};
use crate::lod_tensor::LoDTensor;
use crate::ops::{rnn, tensor_array as ops};
use crate::tensor_array::{RankTable, TensorArray};
use std::ffi::c_void;

/// A growable array of tensors (Paddle's LoDTensorArray). Elements are tensors in their own right:
/// reading gives a new handle (shared or copied, the caller chooses).
///
/// Threads: any number of threads may read one array at once; `tensor_array_write` and
/// `tensor_array_clear` need exclusive access.
pub struct tensor_array_t {
    pub(crate) inner: TensorArray,
}

/// The sequences of one LoD level sorted by length, longest first, equal lengths in index order
/// (Paddle's LoDRankTable), with the level it ranks and the LoD levels above it. Immutable: any
/// number of threads may use one table at once.
pub struct rank_table_t {
    inner: RankTable,
}

fn new_array(out: Out<*mut tensor_array_t>, inner: TensorArray) {
    out.write(Box::into_raw(Box::new(tensor_array_t { inner })));
}

/// Creates an empty array. The caller destroys it with `tensor_array_destroy`.
/// Returns LODTENSOR_NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn tensor_array_create(out: *mut *mut tensor_array_t) -> lodtensor_status_t {
    boundary(|| {
        new_array(Out::new(out, "out")?, TensorArray::new());
        Ok(())
    })
}

/// Destroys an array and its elements (memory still used by handles read from it stays alive).
/// NULL is accepted and ignored.
#[no_mangle]
pub unsafe extern "C" fn tensor_array_destroy(a: *mut tensor_array_t) {
    if !a.is_null() {
        let _ = boundary(|| {
            drop(Box::from_raw(a));
            Ok(())
        });
    }
}

/// The number of elements. Returns LODTENSOR_NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn tensor_array_size(a: *const tensor_array_t, out: *mut usize) -> lodtensor_status_t {
    boundary(|| {
        let a = get(a, "a")?;
        Out::new(out, "out")?.write(a.inner.len());
        Ok(())
    })
}

/// Element `index` as a new handle: with `copy` false it shares the element's memory (writes
/// through one are seen by the other), with `copy` true it has its own copy on the element's place
/// (a device element is copied on its device). The LoD is the element's. The caller destroys the
/// handle.
/// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_OUT_OF_RANGE (`index` >= size),
/// LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn tensor_array_read(
    a: *const tensor_array_t,
    index: usize,
    copy: bool,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let a = get(a, "a")?;
        let out = Out::new(out, "out")?;
        new_handle(out, if copy { a.inner.read_copy(index)? } else { a.inner.read(index)? });
        Ok(())
    })
}

/// Stores `t` (its elements and LoD) at `index`: with `copy` false the element shares `t`'s memory,
/// with `copy` true it holds a copy on `t`'s place. `t` stays the caller's. Writing at or past the
/// end grows the array to `index + 1`; the slots in between become 0-row tensors of `t`'s dtype,
/// row shape (dims[1..]; dims [0] for a 0-d `t`) and place, without LoD.
/// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_OUT_OF_MEMORY (the array cannot grow to
/// `index + 1`; no memory for the copy).
#[no_mangle]
pub unsafe extern "C" fn tensor_array_write(
    a: *mut tensor_array_t,
    index: usize,
    t: *const lodtensor_t,
    copy: bool,
) -> lodtensor_status_t {
    boundary(|| {
        let a = get_mut(a, "a")?;
        let t = get(t, "t")?;
        a.inner.write(index, if copy { t.inner.copy()? } else { t.inner.clone() })
    })
}

/// Removes every element (size 0). Returns LODTENSOR_NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn tensor_array_clear(a: *mut tensor_array_t) -> lodtensor_status_t {
    boundary(|| {
        get_mut(a, "a")?.inner.clear();
        Ok(())
    })
}

/// Paddle's `tensor_array_to_tensor`: concatenates (`use_stack` false) or stacks (`use_stack`
/// true) the elements along `axis` into a new tensor without LoD, owned by the caller. A negative
/// axis counts from the end: concat takes `axis` in [-ndim, ndim), stack in [-(ndim+1), ndim].
/// Concat needs every element to have element 0's dims except along `axis`; stack needs equal
/// dims; both need one dtype and place. If `sizes` is not NULL it receives each element's size
/// along `axis` (Paddle's OutIndex; 1 when stacking at axis == ndim) and must hold `sizes_len` >=
/// the array size entries; NULL skips them.
/// Returns LODTENSOR_NULL_ARGUMENT (`a`, `out`), LODTENSOR_INVALID_ARGUMENT (empty array, axis
/// out of range, mismatched dims or dtype, concat of 0-d tensors, more than 9 dims),
/// LODTENSOR_BUFFER_TOO_SMALL (`sizes_len`), LODTENSOR_UNSUPPORTED (memory on a CUDA device in a build without CUDA),
/// LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn tensor_array_to_tensor(
    a: *const tensor_array_t,
    axis: i64,
    use_stack: bool,
    out: *mut *mut lodtensor_t,
    sizes: *mut usize,
    sizes_len: usize,
) -> lodtensor_status_t {
    boundary(|| {
        let a = get(a, "a")?;
        let out = Out::new(out, "out")?;
        ensure!(
            sizes.is_null() || sizes_len >= a.inner.len(),
            BufferTooSmall,
            "sizes: holds {sizes_len} value(s), the array has {} element(s)",
            a.inner.len()
        );
        let (t, s) = ops::tensor_array_to_tensor(&a.inner, axis, use_stack)?;
        if !sizes.is_null() {
            std::ptr::copy_nonoverlapping(s.as_ptr(), sizes, s.len());
        }
        new_handle(out, t);
        Ok(())
    })
}

/// Splits `x` along `axis` (in [-ndim, ndim)) into a new array of dims[axis] tensors with `x`'s
/// dims without that axis, each with its own memory and no LoD (the inverse of stacking).
/// The caller destroys the array.
/// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_INVALID_ARGUMENT (0-d `x`, axis out of range),
/// LODTENSOR_UNSUPPORTED (memory on a CUDA device in a build without CUDA), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn tensor_array_unstack(
    x: *const lodtensor_t,
    axis: i64,
    out: *mut *mut tensor_array_t,
) -> lodtensor_status_t {
    boundary(|| {
        let x = get(x, "x")?;
        let out = Out::new(out, "out")?;
        new_array(out, ops::unstack(&x.inner, axis)?);
        Ok(())
    })
}

/// Paddle's `lod_rank_table`: ranks the sequences of LoD level `level` of `x` by length (entries
/// of the level below, rows for the last level), longest first, equal lengths in index order.
/// The caller destroys the table with `rank_table_destroy`.
/// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_INVALID_ARGUMENT (`level` >= number of LoD levels
/// of `x`; so `x` needs a LoD), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn rank_table_create(
    x: *const lodtensor_t,
    level: usize,
    out: *mut *mut rank_table_t,
) -> lodtensor_status_t {
    boundary(|| {
        let x = get(x, "x")?;
        let out = Out::new(out, "out")?;
        let inner = RankTable::from_lod_tensor(&x.inner, level)?;
        out.write(Box::into_raw(Box::new(rank_table_t { inner })));
        Ok(())
    })
}

/// Destroys a table. NULL is accepted and ignored.
#[no_mangle]
pub unsafe extern "C" fn rank_table_destroy(table: *mut rank_table_t) {
    if !table.is_null() {
        let _ = boundary(|| {
            drop(Box::from_raw(table));
            Ok(())
        });
    }
}

/// The number of items (sequences at the ranked level). Returns LODTENSOR_NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn rank_table_size(table: *const rank_table_t, out: *mut usize) -> lodtensor_status_t {
    boundary(|| {
        let table = get(table, "table")?;
        Out::new(out, "out")?.write(table.inner.len());
        Ok(())
    })
}

/// The LoD level the table ranks. Returns LODTENSOR_NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn rank_table_level(table: *const rank_table_t, out: *mut usize) -> lodtensor_status_t {
    boundary(|| {
        let table = get(table, "table")?;
        Out::new(out, "out")?.write(table.inner.level());
        Ok(())
    })
}

/// Paddle's `max_sequence_len`: the longest length (item 0's), 0 for an empty table.
/// Returns LODTENSOR_NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn rank_table_max_sequence_len(
    table: *const rank_table_t,
    out: *mut usize,
) -> lodtensor_status_t {
    boundary(|| {
        let table = get(table, "table")?;
        Out::new(out, "out")?.write(table.inner.max_sequence_len());
        Ok(())
    })
}

/// Copies the items in rank order: `indices[k]` = the original index of the k-th longest
/// sequence, `lengths[k]` its length; `*out_len` = the number of items. Either buffer may be NULL
/// (not copied); with both NULL only `*out_len` is written. A non-NULL buffer must hold at least
/// as many values (`buf_len`) as there are items.
/// Returns LODTENSOR_NULL_ARGUMENT (`table`, `out_len`), LODTENSOR_BUFFER_TOO_SMALL.
#[no_mangle]
pub unsafe extern "C" fn rank_table_items(
    table: *const rank_table_t,
    indices: *mut usize,
    lengths: *mut usize,
    buf_len: usize,
    out_len: *mut usize,
) -> lodtensor_status_t {
    boundary(|| {
        let table = get(table, "table")?;
        let items = table.inner.items();
        let out_len = Out::new(out_len, "out_len")?;
        for (buf, name) in [(indices, "indices"), (lengths, "lengths")] {
            ensure!(
                buf.is_null() || buf_len >= items.len(),
                BufferTooSmall,
                "{name}: holds {buf_len} value(s), {} are needed",
                items.len()
            );
        }
        let mut n = 0;
        copy_out(items.iter().map(|i| i.index), indices, buf_len, Out::new(&mut n, "n")?, "indices")?;
        copy_out(items.iter().map(|i| i.length), lengths, buf_len, Out::new(&mut n, "n")?, "lengths")?;
        out_len.write(n);
        Ok(())
    })
}

/// Paddle's `lod_tensor_to_array`: unpacks `x` into time steps by `table` (level r). Element t of
/// the new array holds, for each sequence of level r longer than t, in rank order, its t-th entry
/// of level r+1 (its t-th row when r is the last level) with the LoD levels below r+1; there are
/// `rank_table_max_sequence_len` elements (none for an empty table). The elements share one new
/// allocation. The caller destroys the array.
/// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_INVALID_ARGUMENT (`x` has no LoD level r, or
/// `table` does not rank `x`'s sequences: another count or other lengths),
/// LODTENSOR_UNSUPPORTED (memory on a CUDA device in a build without CUDA), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn tensor_array_unpack(
    x: *const lodtensor_t,
    table: *const rank_table_t,
    out: *mut *mut tensor_array_t,
) -> lodtensor_status_t {
    boundary(|| {
        let (x, table) = (get(x, "x")?, get(table, "table")?);
        let out = Out::new(out, "out")?;
        new_array(out, ops::lod_tensor_to_array(&x.inner, &table.inner)?);
        Ok(())
    })
}

/// Paddle's `array_to_lod_tensor`: packs time steps back into a new tensor (the inverse of
/// `tensor_array_unpack` with the same table): the sequences in their original order, each the
/// concatenation of its unit (top-level sequence, or row without LoD) of elements 0 .. length-1.
/// The LoD is the table's levels above r, the ranked level, then the elements' own levels.
/// Elements from the longest length on are not read. The caller destroys the tensor.
/// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_INVALID_ARGUMENT (empty array; an element whose
/// dtype, dims[1..] or place differ from element 0's, or that is 0-d; a sequence longer than the
/// array; element t not holding exactly one unit per sequence longer than t),
/// LODTENSOR_INVALID_LOD (elements with different numbers of LoD levels),
/// LODTENSOR_UNSUPPORTED (memory on a CUDA device in a build without CUDA), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn tensor_array_pack(
    a: *const tensor_array_t,
    table: *const rank_table_t,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let (a, table) = (get(a, "a")?, get(table, "table")?);
        let out = Out::new(out, "out")?;
        new_handle(out, ops::array_to_lod_tensor(&a.inner, &table.inner)?);
        Ok(())
    })
}

/// Paddle's `shrink_rnn_memory`: the RNN state for time step `step`, i.e. the first n units of
/// `x` (in rank order), n = the number of sequences longer than `step`. Units are top-level
/// sequences (nested levels kept) if `x` has a LoD, else rows. n = 0 gives a 0-row tensor without
/// LoD. The new handle shares `x`'s memory; the caller destroys it.
/// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_INVALID_ARGUMENT (`x` has fewer than n units, or is
/// 0-d), LODTENSOR_OUT_OF_MEMORY (no memory for the new LoD).
#[no_mangle]
pub unsafe extern "C" fn rank_table_shrink_rnn_memory(
    table: *const rank_table_t,
    x: *const lodtensor_t,
    step: usize,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let (table, x) = (get(table, "table")?, get(x, "x")?);
        let out = Out::new(out, "out")?;
        new_handle(out, ops::shrink_rnn_memory(&x.inner, &table.inner, step)?);
        Ok(())
    })
}

/// Paddle's `reorder_lod_tensor_by_rank`: a new tensor whose unit k is unit `indices[k]` of `x`
/// (units: top-level sequences with all nested levels, or rows without LoD); only the table's
/// indices are used. The caller destroys it.
/// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_INVALID_ARGUMENT (the table's size differs from
/// `x`'s unit count, so its indices are not a permutation of `x`'s units; 0-d `x`),
/// LODTENSOR_UNSUPPORTED (memory on a CUDA device in a build without CUDA), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn rank_table_reorder(
    table: *const rank_table_t,
    x: *const lodtensor_t,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let (table, x) = (get(table, "table")?, get(x, "x")?);
        let out = Out::new(out, "out")?;
        new_handle(out, ops::reorder_lod_tensor_by_rank(&x.inner, &table.inner)?);
        Ok(())
    })
}

/// One step of a dynamic RNN, called by `tensor_array_dynamic_rnn` for step = 0, 1, ... with
/// `step_input` (one unit per live sequence, in rank order) and `prev_state` (the state of the
/// live sequences). Both are borrowed: valid only during the call; do not destroy them (share
/// them with `lodtensor_share` to return or keep them). On success it returns 0 and sets
/// `*step_output` and `*new_state` to handles it creates, each with one unit (row, or top-level
/// sequence) per live sequence; the driver takes ownership of them (they may be the same handle).
/// A non-zero return stops the loop; any handle already stored in the outputs is destroyed.
pub type tensor_array_step_fn = Option<
    unsafe extern "C" fn(
        step: usize,
        step_input: *const lodtensor_t,
        prev_state: *const lodtensor_t,
        step_output: *mut *mut lodtensor_t,
        new_state: *mut *mut lodtensor_t,
        user_data: *mut c_void,
    ) -> i32,
>;

/// Takes ownership of a handle returned by the step function.
unsafe fn take(h: *mut lodtensor_t) -> Option<LoDTensor> {
    (!h.is_null()).then(|| Box::from_raw(h).inner)
}

/// Runs a whole dynamic RNN over the sequences of LoD level `level` of `x` and returns the packed
/// step outputs in `*out` (a new tensor the caller destroys).
///
/// The sequences are ranked by length; `x` is unpacked into time steps; the state starts as
/// `init_state` (one unit — row, or top-level sequence if it has a LoD — per sequence of `level`,
/// in the original order), reordered by rank. For each step the driver shrinks the state to the
/// live sequences, calls `step_fn(step, step_input, prev_state, &step_output, &new_state,
/// user_data)` (see `tensor_array_step_fn` for ownership), keeps the step output and continues
/// from the new state. The outputs are packed back in the original order: `*out`'s LoD is `x`'s
/// levels down to `level` followed by the step outputs' own levels. Every handle the driver
/// creates or receives is destroyed before it returns, on success and on failure. `step_fn` runs
/// on the calling thread and may call the library.
///
/// `x` and `init_state` must be on one place; on a CUDA device the step's inputs are there too
/// (the step function runs on the host and calls the library on them as on any device tensor).
///
/// Returns LODTENSOR_NULL_ARGUMENT (`x`, `init_state`, `step_fn`, `out`),
/// LODTENSOR_INVALID_ARGUMENT (`init_state` on another place than `x`; `level` >= number of LoD
/// levels of `x`; every sequence empty, so the output shape is unknown; `init_state` without one
/// unit per sequence; step outputs on different places; a step function
/// result that is NULL, is one of the borrowed inputs, or has the wrong number of units; step
/// outputs with different dtypes or row shapes), LODTENSOR_INVALID_LOD (step outputs with
/// different numbers of LoD levels), LODTENSOR_CALLBACK_FAILED (`step_fn` returned non-zero; the
/// message gives its status and the step), LODTENSOR_UNSUPPORTED (memory on a CUDA device in a
/// build without CUDA), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn tensor_array_dynamic_rnn(
    x: *const lodtensor_t,
    level: usize,
    init_state: *const lodtensor_t,
    step_fn: tensor_array_step_fn,
    user_data: *mut c_void,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let (x, init_state) = (get(x, "x")?, get(init_state, "init_state")?);
        let step_fn = step_fn.ok_or_else(|| null("step_fn"))?;
        let out = Out::new(out, "out")?;
        let result = rnn::dynamic_rnn(&x.inner, level, &init_state.inner, |t, input, prev| {
            let input = lodtensor_t { inner: input.clone() };
            let prev = lodtensor_t { inner: prev.clone() };
            let borrowed = [&input as *const lodtensor_t, &prev as *const lodtensor_t];
            let (mut so, mut ns) = (std::ptr::null_mut(), std::ptr::null_mut());
            let status = step_fn(t, &input, &prev, &mut so, &mut ns, user_data);
            // Never free the borrowed inputs, even if they came back; free each new handle once.
            let bad_so = borrowed.contains(&so.cast_const());
            let bad_ns = borrowed.contains(&ns.cast_const());
            let step_output = if bad_so { None } else { take(so) };
            let new_state = if bad_ns {
                None
            } else if ns == so {
                step_output.clone()
            } else {
                take(ns)
            };
            ensure!(status == 0, CallbackFailed, "step_fn: returned status {status} at step {t}");
            ensure!(
                !bad_so && !bad_ns,
                InvalidArgument,
                "step_fn: returned a borrowed input handle at step {t}; return a new handle (lodtensor_share)"
            );
            let step_output =
                step_output.ok_or_else(|| err!(InvalidArgument, "step_fn: left step_output NULL at step {t}"))?;
            let new_state =
                new_state.ok_or_else(|| err!(InvalidArgument, "step_fn: left new_state NULL at step {t}"))?;
            Ok((step_output, new_state))
        });
        new_handle(out, result?);
        Ok(())
    })
}
