//! The host block cache: freed host blocks of at least `CACHED_MIN` bytes are kept (up to the
//! bound) and serve the next request of their size class; the bound is respected, longest-kept
//! blocks go first, and reused blocks are zeroed or poisoned as a fresh one would be. One test
//! function: the cache is process-wide, so its steps must not interleave with other tests.

mod common;

use lodtensor::memory::{host_cache_info, set_host_cache_limit, CACHED_MIN, POISON};
use lodtensor::{sequence_pad, Allocation, LoDTensor, Lod, Tensor};
use std::sync::Arc;

const MIB: usize = 1 << 20;

fn kept() -> usize {
    host_cache_info().0
}

fn fill(a: &Arc<Allocation>, byte: u8) {
    // SAFETY: the test holds the only reference; the allocation has `len` bytes.
    unsafe { std::ptr::write_bytes(a.as_ptr(), byte, a.len()) }
}

fn all(a: &Arc<Allocation>, byte: u8) -> bool {
    // SAFETY: as in `fill`; every byte was written before it is read.
    unsafe { std::slice::from_raw_parts(a.as_ptr(), a.len()) }.iter().all(|&x| x == byte)
}

#[test]
fn freed_blocks_are_kept_reused_and_bounded() {
    if common::caches_off_for_guard_pages() {
        return;
    }
    set_host_cache_limit(0);
    assert_eq!(host_cache_info(), (0, 0));
    set_host_cache_limit(10 * MIB);
    assert_eq!(host_cache_info(), (0, 10 * MIB));

    // Below CACHED_MIN nothing is kept; a block of CACHED_MIN is, and serves the next request of
    // its class.
    drop(Allocation::uninit(CACHED_MIN - 1).unwrap());
    assert_eq!(kept(), 0);
    let small = Allocation::uninit(CACHED_MIN).unwrap();
    let small_ptr = small.as_ptr();
    fill(&small, 7);
    drop(small);
    assert_eq!(kept(), CACHED_MIN);
    let again = Allocation::zeroed(CACHED_MIN).unwrap();
    assert_eq!((again.as_ptr(), kept()), (small_ptr, 0));
    assert!(all(&again, 0));
    drop(again);
    set_host_cache_limit(0);
    set_host_cache_limit(10 * MIB);

    // A freed block serves the next request of its class (3 MiB - 1000 rounds up to 3 MiB) and a
    // zeroed request gets zeros, not the old bytes.
    let a = Allocation::uninit(3 * MIB).unwrap();
    let a_ptr = a.as_ptr();
    fill(&a, 7);
    drop(a);
    assert_eq!(kept(), 3 * MIB);
    let b = Allocation::zeroed(3 * MIB - 1000).unwrap();
    assert_eq!(b.as_ptr(), a_ptr);
    assert_eq!(kept(), 0);
    assert!(all(&b, 0));
    fill(&b, 9);
    drop(b);
    // ... an uninitialised request gets the poison byte when poisoning is on.
    let c = Allocation::uninit(3 * MIB).unwrap();
    assert_eq!(c.as_ptr(), a_ptr);
    if std::env::var_os("LODTENSOR_POISON_UNINIT").is_some_and(|v| v == "1") {
        assert!(all(&c, POISON));
    }
    drop(c);

    // Another class does not take it.
    let d = Allocation::uninit(5 * MIB).unwrap();
    assert_ne!(d.as_ptr(), a_ptr);
    assert_eq!(kept(), 3 * MIB);

    // 3 + 5 + 3 MiB would pass the 10 MiB bound: the longest-kept block (the first 3 MiB) goes.
    let e = Allocation::uninit(3 * MIB).unwrap();
    let e_ptr = e.as_ptr();
    assert_eq!(e_ptr, a_ptr);
    let f = Allocation::uninit(3 * MIB).unwrap();
    let f_ptr = f.as_ptr();
    drop(e);
    drop(d);
    drop(f);
    assert_eq!(kept(), 8 * MIB);
    assert_eq!(Allocation::uninit(3 * MIB).unwrap().as_ptr(), f_ptr);

    // A block over the bound is never kept.
    drop(Allocation::uninit(11 * MIB).unwrap());
    assert_eq!(kept(), 8 * MIB);

    // Lowering the bound frees the longest-kept blocks until it holds; 0 keeps nothing.
    set_host_cache_limit(4 * MIB);
    assert_eq!(kept(), 3 * MIB);
    set_host_cache_limit(0);
    assert_eq!(kept(), 0);
    drop(Allocation::uninit(3 * MIB).unwrap());
    assert_eq!(kept(), 0);

    // Blocks with their own huge-page mapping are kept and reused the same way.
    set_host_cache_limit(64 * MIB);
    let g = Allocation::uninit(33 * MIB).unwrap();
    let g_ptr = g.as_ptr();
    fill(&g, 1);
    drop(g);
    assert_eq!(kept(), 36 * MIB); // the class of 33 MiB: powers of two split in steps of 1/16
    let h = Allocation::zeroed(33 * MIB).unwrap();
    assert_eq!(h.as_ptr(), g_ptr);
    assert!(all(&h, 0));
    drop(h);

    // An op writing into a kept block (the padded output of the first call, 3 MiB) leaves nothing
    // of its old contents: every slot is the sequence, then the pad value.
    let lengths = [40_000usize, 0, 65_536];
    let pad = |fill: f32| {
        let rows: usize = lengths.iter().sum();
        let x: Vec<f32> = (0..rows * 4).map(|i| fill + i as f32).collect();
        let lod = Lod::from_offsets(vec![vec![0, lengths[0], lengths[0] + lengths[1], rows]]).unwrap();
        let x = LoDTensor::new(Tensor::from_slice(&x, &[rows, 4]).unwrap(), lod).unwrap();
        let pad = LoDTensor::dense(Tensor::from_slice(&[-fill], &[1]).unwrap());
        sequence_pad(&x, &pad, -1).unwrap().0
    };
    let first = pad(1.0);
    let first_ptr = first.tensor().as_slice::<f32>().unwrap().as_ptr();
    drop(first);
    let out = pad(2.0);
    assert_eq!(out.tensor().as_slice::<f32>().unwrap().as_ptr(), first_ptr);
    let (mut want, mut row) = (Vec::new(), 0);
    for &n in &lengths {
        want.extend((row * 4..(row + n) * 4).map(|i| 2.0 + i as f32));
        want.extend(std::iter::repeat_n(-2.0, (65_536 - n) * 4));
        row += n;
    }
    assert_eq!(out.tensor().as_slice::<f32>().unwrap(), &want[..]);
    drop(out);

    // Threads allocating, writing, checking and freeing blocks of a few classes while the bound
    // changes: no block is handed to two owners (each sees only its own bytes), and the bound holds.
    set_host_cache_limit(16 * MIB);
    std::thread::scope(|scope| {
        for t in 0..4u8 {
            scope.spawn(move || {
                for i in 0..200usize {
                    let a = Allocation::uninit((1 + (i + t as usize) % 3) * MIB).unwrap();
                    let byte = t * 50 + (i % 50) as u8;
                    fill(&a, byte);
                    std::thread::yield_now();
                    assert!(all(&a, byte), "thread {t}, block {i}: written by another owner");
                }
            });
        }
        for limit in [0, 4, 16, 2, 16].iter().cycle().take(100) {
            set_host_cache_limit(limit * MIB);
            assert!(host_cache_info().0 <= limit * MIB);
        }
    });
    let (kept, limit) = host_cache_info();
    assert!(kept <= limit, "{kept} bytes kept over the bound {limit}");

    set_host_cache_limit(lodtensor::memory::DEFAULT_HOST_CACHE_LIMIT);
}
