//! Launchers of `kernels/group.cu`: positions grouped by key on a device, for the ops that add
//! several values into one place in the CPU's order (scatter_rows ADD, sequence_scatter). A stable
//! sort of the positions by key (LSD radix, 8 bits a pass over the bits the largest key needs),
//! and each key's first place in the sorted order; nothing goes through the host.

use super::device::Device;
use super::launch::{launch, launch_1d, max_blocks, Args};
use crate::error::Result;
use crate::memory::Allocation;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const FILE: &str = "group.cu";
/// Key bits a radix pass sorts by (group.cu's RADIX_BITS); its blocks have a thread per digit.
const RADIX_BITS: u32 = 8;
const RADIX_DIGITS: u32 = 1 << RADIX_BITS;
/// Keys per tile of a radix pass (group.cu's RADIX_TILE).
const RADIX_TILE: u64 = 1024;
/// Values per tile of the scan (group.cu's SCAN_TILE: SCAN_THREADS x SCAN_ITEMS).
const SCAN_THREADS: u32 = 256;
const SCAN_TILE: u64 = SCAN_THREADS as u64 * 8;

/// A cap on the blocks of a launch of the tile kernels below `max_blocks()`; each block loops over
/// tiles `gridDim.x` apart. A test lowers it to run those loops on small inputs; results do not
/// depend on it, so other tests running meanwhile are unaffected.
static GRID_MAX: AtomicU64 = AtomicU64::new(u64::MAX);

/// The grid for `tiles` tiles.
fn grid_for(tiles: u64) -> u32 {
    tiles.clamp(1, GRID_MAX.load(Ordering::Relaxed).min(max_blocks())) as u32
}

/// Positions sorted by key: `order` (n u64 values) is 0..n sorted by key, positions of one key
/// increasing; `keys` (n u64 values) is the keys in that order.
pub(crate) struct Sorted {
    pub(crate) keys: Arc<Allocation>,
    pub(crate) order: Arc<Allocation>,
}

/// Sorts positions `0..n` (n > 0) by `keys` (n u64 values on `d`, each below `key_count`),
/// stably. Queued on the device's stream; `keys` is only read.
pub(crate) fn sort_by_key(d: &Arc<Device>, keys: &Allocation, n: u64, key_count: u64) -> Result<Sorted> {
    let words = |count: u64| d.allocation(count as usize * 8);
    let tiles = n.div_ceil(RADIX_TILE);
    let grid = grid_for(tiles);
    let counts = words(RADIX_DIGITS as u64 * tiles)?;
    let key_bits = u64::BITS - key_count.saturating_sub(1).leading_zeros();
    // One pass at least: the first pass is what writes the positions.
    let passes = key_bits.div_ceil(RADIX_BITS).max(1);
    let (mut keys_in, mut vals_in): (u64, u64) = (keys.as_ptr() as u64, 0);
    let mut buffers = [(words(n)?, words(n)?), (words(n)?, words(n)?)];
    for pass in 0..passes {
        let shift = pass * RADIX_BITS;
        let (keys_out, vals_out) = &mut buffers[pass as usize % 2];
        let args = Args::new().arg(keys_in).arg(n).arg(shift).arg(tiles).buf(&counts);
        launch(d, FILE, "radix_count", [grid, 1, 1], [RADIX_DIGITS, 1, 1], args)?;
        scan_exclusive(d, &counts, RADIX_DIGITS as u64 * tiles)?;
        let args =
            Args::new().arg(keys_in).arg(vals_in).arg(n).arg(shift).arg(tiles).buf(&counts).buf(keys_out).buf(vals_out);
        launch(d, FILE, "radix_place", [grid, 1, 1], [RADIX_DIGITS, 1, 1], args)?;
        (keys_in, vals_in) = (keys_out.as_ptr() as u64, vals_out.as_ptr() as u64);
    }
    let [first, second] = buffers;
    let (keys, order) = if passes % 2 == 1 { first } else { second };
    Ok(Sorted { keys, order })
}

/// Each key's first place in `sorted` (n keys in increasing order, each below `key_count`):
/// `key_count + 1` u64 values, key k's places being `starts[k]..starts[k + 1]`.
pub(crate) fn key_starts(d: &Arc<Device>, sorted: &Allocation, n: u64, key_count: u64) -> Result<Arc<Allocation>> {
    let starts = d.allocation((key_count + 1) as usize * 8)?;
    let args = Args::new().buf(sorted).arg(n).arg(key_count).buf(&starts);
    launch_1d(d, FILE, "key_starts", key_count + 1, args)?;
    Ok(starts)
}

