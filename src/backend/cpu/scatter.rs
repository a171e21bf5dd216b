//! The scatter-add kernel of `sequence_scatter`: sequence `i` of the ids adds its updates into row
//! `i` of the output. Parallel over output rows; each row's updates are applied by one task in id
//! order, so duplicates accumulate in the same order whatever the thread count.

use super::pool::for_each_row_chunk;
use super::rows::{copy_elements, store_fence, streams, TASK_BYTES};
use crate::dtype::Scalar;
use crate::error::Result;

/// `out` has rows of `width` elements. For each row `i` it first copies row `i` of `src` (when
/// given; in-place callers pass `None`), then, for every `p` in `ids_offsets[i]..ids_offsets[i+1]`
/// (rows past the last sequence get no update), adds `updates[p]` to element `ids[p]` of the row.
/// The caller has checked every id against `[0, width)` and the sequence count against the rows.
pub fn scatter_add_rows<T: Scalar, I: Copy + Into<i64> + Sync>(
    src: Option<&[T]>,
    width: usize,
    ids_offsets: &[usize],
    ids: &[I],
    updates: &[T],
    out: &mut [T],
) -> Result<()> {
    if width == 0 {
        return Ok(()); // no element to write, and no id can be in [0, 0)
    }
    let rows = out.len() / width;
    // A large copy is written with streaming stores by the row gathers' rule, each row counted as
    // a run of its own (it ends with a fence, before its updates read back their lines).
    let stream = src.is_some() && streams(std::mem::size_of_val(out), rows);
    let per = TASK_BYTES.div_ceil(width * std::mem::size_of::<T>());
    for_each_row_chunk(out, width, per, |rows, seg| {
        for (i, row) in rows.zip(seg.chunks_exact_mut(width)) {
            if let Some(src) = src {
                copy_elements(row, &src[i * width..(i + 1) * width], stream);
                if stream {
                    store_fence();
                }
            }
            if i + 1 < ids_offsets.len() {
                for p in ids_offsets[i]..ids_offsets[i + 1] {
                    let c = ids[p].into() as usize;
                    row[c] = row[c].add(updates[p]);
                }
            }
        }
    })
}
