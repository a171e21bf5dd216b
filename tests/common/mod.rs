//! Support shared by the integration tests: a seeded generator, random multi-level LoDs, the
//! thread-count determinism check and the list of pooling types. Each test crate uses part of it.
#![allow(dead_code)]

use lodtensor::backend::cpu::pool::set_num_threads;
use lodtensor::PoolType;
use proptest::prelude::*;

/// Whether this process runs with guarded allocations (`LODTENSOR_GUARD_PAGES=1`): every block is
/// made for its request and freed when dropped, so the host and device caches keep nothing, and a
/// test of what they keep says so and stops (the runs without the variable cover it).
pub fn caches_off_for_guard_pages() -> bool {
    let on = std::env::var_os("LODTENSOR_GUARD_PAGES").is_some_and(|v| v == "1");
    if on {
        eprintln!("skipped: LODTENSOR_GUARD_PAGES=1 turns the block caches off");
    }
    on
}

/// The rounds of a randomized test: `n`, or a fiftieth of it (at least 2) under Miri, whose
/// interpreter runs a round thousands of times slower (`scripts/miri.sh`).
pub fn rounds(n: usize) -> usize {
    if cfg!(miri) {
        n.div_ceil(50).max(2)
    } else {
        n
    }
}

/// What a randomized test's count of one kind of outcome must exceed: `n`, or 0 under Miri, where
/// [`rounds`] leaves too few rounds for a share.
pub fn tally_floor(n: usize) -> usize {
    if cfg!(miri) {
        0
    } else {
        n
    }
}

/// 2^k exactly, for a normal power (`powi`'s precision is unspecified, and Miri perturbs it).
pub fn pow2(k: i32) -> f64 {
    assert!((-1022..=1023).contains(&k), "2^{k} is not a normal f64");
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// Every pooling type.
pub const POOLS: [PoolType; 7] =
    [PoolType::Sum, PoolType::Average, PoolType::Sqrt, PoolType::Max, PoolType::Min, PoolType::First, PoolType::Last];

/// A small xorshift generator, so the tests need no extra dependency. Seed it with an odd value
/// (zero stays zero).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// Random lengths for 1 to 4 levels: 1 to `max_top` top-level sequences, every sequence holding 0
/// to `max_len` entries of the level below, so empty sequences occur at every level (and lower
/// levels may hold no sequence at all).
pub fn nested_lengths(max_top: usize, max_len: usize) -> impl Strategy<Value = Vec<Vec<usize>>> {
    (1usize..=4, 1usize..=max_top, any::<u64>()).prop_map(move |(levels, top, seed)| {
        let mut rng = Rng(seed | 1);
        let mut out = Vec::new();
        let mut count = top;
        for _ in 0..levels {
            let level: Vec<usize> = (0..count).map(|_| rng.below(max_len + 1)).collect();
            count = level.iter().sum();
            out.push(level);
        }
        out
    })
}

/// `run` with the library's pool at 1 thread and at 4 threads, then back to the default; the
/// caller asserts the two results are equal. (Other tests running meanwhile see a different pool
/// size, which by design cannot change their results.)
pub fn with_1_and_4_threads<R>(run: impl Fn() -> R) -> (R, R) {
    set_num_threads(1).unwrap();
    let one = run();
    set_num_threads(4).unwrap();
    let four = run();
    set_num_threads(0).unwrap();
    (one, four)
}

/// sequence_expand where x's rows times the copies overflow `usize`: x (rows of no bytes) has one
/// sequence of 2^60 rows among 300,000 empty ones, each empty one copied once and the long one
/// `long_copies` times (enough sequences for the host's offsets to be made in many chunks). Both
/// inputs go to `place`; on 1 and 4 threads, the output's LoD is checked against a formula while
/// its rows fit in int64 (up to 7 copies), and past that the op must be `OutOfMemory` (the rows
/// overflow the output's dims, or from 16 copies `usize`).
pub fn expand_of_a_huge_sequence(long_copies: usize, place: lodtensor::Place) {
    use lodtensor::{sequence_expand, to_place, DType, Dim, Error, LoDTensor, Lod, Tensor};
    let huge = 1usize << 60;
    let lengths: Vec<usize> = (0..300_001).map(|i| if i == 150_000 { huge } else { 0 }).collect();
    let repeats: Vec<usize> = (0..300_001).map(|i| if i == 150_000 { long_copies } else { 1 }).collect();
    let copies = 300_000 + long_copies;
    let of = |rows: usize, lengths: Vec<usize>| {
        let t = LoDTensor::new(
            Tensor::zeros(DType::U8, Dim::new(&[rows, 0]).unwrap()).unwrap(),
            Lod::from_lengths(&[lengths]).unwrap(),
        );
        to_place(&t.unwrap(), place).unwrap()
    };
    let (x, y) = (of(huge, lengths), of(copies, repeats));
    let fits = huge.checked_mul(long_copies).filter(|&rows| rows <= i64::MAX as usize);
    with_1_and_4_threads(|| match (fits, sequence_expand(&x, &y, 0)) {
        (Some(_), Ok(out)) => {
            let want: Vec<usize> = (0..=copies).map(|c| huge * c.saturating_sub(150_000).min(long_copies)).collect();
            assert!(out.lod().levels()[0] == want, "{long_copies} copies: LoD");
            assert_eq!(out.tensor().place(), place);
        }
        (None, Err(Error::OutOfMemory(m))) => assert!(m.contains("overflows"), "{m}"),
        (_, other) => panic!("{long_copies} copies: {:?}", other.map(|_| ())),
    });
}
