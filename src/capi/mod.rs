//! The C API: handles, status codes, argument checks and conversions. Nothing here computes; each
//! export validates its arguments, calls the Rust API and converts the result.
//!
//! Every export runs inside [`boundary`], so a panic becomes `LODTENSOR_INTERNAL` instead of
//! unwinding into C (which would abort the host process).

#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)]

mod args;
mod arrow;
mod dlpack;
mod expand;
mod info;
mod lod;
mod pad;
mod place;
mod pooling;
mod scatter;
mod scatter_rows;
mod sequence_misc;
mod serialize;
mod tensor;
mod tensor_array;
mod tensor_ops;
mod types;

pub use arrow::*;
pub use dlpack::*;
pub use expand::*;
pub use info::*;
pub use lod::*;
pub use pad::*;
pub use place::*;
pub use pooling::*;
pub use scatter::*;
pub use scatter_rows::*;
pub use sequence_misc::*;
pub use serialize::*;
pub use tensor::*;
pub use tensor_array::*;
pub use tensor_ops::*;
pub use types::*;

use crate::error::Error;
use std::cell::RefCell;
use std::ffi::{CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Keeps `message` as this thread's last error. A call made while the thread exits, after its
/// thread-locals are gone (from a later thread-exit destructor of the caller's), keeps its status
/// but has nowhere to put the message: it is dropped rather than a panic outside any catch.
fn set_last_error(message: &str) {
    // Interior NULs would truncate the C string; they never come from our messages, but be safe.
    let c = CString::new(message.replace('\0', " ")).unwrap_or_default();
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = c);
}

/// The text of the last failure on this thread (valid until the next failure on this thread);
/// "" once the thread's thread-locals are gone.
pub(crate) fn last_error_ptr() -> *const std::ffi::c_char {
    LAST_ERROR.try_with(|e| e.borrow().as_ptr()).unwrap_or(c"".as_ptr())
}

impl Error {
    pub fn status(&self) -> lodtensor_status_t {
        use lodtensor_status_t::*;
        match self {
            Error::NullArgument(_) => LODTENSOR_NULL_ARGUMENT,
            Error::InvalidArgument(_) => LODTENSOR_INVALID_ARGUMENT,
            Error::InvalidLod(_) => LODTENSOR_INVALID_LOD,
            Error::OutOfRange(_) => LODTENSOR_OUT_OF_RANGE,
            Error::BufferTooSmall(_) => LODTENSOR_BUFFER_TOO_SMALL,
            Error::Unsupported(_) => LODTENSOR_UNSUPPORTED,
            Error::OutOfMemory(_) => LODTENSOR_OUT_OF_MEMORY,
            Error::Internal(_) => LODTENSOR_INTERNAL,
            Error::CallbackFailed(_) => LODTENSOR_CALLBACK_FAILED,
        }
    }
}

/// Runs an export body: `Ok` is `LODTENSOR_OK`; an error or a panic records its message for
/// `lodtensor_last_error_message` and becomes a status code.
pub(crate) fn boundary(f: impl FnOnce() -> crate::Result<()>) -> lodtensor_status_t {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => lodtensor_status_t::LODTENSOR_OK,
        Ok(Err(e)) => {
            set_last_error(&e.to_string());
            e.status()
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_last_error(&format!("internal error: a panic was caught at the C boundary: {what}"));
            lodtensor_status_t::LODTENSOR_INTERNAL
        }
    }
}

/// Runs an infallible export that returns a static C string; a panic yields `fallback`.
pub(crate) fn boundary_str(
    fallback: &'static CStr,
    f: impl FnOnce() -> *const std::ffi::c_char,
) -> *const std::ffi::c_char {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback.as_ptr())
}
mod beam_search;
pub use beam_search::*;
mod fill_on;
pub use fill_on::*;
