//! Running out of device memory: the device's free and total memory, a request larger than the
//! device (an `OutOfMemory` error that leaves the device usable), and a request that fits only once
//! the cache gives back the blocks it keeps. One test function: it fills most of the device, so no
//! other test of this process may allocate on it meanwhile.

mod common;
mod cuda_common;

use cuda_common::{bytes_of, gpu_or_skip, GPU};
use lodtensor::memory::{device_free_memory, device_memory_info, empty_device_cache};
use lodtensor::ops::fill_on;
use lodtensor::{cuda_device_count, DType, Dim, Error, LoDTensor};

/// A device tensor of `rows` x 4096 bytes, every byte `value`.
fn filled(rows: usize, value: u8) -> lodtensor::Result<LoDTensor> {
    fill_on(GPU, DType::U8, Dim::new(&[rows, 4096]).unwrap(), f64::from(value))
}

/// The first and the last row of `t` hold `value` in every byte.
#[track_caller]
fn check_ends(t: &LoDTensor, value: u8) {
    let rows = t.dims().as_slice()[0];
    for r in [0, rows - 1] {
        let row = LoDTensor::dense(t.tensor().slice_rows(r..r + 1).unwrap());
        assert!(bytes_of(&row).iter().all(|&b| b == value), "row {r} of {rows} holds {value}");
    }
}

#[test]
fn device_memory_runs_out_cleanly() {
    if !gpu_or_skip() {
        assert!(matches!(device_free_memory(0), Err(Error::Unsupported(m)) if m.contains("cuda:0")));
        return;
    }
    let count = cuda_device_count().unwrap() as u32;
    assert!(
        matches!(device_free_memory(count), Err(Error::InvalidArgument(m)) if m.contains(&format!("cuda:{count}")))
    );
    let (free, total) = device_free_memory(0).unwrap();
    assert!(0 < free && free <= total, "free {free} of {total}");

    // More than the whole device: refused with the size and the device named; nothing is left
    // allocated and the device goes on working.
    let rows = total / 4096 + 1;
    match filled(rows, 7) {
        Err(Error::OutOfMemory(m)) => {
            assert!(m.contains("cuda:0") && m.contains(&(rows * 4096).to_string()), "message: {m}")
        }
        other => {
            panic!("{rows} x 4096 bytes on a device of {total}: expected OutOfMemory, got {:?}", other.map(|_| ()))
        }
    }
    assert_eq!(device_memory_info(0).unwrap().0, 0, "nothing in use after the refusal");
    check_ends(&filled(3, 9).unwrap(), 9);

    // A freed block kept by the cache, and a request of another size class that fits only without
    // it: the allocator gives the kept blocks back and tries again.
    if common::caches_off_for_guard_pages() {
        return;
    }
    empty_device_cache(0).unwrap();
    let (free, _) = device_free_memory(0).unwrap();
    let (a_rows, b_rows) = (free / 4096 * 2 / 5, free / 4096 * 7 / 10);
    let a = filled(a_rows, 1).unwrap();
    check_ends(&a, 1);
    drop(a);
    let (in_use, kept) = device_memory_info(0).unwrap();
    assert!(in_use == 0 && kept >= a_rows * 4096, "after freeing a: in use {in_use}, kept {kept}");
    let (free_now, _) = device_free_memory(0).unwrap();
    assert!(free_now < b_rows * 4096, "the kept block takes device memory: free {free_now}");
    let b = filled(b_rows, 3).unwrap();
    check_ends(&b, 3);
    // Only the fill's small value block is kept now.
    let (in_use, kept) = device_memory_info(0).unwrap();
    assert!(kept < a_rows * 4096 && in_use >= b_rows * 4096, "after the retry: in use {in_use}, kept {kept}");
    drop(b);
    empty_device_cache(0).unwrap();
}
