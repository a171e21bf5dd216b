//! `fill_on`: a tensor of one value made directly on a place. On the CPU it is `fill`; on a CUDA
//! device (emulated here: `--features cuda-emulator`) the bytes must equal `fill`'s on the host for
//! every dtype, on both devices, for sizes that select every word width of the kernel (odd
//! element counts, zero elements), and the value rules and their errors must be the same. Without
//! a usable device the device tests say they were skipped and pass; the build without CUDA must
//! answer `Unsupported` for a CUDA place.

mod common;
mod cuda_common;

use cuda_common::{bytes_of, gpu_or_skip, min_time, GPU};
use lodtensor::ops::{fill, fill_on};
use lodtensor::{cuda_device_count, to_place, DType, Dim, Error, Place};

/// A value every dtype holds (bool only 0 and 1), and a negative one for the signed and float ones.
fn values(dtype: DType) -> Vec<f64> {
    match dtype {
        DType::Bool => vec![0.0, 1.0],
        DType::U8 => vec![0.0, 7.0, 255.0],
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {
            vec![0.0, -1.5, 0.1, 3.0e4, f64::NAN, f64::NEG_INFINITY, -0.0]
        }
        _ => vec![0.0, -3.0, 100.0],
    }
}

/// The expected bytes: `n` copies of the element that `fill` makes on the host.
fn expected(dtype: DType, value: f64, n: usize) -> Vec<u8> {
    let one = fill(dtype, Dim::new(&[1]).unwrap(), value).unwrap();
    one.tensor().bytes().unwrap().repeat(n)
}

#[test]
fn fill_on_the_cpu_is_fill() {
    for dtype in DType::ALL {
        for value in values(dtype) {
            let dims = Dim::new(&[3, 5]).unwrap();
            let got = fill_on(Place::Cpu, dtype, dims, value).unwrap();
            assert_eq!(got.tensor().place(), Place::Cpu);
            assert_eq!(got.dims(), &dims);
            assert_eq!(got.lod().num_levels(), 0);
            assert_eq!(got.tensor().bytes().unwrap(), expected(dtype, value, 15), "{dtype} {value}");
        }
    }
    for (dtype, value) in [(DType::I8, 128.0), (DType::Bool, 2.0), (DType::I32, 0.5), (DType::F16, 1e6)] {
        let dims = Dim::new(&[2]).unwrap();
        let got = fill_on(Place::Cpu, dtype, dims, value).unwrap_err();
        assert_eq!(got, fill(dtype, dims, value).unwrap_err());
        assert!(matches!(got, Error::InvalidArgument(ref m) if m.starts_with("value:")), "{got:?}");
    }
}

#[test]
fn fill_on_a_cuda_place_without_a_device_is_unsupported() {
    if cuda_device_count().is_ok() {
        return; // the device tests below cover this build
    }
    let got = fill_on(GPU, DType::F32, Dim::new(&[4]).unwrap(), 1.0).unwrap_err();
    assert!(matches!(got, Error::Unsupported(_)), "{got:?}");
}

#[test]
fn gpu_fill_on_equals_host_fill() {
    if !gpu_or_skip() {
        return;
    }
    let devices = cuda_device_count().unwrap().min(2) as u32;
    // Element counts whose byte sizes are multiples of 8, 4, 2 and 1 only, and none at all.
    let shapes: [&[usize]; 8] = [&[0], &[1], &[3], &[2, 3], &[7, 0, 2], &[4], &[5, 17], &[1000, 3]];
    for ordinal in 0..devices {
        let place = Place::Cuda(ordinal);
        for dtype in DType::ALL {
            for value in values(dtype) {
                for shape in shapes {
                    let dims = Dim::new(shape).unwrap();
                    let got = fill_on(place, dtype, dims, value).unwrap();
                    assert_eq!(got.tensor().place(), place);
                    assert_eq!(got.dims(), &dims);
                    assert_eq!(got.tensor().dtype(), dtype);
                    assert_eq!(got.lod().num_levels(), 0);
                    let n = dims.numel();
                    assert!(bytes_of(&got) == expected(dtype, value, n), "{dtype} {value} {shape:?} on {place}");
                }
            }
        }
    }
}

#[test]
fn gpu_fill_on_errors() {
    if !gpu_or_skip() {
        return;
    }
    let dims = Dim::new(&[3]).unwrap();
    for (dtype, value) in [(DType::U8, -1.0), (DType::Bool, 0.5), (DType::I64, 1e300), (DType::BF16, 1e39)] {
        assert_eq!(fill_on(GPU, dtype, dims, value).unwrap_err(), fill(dtype, dims, value).unwrap_err());
    }
    let n = cuda_device_count().unwrap() as u32;
    let got = fill_on(Place::Cuda(n), DType::F32, dims, 0.0).unwrap_err();
    assert!(matches!(got, Error::InvalidArgument(ref m) if m.contains(&format!("cuda:{n}"))), "{got:?}");
}

/// `fill_on` on cuda:0 against a device copy of the same bytes (a fill writes them once; a copy
/// reads and writes them). Prints GB/s; it says nothing in the emulator, so it is ignored in a
/// normal run; scripts/test-gpu.sh runs it (`-- --ignored --nocapture gpu_fill_on_bandwidth`).
#[test]
#[ignore]
fn gpu_fill_on_bandwidth() {
    if !gpu_or_skip() {
        return;
    }
    for (dtype, n) in [(DType::F32, 1usize << 26), (DType::F16, 1 << 27), (DType::U8, (1 << 28) + 3)] {
        let dims = Dim::new(&[n]).unwrap();
        let x = fill_on(GPU, dtype, dims, 1.0).unwrap();
        let bytes = x.tensor().nbytes() as f64;
        let copy = min_time(&|| drop(to_place(&x, GPU).unwrap()));
        let filled = min_time(&|| drop(fill_on(GPU, dtype, dims, 1.0).unwrap()));
        println!(
            "fill_on {dtype} x {n}: {:.0} GB/s written; device copy {:.0} GB/s (read + write)",
            bytes / filled / 1e9,
            2.0 * bytes / copy / 1e9
        );
    }
}
