//! Each CUDA device's caching allocator as callers see it: the bytes in use and kept, reuse of a
//! kept block, emptying the cache, and the bound on what it keeps. One test function: the
//! accounting is per process, and no other test may allocate on the device meanwhile.

mod common;
mod cuda_common;

use cuda_common::{bytes_of, gpu_or_skip, GPU};
use lodtensor::memory::{device_cache_limit, device_memory_info, empty_device_cache, set_device_cache_limit};
use lodtensor::{cuda_device_count, to_place, Error, LoDTensor, Tensor};

/// A device tensor of `n` f32 values `seed, seed + 1, ...` (one block of `4 n` bytes).
fn on_device(n: usize, seed: f32) -> LoDTensor {
    let values: Vec<f32> = (0..n).map(|i| seed + i as f32).collect();
    to_place(&LoDTensor::dense(Tensor::from_slice(&values, &[n]).unwrap()), GPU).unwrap()
}

/// Whether a block of `bytes` serves a request of `len` as documented: rounded up to the next
/// power of two up to 4 KiB (512 bytes at least), by at most 1/8 above.
fn holds(bytes: usize, len: usize) -> bool {
    let most = if len <= 4 << 10 { len.next_power_of_two().max(512) } else { len + len / 8 };
    (len..=most).contains(&bytes)
}

