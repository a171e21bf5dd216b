//! Argument and result types of the sequence kernels' launchers (pad, pooling, softmax, cast, the
//! beam-search steps), in every build (the stand-ins of a build without CUDA take them too).

use crate::dtype::Element;
use crate::error::Result;
use crate::lod::{Lod, LodLevel};
use crate::tensor::Tensor;

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

/// The sources of a beam-search step: level `level` of `lod` gives each source its prefix rows, and
/// `rows` is that level in absolute form, which the step's output LoD takes as its level 0. On a
/// device the step reads the copy of those row offsets that `lod` keeps there (uploaded at the
/// first step that uses this LoD there; a step's output LoD carries the next step's, made by the
/// step itself).
pub struct StepSources<'a> {
    pub lod: &'a Lod,
    pub level: usize,
    pub rows: Vec<usize>,
}

impl<'a> StepSources<'a> {
    /// Level `level` of `lod` (`OutOfRange` if it has no such level).
    pub fn new(lod: &'a Lod, level: usize) -> Result<StepSources<'a>> {
        Ok(StepSources { lod, level, rows: lod.abs_level(level)? })
    }
}

/// The outputs of a beam-search step on a device: `ids` (int64 `[N, 1]`), `scores` (`[N, 1]`) and
/// `parents` (int32 `[N]`) there; their LoD `[sources' rows, row offsets]` on the host, keeping
/// device copies of its row offsets and of its level 0 in rows (the next step's sources); and,
/// where the caller asked for them, host copies of the three outputs, which come down with the
/// row offsets in the step's one copy to the host.
pub struct DeviceStep {
    pub ids: Tensor,
    pub scores: Tensor,
    pub parents: Tensor,
    pub lod: Lod,
    pub host: Option<[Tensor; 3]>,
}
