//! Working lists whose length comes from the caller's data (one entry per row, sequence, prefix
//! or source): reserved before they are filled, so that a list the allocator refuses is
//! `OutOfMemory` naming it, where `Vec`'s own growth would abort the process.

use crate::error::{err, Error, Result};

fn refused<T>(n: usize, what: &str) -> Error {
    err!(OutOfMemory, "{what}: no memory for a list of {n} entries ({} bytes each)", std::mem::size_of::<T>())
}

/// An empty list with room for `n` entries.
pub(crate) fn with_capacity<T>(n: usize, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| refused::<T>(n, what))?;
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
