//! The CUDA C kernels of `kernels/*.cu`: compiled by NVRTC at the first use on a device, loaded
//! once per device, and launched on the device's stream.

use super::device::{device, driver_error, new_tensor, Device};
use super::KERNEL_SOURCES;
use crate::dim::Dim;
use crate::error::{ensure, err, Result};
use crate::place::Place;
use crate::tensor::Tensor;
use cudarc::driver::{result, sys};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileError, CompileOptions};
use std::ffi::{c_void, CString};
use std::ops::Range;
use std::panic::catch_unwind;
use std::sync::Arc;

/// The PTX of kernel file `name` for `arch` (`compute_90`, ...). NVRTC is loaded at first use;
/// without it (or with a compile error) this is an error, never a panic.
fn ptx_of(name: &str, source: &str, arch: &str) -> Result<String> {
    let present = catch_unwind(|| unsafe { cudarc::nvrtc::sys::is_culib_present() }).unwrap_or(false);
    ensure!(present, Unsupported, "nvrtc: the CUDA runtime compiler (libnvrtc.so.13) could not be loaded");
    let opts = CompileOptions {
        options: vec![format!("--gpu-architecture={arch}"), "--std=c++17".into()],
        name: Some(name.to_string()),
        ..Default::default()
    };
    match catch_unwind(|| compile_ptx_with_opts(source, opts)) {
        Err(_) => Err(err!(Unsupported, "nvrtc: the CUDA runtime compiler could not be loaded")),
        Ok(Err(CompileError::CompileError { log, .. })) => {
            Err(err!(Internal, "nvrtc: {name} does not compile for {arch}:\n{}", log.to_string_lossy()))
        }
        Ok(Err(e)) => Err(err!(Internal, "nvrtc: {name}: {e}")),
        Ok(Ok(ptx)) => Ok(ptx.to_src()),
    }
}

/// Compiles every kernel file to PTX for `arch` (`compute_90` ...): `(file, PTX bytes)`. Needs
/// NVRTC only, no GPU: the CI check that every kernel compiles.
pub fn compile_ptx(arch: &str) -> Result<Vec<(&'static str, usize)>> {
    KERNEL_SOURCES.iter().map(|&(name, src)| Ok((name, ptx_of(name, src, arch)?.len()))).collect()
}

/// Function `function` of kernel file `file` on device `d`, compiling and loading the file at its
/// first use there.
fn function(d: &Device, file: &'static str, function: &str) -> Result<sys::CUfunction> {
    let module = {
        let mut modules = d.modules.lock().expect("module cache lock");
        match modules.get(file) {
            Some(&m) => m,
            None => {
                let source = KERNEL_SOURCES.iter().find(|(n, _)| *n == file).expect("a listed kernel file").1;
                let ptx = CString::new(ptx_of(file, source, &d.arch)?).expect("PTX has no NUL");
                d.bind()?;
                // SAFETY: a NUL-terminated PTX image, loaded into the bound context.
                let m = unsafe { result::module::load_data(ptx.as_ptr().cast()) }
                    .map_err(|e| driver_error(&format!("loading {file}"), e))?;
                modules.insert(file, m);
                m
            }
        }
    };
    let cname = CString::new(function).expect("no NUL");
    // SAFETY: a module loaded above and never unloaded.
    unsafe { result::module::get_function(module, cname) }.map_err(|e| driver_error(&format!("{file}: {function}"), e))
}

/// Uploads `values` to a new device buffer (ordered on the device's stream).
fn upload(d: &Arc<Device>, values: &[i64]) -> Result<Arc<crate::memory::Allocation>> {
    let alloc = d.allocation(std::mem::size_of_val(values))?;
    if !values.is_empty() {
        d.bind()?;
        // SAFETY: the allocation holds the values; a copy from pageable memory returns once the
        // source has been read.
        unsafe { result::memcpy_htod_async(alloc.as_ptr() as sys::CUdeviceptr, values, d.stream) }
            .map_err(|e| driver_error("uploading offsets", e))?;
    }
    Ok(alloc)
}

/// A new device tensor of `dims` (dtype of `src`) whose rows are `ranges` of `src` viewed as rows
/// of `row_bytes` bytes; `src` is on a CUDA device and the ranges fit in it (callers validate).
/// One launch for all ranges; the ranges are uploaded once.
pub fn gather_row_ranges(src: &Tensor, row_bytes: usize, ranges: &[Range<usize>], dims: Dim) -> Result<Tensor> {
    let Place::Cuda(ordinal) = src.place() else {
        return Err(err!(Internal, "gather_row_ranges: the CUDA kernel got a tensor on {}", src.place()));
    };
    let d = device(ordinal)?;
    let mut out = new_tensor(&d, src.dtype(), dims)?;
    let total_rows: usize = ranges.iter().map(|r| r.len()).sum();
    ensure!(
        total_rows * row_bytes == out.nbytes(),
        Internal,
        "gather_row_ranges: {total_rows} rows of {row_bytes} bytes do not fill {} bytes",
        out.nbytes()
    );
    if out.nbytes() == 0 {
        return Ok(out);
    }
    let num_ranges = u32::try_from(ranges.len()).map_err(|_| {
        err!(Unsupported, "gather_row_ranges: {} ranges; the CUDA kernel takes up to 2^32 - 1", ranges.len())
    })?;
    let mut table = Vec::with_capacity(2 * ranges.len() + 1);
    table.extend(ranges.iter().map(|r| r.start as i64));
    let mut at = 0i64;
    table.push(0);
    for r in ranges {
        at += r.len() as i64;
        table.push(at);
    }
    let offsets = upload(&d, &table)?;
    let (src_ptr, dst_ptr) = (src.as_ptr() as u64, out.as_mut_ptr() as u64);
    let word = [16usize, 8, 4, 2, 1]
        .into_iter()
        .find(|&w| row_bytes % w == 0 && src_ptr % w as u64 == 0 && dst_ptr % w as u64 == 0)
        .expect("1 divides everything");
    let f = function(&d, "rows.cu", &format!("gather_row_ranges_{word}"))?;
    let (mut src_a, mut dst_a) = (src_ptr, dst_ptr);
    let mut row_words = (row_bytes / word) as u64;
    let mut starts = offsets.as_ptr() as u64;
    let mut dst_offsets = starts + 8 * ranges.len() as u64;
    let mut n = num_ranges;
    let mut rows = total_rows as u64;
    let mut params: [*mut c_void; 7] = [
        (&mut src_a as *mut u64).cast(),
        (&mut dst_a as *mut u64).cast(),
        (&mut row_words as *mut u64).cast(),
        (&mut starts as *mut u64).cast(),
        (&mut dst_offsets as *mut u64).cast(),
        (&mut n as *mut u32).cast(),
        (&mut rows as *mut u64).cast(),
    ];
    const BLOCK: u64 = 256;
    let blocks = (rows * row_words).div_ceil(BLOCK).min(1 << 16) as u32;
    d.bind()?;
    // SAFETY: the arguments match the kernel's signature; every address is device memory that
    // stays allocated until the stream has run the kernel (blocks return to the cache, and any
    // reuse is queued after this launch on the same stream).
    unsafe { result::launch_kernel(f, (blocks, 1, 1), (BLOCK as u32, 1, 1), 0, d.stream, &mut params) }
        .map_err(|e| driver_error("gather_row_ranges launch", e))?;
    drop(offsets);
    Ok(out)
}
