//! The bounded list of freed blocks behind both caching allocators (the host's large blocks and
//! each CUDA device's): a request takes the most recently kept block of its size class, and the
//! longest-kept blocks are given back first when the bound would be passed. The owner holds the
//! lock and frees what the list hands back once the lock is released.

use std::collections::VecDeque;

/// Freed blocks of type `B` (a pointer or an owning handle), longest-kept first, each with its
/// size in bytes; their total never exceeds `limit`.
pub(crate) struct BlockCache<B> {
    limit: usize,
    bytes: usize,
    blocks: VecDeque<(usize, B)>,
}

impl<B> BlockCache<B> {
    pub(crate) const fn new(limit: usize) -> BlockCache<B> {
        BlockCache { limit, bytes: 0, blocks: VecDeque::new() }
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
        let i = self.blocks.iter().rposition(|b| b.0 == size)?;
        let (size, block) = self.blocks.remove(i)?;
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
        self.blocks.push_back((size, block));
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
        self.blocks.drain(..).map(|(_, b)| b).collect()
    }

    fn evict(&mut self) -> Vec<B> {
        let mut out = Vec::new();
        while self.bytes > self.limit {
            let (size, block) = self.blocks.pop_front().expect("bytes > 0 means a block is kept");
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
}
