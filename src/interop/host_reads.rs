//! The host's reads of an Arrow array's buffers: LoD offsets, validity bits, text to name where it
//! breaks. On the CPU they are read in place; on a CUDA device each read is a copy and a wait. An
//! import plans the small pieces it will read before reading any, and [`HostReads::new`]
//! copies those down together, after one wait, so that an import of several LoD levels or
//! columns does not wait once for each.

use crate::dim::Dim;
use crate::dtype::DType;
use crate::error::{err, Result};
use crate::memory::lists;
use crate::place::Place;
use crate::tensor::Tensor;
use std::borrow::Cow;
use std::ffi::c_void;

/// The most bytes a plan copies down up front. A wait for the device (a tiny launch and its wait
/// took 9-11 us on an H200) costs more than copying this much more than a read needs; a plan takes
/// each list below the first whole (its window is not known until the list above is read), so
/// this bounds the excess.
const PREFETCH_BYTES: usize = 64 << 10;

/// The pieces of device memory, `(address, length)`, that an import will read, up to
/// [`PREFETCH_BYTES`] in all: a piece that does not fit is left out, to be read when it is needed.
#[derive(Default)]
pub(super) struct Plan {
    pieces: Vec<(usize, usize)>,
    bytes: usize,
}

impl Plan {
    /// Adds `len` bytes from `offset` past `ptr`, if they fit.
    pub(super) fn add(&mut self, ptr: *const c_void, offset: usize, len: usize) {
        let Some(at) = (ptr as usize).checked_add(offset).filter(|at| at.checked_add(len).is_some()) else { return };
        let Some(bytes) = self.bytes.checked_add(len).filter(|&b| b <= PREFETCH_BYTES) else { return };
        if len > 0 && self.pieces.try_reserve(1).is_ok() {
            self.pieces.push((at, len));
            self.bytes = bytes;
        }
    }
}

/// How the host reads an array's buffers on `place`: in place on the CPU; on a CUDA device from
/// host copies of a [`Plan`]'s pieces, each `(address, copy)`, or else one read at a time.
pub(super) struct HostReads {
    place: Place,
    copies: Vec<(usize, Tensor)>,
}

impl HostReads {
    /// Reads of buffers on `place`, with the pieces of `plan` copied to the host first, after one
    /// wait for the device where there are any. A piece that is not memory of the device is left
    /// out: its read, when the import comes to it, gives the error that names it.
    ///
    /// # Safety
    /// Each piece is readable on `place` (within buffers that an array's type and lengths say it
    /// has) until the import ends.
    pub(super) unsafe fn new(place: Place, plan: Plan) -> Result<HostReads> {
        const WHAT: &str = "the import's reads";
        let mut reads = HostReads { place, copies: Vec::new() };
        if place == Place::Cpu {
            return Ok(reads);
        }
        let mut kept = lists::with_capacity(plan.pieces.len(), WHAT)?;
        for (at, len) in plan.pieces {
            if let Ok(t) = Tensor::borrowed(place, DType::U8, Dim::new(&[len])?, at as *mut u8, len, None) {
                kept.push((at, t));
            }
        }
        let sources = lists::collect(kept.iter().map(|(_, t)| t), WHAT)?;
        let copies = crate::backend::cuda::copy_all_to_host(&sources)?;
        reads.copies = lists::with_capacity(kept.len(), WHAT)?;
        reads.copies.extend(kept.iter().map(|&(at, _)| at).zip(copies));
        Ok(reads)
    }

    pub(super) fn place(&self) -> Place {
        self.place
    }

    /// `len` bytes at `ptr + offset` for the host to read: from the copy that holds them, else as
    /// [`read_bytes`] reads them.
    ///
    /// # Safety
    /// As [`read_bytes`].
    pub(super) unsafe fn read(
        &self,
        ptr: *const c_void,
        offset: usize,
        len: usize,
        path: &str,
    ) -> Result<Cow<'_, [u8]>> {
        let at = (ptr as usize).wrapping_add(offset);
        let held = self.copies.iter().find(|(start, copy)| {
            at.checked_sub(*start).is_some_and(|skip| skip.checked_add(len).is_some_and(|end| end <= copy.nbytes()))
        });
        match held {
            Some((start, copy)) => Ok(Cow::Borrowed(&copy.bytes()?[at - start..][..len])),
            None => read_bytes(self.place, ptr, offset, len, path),
        }
    }
}

/// `len` bytes at `ptr + offset` on `place` for the host to read: in place on the CPU, a copy
/// of them on a CUDA device (checked to be its memory first).
///
/// # Safety
/// The bytes are readable on `place`.
pub(super) unsafe fn read_bytes<'a>(
    place: Place,
    ptr: *const c_void,
    offset: usize,
    len: usize,
    path: &str,
) -> Result<Cow<'a, [u8]>> {
    let at = ptr.cast::<u8>().add(offset);
    let Place::Cuda(n) = place else { return Ok(Cow::Borrowed(std::slice::from_raw_parts(at, len))) };
    let mut host = Vec::new();
    host.try_reserve_exact(len)
        .map_err(|_| err!(OutOfMemory, "{path}: {len} bytes of it cannot be read to the host"))?;
    host.resize(len, 0);
    if len > 0 {
        let t = Tensor::borrowed(Place::Cuda(n), DType::U8, Dim::new(&[len])?, at.cast_mut(), len, None)
            .map_err(|e| e.context(&format!("{path}: ")))?;
        crate::backend::cuda::copy_bytes_to_host(&t, &mut host)?;
    }
    Ok(Cow::Owned(host))
}
