//! What the GPU-vs-CPU test files share (tests/cuda_*.rs; each uses part of it): the device they
//! run on, skipping without one, moving tensors, and the comparisons of a device result with the
//! CPU's.
#![allow(dead_code)]

use crate::common::Rng;
use lodtensor::{cuda_device_count, to_place, DType, Error, LoDTensor, Place, Tensor};

pub const GPU: Place = Place::Cuda(0);

/// Whether a CUDA device can be used; otherwise says that the test was skipped. With
/// LODTENSOR_REQUIRE_GPU=1 (scripts/test-gpu.sh, and CI's emulator run) a missing device fails
/// instead, so such a run cannot pass by skipping.
pub fn gpu_or_skip() -> bool {
    match cuda_device_count() {
        Ok(_) => true,
        Err(e) => {
            assert!(
                std::env::var("LODTENSOR_REQUIRE_GPU").map_or(true, |v| v != "1"),
                "LODTENSOR_REQUIRE_GPU=1, but no usable CUDA device: {e}"
            );
            eprintln!("skipped: no usable CUDA device ({e})");
            false
        }
    }
}

/// Whether the run is the race check (the emulator built with ThreadSanitizer; scripts/test.sh
/// sets LODTENSOR_EMULATOR_TSAN=1 for its build and its run), where each access of a kernel costs
/// tens of times what it does otherwise. A race there is between two threads of a block or two
/// blocks of a launch, which a few hundred rows have as thousands do (and the check's shuffled
/// launches give a grid-stride kernel 3 blocks whatever its size): the largest cases shrink.
pub fn race_check() -> bool {
    std::env::var("LODTENSOR_EMULATOR_TSAN").is_ok_and(|v| v == "1")
}

pub fn gpu(t: &LoDTensor) -> LoDTensor {
    to_place(t, GPU).unwrap()
}

/// The bytes of `t`'s elements, wherever they are.
pub fn bytes_of(t: &LoDTensor) -> Vec<u8> {
    to_place(t, Place::Cpu).unwrap().tensor().bytes().unwrap().to_vec()
}

/// The bytes of a tensor's elements, wherever they are.
pub fn tensor_bytes(t: &Tensor) -> Vec<u8> {
    bytes_of(&LoDTensor::dense(t.clone()))
}

/// The device result is on the device and equals the CPU result: dims, dtype, LoD and bytes.
#[track_caller]
pub fn assert_same(got: &LoDTensor, want: &LoDTensor, what: &str) {
    assert_eq!(got.tensor().place(), GPU, "{what}: result place");
    assert_eq!(got.dims(), want.dims(), "{what}: dims");
    assert_eq!(got.tensor().dtype(), want.tensor().dtype(), "{what}: dtype");
    assert_eq!(got.lod(), want.lod(), "{what}: LoD");
    assert!(bytes_of(got) == want.tensor().bytes().unwrap(), "{what}: data differs");
}

/// The same outcome on both places: equal results, or the same error.
#[track_caller]
pub fn assert_same_outcome(got: lodtensor::Result<LoDTensor>, want: lodtensor::Result<LoDTensor>, what: &str) {
    match (got, want) {
        (Ok(g), Ok(w)) => assert_same(&g, &w, what),
        (Err(g), Err(w)) => assert_eq!(format!("{g:?}"), format!("{w:?}"), "{what}: errors differ"),
        (g, w) => panic!("{what}: device gave {:?}, CPU gave {:?}", g.map(|_| ()), w.map(|_| ())),
    }
}

/// An InvalidArgument naming both places.
#[track_caller]
pub fn assert_mixed(r: lodtensor::Result<impl std::fmt::Debug>, a: &str, b: &str) {
    match r {
        Err(Error::InvalidArgument(m)) => assert!(m.contains(a) && m.contains(b), "{m}"),
        other => panic!("expected InvalidArgument naming {a} and {b}, got {other:?}"),
    }
}

/// Random bytes valid for `dtype` (bool: 0 or 1).
pub fn random_bytes(rng: &mut Rng, dtype: DType, n: usize) -> Vec<u8> {
    (0..n * dtype.size())
        .map(|_| if dtype == DType::Bool { (rng.next() & 1) as u8 } else { rng.next() as u8 })
        .collect()
}

/// The fastest of 5 runs of `f` on cuda:0, in seconds, each between two synchronizations (for the
/// ignored bandwidth tests, which run on a real GPU).
pub fn min_time(f: &dyn Fn()) -> f64 {
    (0..5)
        .map(|_| {
            lodtensor::synchronize(GPU).unwrap();
            let t = std::time::Instant::now();
            f();
            lodtensor::synchronize(GPU).unwrap();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}