/// Replaces `data`'s first `n` u64 values by their exclusive prefix sums: each tile's scanned in
/// place, the tiles' totals scanned the same way, then added to their tiles.
pub(crate) fn scan_exclusive(d: &Arc<Device>, data: &Allocation, n: u64) -> Result<()> {
    let tiles = n.div_ceil(SCAN_TILE);
    if tiles == 0 {
        return Ok(());
    }
    let sums = d.allocation(tiles as usize * 8)?;
    let grid = grid_for(tiles);
    let args = Args::new().buf(data).arg(n).arg(tiles).buf(&sums);
    launch(d, FILE, "scan_tiles", [grid, 1, 1], [SCAN_THREADS, 1, 1], args)?;
    if tiles > 1 {
        scan_exclusive(d, &sums, tiles)?;
        launch_1d(d, FILE, "scan_add", n, Args::new().buf(data).arg(n).buf(&sums))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::device::{device, devices_for_test};
    use super::super::launch::upload;
    use super::super::KERNEL_SOURCES;
    use super::*;

    fn download(d: &Arc<Device>, a: &Allocation, n: usize) -> Vec<u64> {
        let mut bytes = vec![0u8; n * 8];
        d.dtoh(&mut bytes, a.as_ptr() as _).unwrap();
        bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect()
    }

    /// Device 0 and a xorshift stream (for keys and counts) from `seed`; `None` after saying the
    /// test was skipped.
    fn device_and_stream(seed: u64) -> Option<(Arc<Device>, impl FnMut() -> u64)> {
        devices_for_test()?;
        let mut s = seed;
        let next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        Some((device(0).unwrap(), next))
    }

    #[test]
    fn sizes_match_the_kernels() {
        let group_cu = KERNEL_SOURCES.iter().find(|(n, _)| *n == "group.cu").unwrap().1;
        for (name, value) in [
            ("RADIX_BITS", RADIX_BITS as u64),
            ("RADIX_DIGITS", RADIX_DIGITS as u64),
            ("RADIX_TILE", RADIX_TILE),
            ("SCAN_THREADS", SCAN_THREADS as u64),
            ("SCAN_ITEMS", SCAN_TILE / SCAN_THREADS as u64),
        ] {
            assert!(group_cu.contains(&format!("#define {name} {value}\n")), "{name}");
        }
    }

    /// The sort is a stable sort of the positions by key, and `starts` counts the keys below
    /// each key: checked against the host's stable sort, for key ranges of one to four radix
    /// passes (odd and even counts: the result in either buffer), one tile and many (a partial
    /// last tile included), and keys spread over the range or few at its top.
    #[test]
    fn positions_sort_stably_by_key() {
        let Some((d, mut next)) = device_and_stream(0x9e37_79b9_7f4a_7c15) else {
            return;
        };
        let cases: [(usize, u64); 10] = [
            (1, 1),
            (5, 1),
            (1023, 256),
            (1024, 257),
            (1025, 3),
            (3000, 65536),
            (3000, 65537),
            (20000, 300_000),
            (4096, 1 << 24),
            (2500, (1 << 24) + 1),
        ];
        for (k, &(n, key_count)) in cases.iter().enumerate() {
            let keys: Vec<u64> = (0..n)
                .map(|_| match k % 3 {
                    // Few distinct keys, at the top of the range: long groups, high digits.
                    1 => key_count - 1 - next() % key_count.min(4),
                    _ => next() % key_count,
                })
                .collect();
            let on_device = upload(&d, &keys).unwrap();
            let got = sort_by_key(&d, &on_device, n as u64, key_count).unwrap();
            let mut want: Vec<u64> = (0..n as u64).collect();
            want.sort_by_key(|&p| keys[p as usize]);
            assert!(download(&d, &got.order, n) == want, "order: {n} keys below {key_count}");
            let starts = key_starts(&d, &got.keys, n as u64, key_count).unwrap();
            let starts = download(&d, &starts, key_count as usize + 1);
            let mut sorted = keys.clone();
            sorted.sort_unstable();
            assert!(download(&d, &got.keys, n) == sorted, "keys: {n} keys below {key_count}");
            for (s, &start) in starts.iter().enumerate() {
                let below = sorted.partition_point(|&v| v < s as u64) as u64;
                assert_eq!(start, below, "starts[{s}]: {n} keys below {key_count}");
            }
        }
    }

    /// On grids smaller than their tiles (each block looping over several) the sort and the scan
    /// give what they give with a block a tile.
    #[test]
    fn blocks_loop_over_the_tiles_beyond_the_grid() {
        let Some((d, mut next)) = device_and_stream(0x5851_f42d_4c95_7f2d) else {
            return;
        };
        let (n, key_count) = (5000usize, 65537u64);
        let keys: Vec<u64> = (0..n).map(|_| next() % key_count).collect();
        let values: Vec<u64> = (0..SCAN_TILE * 7 + 3).map(|_| next() % 1000).collect();
        let run = || {
            let sorted = sort_by_key(&d, &upload(&d, &keys).unwrap(), n as u64, key_count).unwrap();
            let data = upload(&d, &values).unwrap();
            scan_exclusive(&d, &data, values.len() as u64).unwrap();
            (download(&d, &sorted.order, n), download(&d, &data, values.len()))
        };
        let wide = run();
        GRID_MAX.store(3, Ordering::Relaxed);
        let narrow = run();
        GRID_MAX.store(u64::MAX, Ordering::Relaxed);
        assert!(narrow == wide, "a grid of 3 blocks differs from a block a tile");
        let mut want: Vec<u64> = (0..n as u64).collect();
        want.sort_by_key(|&p| keys[p as usize]);
        assert!(wide.0 == want, "order");
    }

    /// The scan is exclusive, within a tile and across tiles of tiles (two levels of recursion:
    /// more than SCAN_TILE^2 values), partial last tiles included.
    #[test]
    fn scan_is_exclusive_across_tiles() {
        let Some((d, mut next)) = device_and_stream(0x2545_f491_4f6c_dd1d) else {
            return;
        };
        for n in [1u64, 7, SCAN_TILE, SCAN_TILE + 1, SCAN_TILE * SCAN_TILE + 5] {
            let values: Vec<u64> = (0..n).map(|_| next() % 1000).collect();
            let data = upload(&d, &values).unwrap();
            scan_exclusive(&d, &data, n).unwrap();
            let got = download(&d, &data, n as usize);
            let mut run = 0;
            for (i, (&g, &v)) in got.iter().zip(&values).enumerate() {
                assert_eq!(g, run, "n {n}: element {i}");
                run += v;
            }
        }
    }
}
