//! Argument types of the sequence kernels' launchers (pad, pooling, softmax, cast), in every build
//! (the stand-ins of a build without CUDA take them too).

use crate::dtype::Element;
use crate::lod::LodLevel;

/// How a pooled sum is divided: by 1, by the sequence's length, by its square root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SumDivisor {
    One = 0,
    Length = 1,
    SqrtLength = 2,
}

/// Where the segments of a softmax lie in the flat elements.
pub enum Segments<'a> {
    /// `[bounds[i], bounds[i+1])`: a LoD level whose offsets count elements.
    Bounds(LodLevel<'a>),
    /// `[i * width, (i + 1) * width)` for `rows` rows.
    Rows { rows: usize, width: usize },
}

/// The bits of an element, zero-extended: the kernel reads the element from the slot's low bytes.
pub fn element_bits<T: Element>(v: T) -> u64 {
    let mut bytes = [0u8; 8];
    let n = std::mem::size_of::<T>().min(8);
    // SAFETY: `Element` types are plain data without padding; at most 8 of their bytes are read.
    bytes[..n].copy_from_slice(unsafe { std::slice::from_raw_parts((&v as *const T).cast::<u8>(), n) });
    u64::from_le_bytes(bytes)
}
