//! Working lists whose length comes from the caller's data (one entry per row, sequence, prefix
//! or source): reserved before they are filled, so that a list the allocator refuses is
//! `OutOfMemory` naming it, where `Vec`'s own growth would abort the process.

use super::host_block::HUGE_PAGE_MIN;
use super::pages;
use crate::error::{err, Error, Result};

fn refused<T>(n: usize, what: &str) -> Error {
    err!(OutOfMemory, "{what}: no memory for a list of {n} entries ({} bytes each)", std::mem::size_of::<T>())
}

/// An empty list with room for `n` entries. A list of [`HUGE_PAGE_MIN`] bytes or more (millions
/// of offsets), which the allocator maps afresh, is advised to take huge pages: 4 KiB pages
/// faulted in one by one made filling such a list take twice as long (benches/REPORT.md).
pub(crate) fn with_capacity<T>(n: usize, what: &str) -> Result<Vec<T>> {
    let mut v: Vec<T> = Vec::new();
    v.try_reserve_exact(n).map_err(|_| refused::<T>(n, what))?;
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes >= HUGE_PAGE_MIN {
        pages::advise_huge_inside(v.as_mut_ptr().cast(), bytes);
    }
    Ok(v)
}

/// Room in `list` for `more` entries past its length, as `Vec`'s growth makes it (amortised), for
/// a list that grows by runs whose lengths are not known up front.
pub(crate) fn reserve<T>(list: &mut Vec<T>, more: usize, what: &str) -> Result<()> {
    list.try_reserve(more).map_err(|_| refused::<T>(list.len().saturating_add(more), what))
}

/// `n` copies of `value`.
pub(crate) fn filled<T: Clone>(n: usize, value: T, what: &str) -> Result<Vec<T>> {
    let mut v = with_capacity(n, what)?;
    v.resize(n, value);
    Ok(v)
}

/// The entries of `items`, whose length the iterator knows.
pub(crate) fn collect<I: ExactSizeIterator>(items: I, what: &str) -> Result<Vec<I::Item>> {
    let mut v = with_capacity(items.len(), what)?;
    v.extend(items);
    Ok(v)
}

/// The entries of `items` (at most `n` of them) until the first error, which is returned.
pub(crate) fn try_collect<T>(n: usize, items: impl IntoIterator<Item = Result<T>>, what: &str) -> Result<Vec<T>> {
    let mut v = with_capacity(n, what)?;
    for item in items {
        v.push(item?);
    }
    Ok(v)
}

/// A copy of `items`.
pub(crate) fn copy_of<T: Clone>(items: &[T], what: &str) -> Result<Vec<T>> {
    let mut v = with_capacity(items.len(), what)?;
    v.extend_from_slice(items);
    Ok(v)
}

/// Offset levels to be filled: one a length of `lengths`, each holding its first offset 0 and room
/// for that many offsets in all.
pub(crate) fn offset_levels(lengths: impl ExactSizeIterator<Item = usize>, what: &str) -> Result<Vec<Vec<usize>>> {
    let n = lengths.len();
    let levels = lengths.map(|len| {
        let mut level = with_capacity(len.max(1), what)?;
        level.push(0);
        Ok(level)
    });
    try_collect(n, levels, what)
}

/// A copy of LoD levels (or any lists of lists), each level reserved as the lists above.
pub(crate) fn copy_of_levels<T: Clone>(levels: &[Vec<T>], what: &str) -> Result<Vec<Vec<T>>> {
    try_collect(levels.len(), levels.iter().map(|l| copy_of(l, what)), what)
}

#[cfg(all(test, target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod tests {
    use super::*;

    /// The flags of the mapping that holds `addr`, as /proc/self/smaps lists them: each mapping's
    /// first line starts with its range, `start-end` in hex, and its last is `VmFlags: ...`.
    fn mapping_flags(addr: usize) -> Option<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            let range = line.split_whitespace().next().and_then(|r| r.split_once('-'));
            if let Some((Ok(start), Ok(end))) =
                range.map(|(a, b)| (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)))
            {
                inside = (start..end).contains(&addr);
            } else if let Some(flags) = line.strip_prefix("VmFlags:").filter(|_| inside) {
                return Some(flags.trim().to_string());
            }
        }
        None
    }

    /// A list of HUGE_PAGE_MIN bytes or more is advised to take huge pages (the kernel marks its
    /// mapping `hg`); the advice needs whole 2 MiB pages inside the list, which it has.
    #[test]
    fn large_lists_are_advised_to_take_huge_pages() {
        if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists() {
            eprintln!("skipped: this kernel has no transparent huge pages");
            return;
        }
        let mut list: Vec<u64> = with_capacity(HUGE_PAGE_MIN / 8 + 1, "test").unwrap();
        let middle = list.as_mut_ptr() as usize + HUGE_PAGE_MIN / 2;
        let Some(flags) = mapping_flags(middle) else {
            eprintln!("skipped: no /proc/self/smaps entry for the list");
            return;
        };
        assert!(flags.split_whitespace().any(|f| f == "hg"), "flags of the list's mapping: {flags}");
    }
}
