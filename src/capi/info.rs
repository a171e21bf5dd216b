//! Library-wide exports: version, status texts, the last error, the panic self-test, the thread
//! pool's size and the host block cache's bound.

use super::types::lodtensor_status_t;
use super::{boundary, boundary_str, last_error_ptr};
use std::ffi::{c_char, CStr};

const VERSION: &CStr = match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
    Ok(v) => v,
    Err(_) => panic!("version string has an interior NUL"),
};

/// The library version as "MAJOR.MINOR.PATCH" (static storage; never NULL). Compare with
/// `LODTENSOR_VERSION_STRING` to detect a header/library mismatch.
#[no_mangle]
pub extern "C" fn lodtensor_version() -> *const c_char {
    boundary_str(c"unknown", || VERSION.as_ptr())
}

/// A static, human-readable name for a status code ("unknown status" for values that are not
/// codes). Never NULL.
#[no_mangle]
pub extern "C" fn lodtensor_status_str(code: i32) -> *const c_char {
    boundary_str(c"unknown status", || {
        let text: &CStr = match code {
            0 => c"ok",
            1 => c"null argument",
            2 => c"invalid argument",
            3 => c"invalid LoD",
            4 => c"out of range",
            5 => c"buffer too small",
            6 => c"unsupported",
            7 => c"out of memory",
            8 => c"internal error",
            9 => c"callback failed",
            _ => c"unknown status",
        };
        text.as_ptr()
    })
}

/// The message of the last failed call on the calling thread: which argument broke which rule.
/// Never NULL ("" before any failure). Successful calls leave it unchanged. The pointer stays
/// valid until the next failing call on the same thread; copy it to keep it. A call made while
/// the thread exits, after the library's per-thread state is gone (from a thread-exit destructor
/// that runs late), still returns its status, but its message is "".
#[no_mangle]
pub extern "C" fn lodtensor_last_error_message() -> *const c_char {
    boundary_str(c"", last_error_ptr)
}

/// Panics inside the library on purpose and returns what the caller sees: always
/// `LODTENSOR_INTERNAL`, with the panic's text in the last error message. It shows that a panic
/// never unwinds into (and aborts) the host program; bindings call it in their tests.
#[no_mangle]
pub extern "C" fn lodtensor_selftest_panic() -> lodtensor_status_t {
    boundary(|| panic!("lodtensor_selftest_panic was called"))
}

/// Sets the number of threads of the library's own thread pool (the host program's pools are never
/// used). 0 restores the default: the `LODTENSOR_NUM_THREADS` environment variable if it is a
/// count from 1 to 1024, else the number of available cores (at most 1024). Results of every operation are the same for any thread count.
/// Calls already running finish on the old pool.
/// Returns LODTENSOR_INVALID_ARGUMENT (more than 1024), LODTENSOR_INTERNAL (threads cannot start).
#[no_mangle]
pub extern "C" fn lodtensor_set_num_threads(num_threads: usize) -> lodtensor_status_t {
    boundary(|| crate::backend::cpu::pool::set_num_threads(num_threads))
}

/// The number of threads of the library's thread pool (starting it if needed).
/// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_INTERNAL (threads cannot start).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_num_threads(out: *mut usize) -> lodtensor_status_t {
    boundary(|| {
        let out = super::args::Out::new(out, "out")?;
        out.write(crate::backend::cpu::pool::num_threads()?);
        Ok(())
    })
}

/// Sets the most bytes of freed host memory the library keeps for reuse (default 256 MiB).
/// Outputs of 4 KiB or more are not given back to the system when their last handle is destroyed
/// but kept, up to this bound, for the next output of the same size class (within 1/8 of its
/// size): a loop of calls with the same shapes then writes into memory that is already mapped,
/// instead of fresh pages the OS must fault in and zero. The longest-kept blocks are freed first
/// when the bound would be passed; blocks larger than the bound are never kept, and blocks under
/// 64 KiB are given back when another thread is using the cache at that moment. Lowering the bound
/// frees what is over it at once; 0 frees everything kept and keeps nothing more. Device memory
/// is not affected (each CUDA device keeps its own blocks), nor is the buffer of at most 128 KiB
/// that a thread keeps for its life once it has stacked or concatenated an output of 4 MiB or
/// more along an inner axis in rows of 1, 2, 4 or 8 bytes (the columns of a matrix) on a CPU with
/// AVX2 and without AVX-512. Any thread may call this at any time.
/// Returns LODTENSOR_OK (it has no failure of its own; LODTENSOR_INTERNAL only for a bug).
#[no_mangle]
pub extern "C" fn lodtensor_set_host_cache_limit(bytes: usize) -> lodtensor_status_t {
    boundary(|| {
        crate::memory::set_host_cache_limit(bytes);
        Ok(())
    })
}

/// The bytes of freed host memory kept for reuse now (`*out_kept`) and the bound on them
/// (`*out_limit`); see `lodtensor_set_host_cache_limit`.
/// Returns LODTENSOR_NULL_ARGUMENT (`out_kept`, `out_limit`).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_host_cache_info(out_kept: *mut usize, out_limit: *mut usize) -> lodtensor_status_t {
    boundary(|| {
        let (kept_out, limit_out) =
            (super::args::Out::new(out_kept, "out_kept")?, super::args::Out::new(out_limit, "out_limit")?);
        let (kept, limit) = crate::memory::host_cache_info();
        kept_out.write(kept);
        limit_out.write(limit);
        Ok(())
    })
}