#[test]
fn device_cache_accounts_reuses_and_empties() {
    if !gpu_or_skip() {
        match (device_memory_info(0), empty_device_cache(0)) {
            (Err(Error::Unsupported(a)), Err(Error::Unsupported(b))) => {
                assert!(a.contains("cuda:0") && b.contains("cuda:0"))
            }
            other => panic!("expected Unsupported twice, got {other:?}"),
        }
        match (set_device_cache_limit(0, 0), device_cache_limit(0)) {
            (Err(Error::Unsupported(a)), Err(Error::Unsupported(b))) => {
                assert!(a.contains("cuda:0") && b.contains("cuda:0"))
            }
            other => panic!("expected Unsupported twice, got {other:?}"),
        }
        return;
    }
    let count = cuda_device_count().unwrap() as u32;
    assert!(
        matches!(device_memory_info(count), Err(Error::InvalidArgument(m)) if m.contains(&format!("cuda:{count}")))
    );
    assert!(matches!(empty_device_cache(count), Err(Error::InvalidArgument(_))));
    assert!(matches!(set_device_cache_limit(count, 0), Err(Error::InvalidArgument(_))));
    assert!(matches!(device_cache_limit(count), Err(Error::InvalidArgument(_))));
    if common::caches_off_for_guard_pages() {
        return;
    }
    // Asking about a device not used yet does not set it up, and finds nothing; nor does bounding
    // its cache, which has no bound at first. The bound of 2 MiB set here is above what the
    // steps before the last keep, and the last checks that it holds from the device's first use.
    assert_eq!(device_cache_limit(0).unwrap(), usize::MAX);
    set_device_cache_limit(0, 2 << 20).unwrap();
    assert_eq!(device_cache_limit(0).unwrap(), 2 << 20);
    assert_eq!(device_memory_info(0).unwrap(), (0, 0));
    empty_device_cache(0).unwrap();

    let (a_len, b_len) = (40_000 * 4, 300_000 * 4);
    let a = on_device(40_000, 1.0);
    let (a_use, kept) = device_memory_info(0).unwrap();
    assert!(holds(a_use, a_len) && kept == 0, "one tensor of {a_len} bytes: in use {a_use}, kept {kept}");
    let a_addr = a.tensor().as_ptr();
    drop(a);
    assert_eq!(device_memory_info(0).unwrap(), (0, a_use), "a freed block is kept whole");

    // The next request of the same size takes the kept block; a larger one gets its own.
    let a2 = on_device(40_000, 2.0);
    assert_eq!(a2.tensor().as_ptr(), a_addr, "the kept block is reused");
    assert_eq!(device_memory_info(0).unwrap(), (a_use, 0));
    let b = on_device(300_000, 3.0);
    let (both, kept) = device_memory_info(0).unwrap();
    assert!(holds(both - a_use, b_len) && kept == 0, "two tensors: in use {both}, kept {kept}");

    // Emptying gives back only what is kept; live tensors keep their memory and values.
    drop(a2);
    assert_eq!(device_memory_info(0).unwrap(), (both - a_use, a_use));
    empty_device_cache(0).unwrap();
    assert_eq!(device_memory_info(0).unwrap(), (both - a_use, 0));
    let want: Vec<u8> = (0..300_000).flat_map(|i| (3.0 + i as f32).to_ne_bytes()).collect();
    assert!(bytes_of(&b) == want, "a live tensor survives emptying the cache");
    drop(b);
    assert_eq!(device_memory_info(0).unwrap(), (0, both - a_use));
    empty_device_cache(0).unwrap();
    assert_eq!(device_memory_info(0).unwrap(), (0, 0));

    // The bound: three freed blocks of 1 MiB do not fit under 2 MiB; the longest-kept goes back.
    let mib = 1 << 20;
    let ts: Vec<LoDTensor> = (0..3).map(|i| on_device(mib / 4, i as f32)).collect();
    let addrs: Vec<*const u8> = ts.iter().map(|t| t.tensor().as_ptr()).collect();
    assert_eq!(device_memory_info(0).unwrap(), (3 * mib, 0));
    drop(ts);
    assert_eq!(device_memory_info(0).unwrap(), (0, 2 * mib), "the third freed block passes the bound");
    // What is kept is the two blocks freed last, the most recent first.
    let again: Vec<LoDTensor> = (0..2).map(|i| on_device(mib / 4, i as f32)).collect();
    assert_eq!(again[0].tensor().as_ptr(), addrs[2]);
    assert_eq!(again[1].tensor().as_ptr(), addrs[1]);
    // A block larger than the bound (4 MiB) is not kept.
    drop(on_device(mib, 9.0));
    assert_eq!(device_memory_info(0).unwrap(), (2 * mib, 0));
    drop(again);
    // Lowering the bound gives back what is over it now; 0 keeps nothing more.
    set_device_cache_limit(0, mib).unwrap();
    assert_eq!(device_memory_info(0).unwrap(), (0, mib));
    set_device_cache_limit(0, 0).unwrap();
    assert_eq!(device_memory_info(0).unwrap(), (0, 0));
    drop(on_device(16, 1.0));
    assert_eq!(device_memory_info(0).unwrap(), (0, 0));
    set_device_cache_limit(0, usize::MAX).unwrap();
    assert_eq!(device_cache_limit(0).unwrap(), usize::MAX);

    // Threads allocating and freeing while another moves the bound: every value survives, and
    // afterwards nothing is in use and what is kept is within the last bound.
    std::thread::scope(|scope| {
        for t in 0..4usize {
            scope.spawn(move || {
                for i in 0..200usize {
                    let n = 1 + (t * 7919 + i * 104_729) % 300_000;
                    let x = on_device(n, (t * 1000 + i) as f32);
                    let got = bytes_of(&x);
                    let last = (t * 1000 + i) as f32 + (n - 1) as f32;
                    assert_eq!(got[got.len() - 4..], last.to_ne_bytes(), "thread {t}, tensor {i}");
                }
            });
        }
        scope.spawn(|| {
            for i in 0..200usize {
                set_device_cache_limit(0, [0, mib, 3 * mib, usize::MAX][i % 4]).unwrap();
            }
        });
    });
    set_device_cache_limit(0, 3 * mib).unwrap();
    let (in_use, kept) = device_memory_info(0).unwrap();
    assert!(in_use == 0 && kept <= 3 * mib, "after the threads: in use {in_use}, kept {kept}");
    set_device_cache_limit(0, usize::MAX).unwrap();
    empty_device_cache(0).unwrap();
    assert_eq!(device_memory_info(0).unwrap(), (0, 0));
}
