//! The bounded set of freed blocks behind both caching allocators (the host's blocks and each CUDA
//! device's): a request takes the most recently kept block of its size class, and the
//! longest-kept blocks are given back first when the bound would be passed. The owner holds the
//! lock and frees what the set hands back once the lock is released.
//!
//! Blocks are grouped by size, so a request costs a binary search over the sizes however many
//! blocks are kept (one list of blocks searched from the newest took 5.9 us for a request that
//! none of 4000 kept blocks served, and 1.3-2.3 ms a call for a loop of 1500 outputs of falling
//! sizes; benches/REPORT.md, eleventh round).

use std::collections::VecDeque;

/// Freed blocks of type `B` (a pointer or an owning handle), each with its size in bytes; their
/// total never exceeds `limit`.
pub(crate) struct BlockCache<B> {
    limit: usize,
    bytes: usize,
    /// The number the next kept block gets: blocks kept earlier have smaller numbers.
    next: u64,
    /// Per size, in increasing size order: the kept blocks of that size with their numbers,
    /// longest kept first. A size stays when its last block is taken (there is one per size class
    /// ever kept), so that a loop whose output is taken and kept again every call allocates
    /// nothing here and finds its size where it was.
    sizes: Vec<(usize, VecDeque<(u64, B)>)>,
}

impl<B> BlockCache<B> {
    pub(crate) const fn new(limit: usize) -> BlockCache<B> {
        BlockCache { limit, bytes: 0, next: 0, sizes: Vec::new() }
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
        let at = self.sizes.binary_search_by_key(&size, |e| e.0).ok()?;
        let (_, block) = self.sizes[at].1.pop_back()?;
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
        let at = match self.sizes.binary_search_by_key(&size, |e| e.0) {
            Ok(at) => at,
            Err(at) => {
                self.sizes.insert(at, (size, VecDeque::new()));
                at
            }
        };
        self.sizes[at].1.push_back((self.next, block));
        self.next += 1;
        self.bytes += size;
        self.evict()
    }

    /// Sets the bound; returns the blocks over it, which the caller must free.
    pub(crate) fn set_limit(&mut self, limit: usize) -> Vec<B> {
        self.limit = limit;
        self.evict()
    }

    /// Removes every kept block; the caller must free them (a device's cache, emptied on request,
    /// and when the device runs out). They come in no particular order, out of the cache's own
    /// lists, so that emptying it asks the allocator for nothing.
    #[cfg_attr(not(any(feature = "cuda", feature = "cuda-emulator")), allow(dead_code))]
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = B> {
        self.bytes = 0;
        std::mem::take(&mut self.sizes).into_iter().flat_map(|(_, blocks)| blocks.into_iter().map(|(_, b)| b))
    }

    /// Gives back the longest-kept blocks until the bound holds. The longest-kept block is the
    /// first of its size, so each one given back is found among the sizes' first blocks: a scan
    /// of the sizes, which only a cache at its bound pays.
    fn evict(&mut self) -> Vec<B> {
        let mut out = Vec::new();
        while self.bytes > self.limit {
            let oldest = self.sizes.iter_mut().filter(|e| !e.1.is_empty()).min_by_key(|e| e.1[0].0);
            let (size, blocks) = oldest.expect("bytes > 0 means a block is kept");
            out.push(blocks.pop_front().expect("not empty").1);
            self.bytes -= *size;
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
        assert_eq!(c.drain().collect::<Vec<_>>(), vec!['e']);
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
        let mut drained: Vec<u32> = c.drain().collect();
        drained.sort_unstable();
        let mut kept: Vec<u32> = list.iter().map(|b| b.1).collect();
        kept.sort_unstable();
        assert_eq!(drained, kept);
        assert_eq!((c.bytes(), c.take(1)), (0, None));
    }
}
