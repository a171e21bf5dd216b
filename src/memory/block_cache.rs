//! The bounded set of freed blocks behind both caching allocators (the host's blocks and each CUDA
//! device's): a request takes the most recently kept block of its size class, and the
//! longest-kept blocks are given back first when the bound would be passed. The owner holds the
//! lock and frees what the set hands back once the lock is released.
//!
//! Blocks are indexed by size and by the order they were kept, so a request and an eviction cost
//! a few map steps however many blocks are kept (a list searched from the newest took 5.9 us for
//! a request that none of 4000 kept blocks served, benches/REPORT.md).

use std::collections::{BTreeMap, VecDeque};

/// Freed blocks of type `B` (a pointer or an owning handle), each with its size in bytes; their
/// total never exceeds `limit`.
pub(crate) struct BlockCache<B> {
    limit: usize,
    bytes: usize,
    /// The number the next kept block gets: blocks kept earlier have smaller numbers.
    next: u64,
    /// Every kept block by its number, so the first is the longest kept.
    by_age: BTreeMap<u64, (usize, B)>,
    /// The numbers of the kept blocks of each size, longest kept first; no empty entries.
    by_size: BTreeMap<usize, VecDeque<u64>>,
}

impl<B> BlockCache<B> {
    pub(crate) const fn new(limit: usize) -> BlockCache<B> {
        BlockCache { limit, bytes: 0, next: 0, by_age: BTreeMap::new(), by_size: BTreeMap::new() }
    }

    /// The bytes kept now.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The bound on the bytes kept.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// The most recently kept block of exactly `size` bytes.
    pub(crate) fn take(&mut self, size: usize) -> Option<B> {
        let numbers = self.by_size.get_mut(&size)?;
        let number = numbers.pop_back().expect("no empty entries");
        if numbers.is_empty() {
            self.by_size.remove(&size);
        }
        let (size, block) = self.by_age.remove(&number).expect("indexed blocks are kept");
        self.bytes -= size;
        Some(block)
    }

    /// Keeps `block` of `size` bytes; returns the blocks the caller must free now: the
    /// longest-kept ones that no longer fit under the bound, or `block` itself when it is larger
    /// than the bound.
    pub(crate) fn keep(&mut self, size: usize, block: B) -> Vec<B> {
        if size > self.limit {
            return vec![block];
        }
        self.bytes += size;
        self.by_age.insert(self.next, (size, block));
        self.by_size.entry(size).or_default().push_back(self.next);
        self.next += 1;
        self.evict()
    }

    /// Sets the bound; returns the blocks over it, which the caller must free.
    pub(crate) fn set_limit(&mut self, limit: usize) -> Vec<B> {
        self.limit = limit;
        self.evict()
    }

    /// Removes every kept block; the caller must free them (a device's cache, emptied on request).
    #[cfg_attr(not(any(feature = "cuda", feature = "cuda-emulator")), allow(dead_code))]
    pub(crate) fn drain(&mut self) -> Vec<B> {
        self.bytes = 0;
        self.by_size.clear();
        std::mem::take(&mut self.by_age).into_values().map(|(_, b)| b).collect()
    }

    fn evict(&mut self) -> Vec<B> {
        let mut out = Vec::new();
        while self.bytes > self.limit {
            let (number, (size, block)) = self.by_age.pop_first().expect("bytes > 0 means a block is kept");
            // The longest-kept block overall is the longest kept of its size.
            let numbers = self.by_size.get_mut(&size).expect("kept blocks are indexed");
            debug_assert_eq!(numbers.front(), Some(&number));
            numbers.pop_front();
            if numbers.is_empty() {
                self.by_size.remove(&size);
            }
            self.bytes -= size;
            out.push(block);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_under_the_bound_and_gives_back_the_longest_kept_first() {
        let mut c = BlockCache::new(10);
        assert_eq!(c.keep(4, 'a'), vec![]);
        assert_eq!(c.keep(4, 'b'), vec![]);
        assert_eq!(c.keep(4, 'c'), vec!['a']);
        assert_eq!((c.bytes(), c.limit()), (8, 10));
        // Larger than the bound: never kept.
        assert_eq!(c.keep(11, 'd'), vec!['d']);
        assert_eq!(c.keep(2, 'e'), vec![]);
        // The most recent block of the size is taken; other sizes stay.
        assert_eq!(c.keep(4, 'f'), vec!['b']);
        assert_eq!(c.take(4), Some('f'));
        assert_eq!(c.take(3), None);
        assert_eq!(c.bytes(), 6);
        assert_eq!(c.set_limit(2), vec!['c']);
        assert_eq!(c.bytes(), 2);
        assert_eq!(c.drain(), vec!['e']);
        assert_eq!(c.bytes(), 0);
        assert_eq!(c.set_limit(0), vec![]);
        assert_eq!(c.keep(1, 'g'), vec!['g']);
    }

    /// Random keeps, takes and bounds against a plain list searched the way the cache's rules
    /// say: takes the newest block of the size, evicts the oldest overall.
    #[test]
    fn equals_a_plain_list() {
        let mut c = BlockCache::new(64);
        let mut list: Vec<(usize, u32)> = Vec::new(); // oldest first
        let mut limit = 64;
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let evict = |list: &mut Vec<(usize, u32)>, limit: usize| {
            let mut out = Vec::new();
            while list.iter().map(|b| b.0).sum::<usize>() > limit {
                out.push(list.remove(0).1);
            }
            out
        };
        for id in 0..20_000u32 {
            let size = 1 + (next() % 6) as usize * 3;
            match next() % 8 {
                0..=3 => {
                    let expect = if size > limit {
                        vec![id]
                    } else {
                        list.push((size, id));
                        evict(&mut list, limit)
                    };
                    assert_eq!(c.keep(size, id), expect);
                }
                4..=6 => {
                    let expect = list.iter().rposition(|b| b.0 == size).map(|i| list.remove(i).1);
                    assert_eq!(c.take(size), expect);
                }
                _ => {
                    limit = (next() % 80) as usize;
                    assert_eq!(c.set_limit(limit), evict(&mut list, limit));
                }
            }
            assert_eq!(c.bytes(), list.iter().map(|b| b.0).sum::<usize>());
        }
        assert_eq!(c.drain(), list.iter().map(|b| b.1).collect::<Vec<_>>());
    }
}
