//! The CUDA backend: the place API in every build, the NVRTC compile check of every kernel
//! (feature `cuda`, no GPU needed), and GPU results equal to CPU results (skipped, with a
//! message, where no device can be used).

mod common;
mod cuda_common;

use cuda_common::{bytes_of, gpu_or_skip};
use lodtensor::ops::sequence_reverse;
use lodtensor::{
    cuda_device_count, cuda_load_kernels, cuda_stream, sequence_expand, sequence_expand_as, synchronize, to_place,
};
use lodtensor::{DType, Dim, Error, LoDTensor, Lod, Place, Tensor};

fn unsupported(r: lodtensor::Result<impl std::fmt::Debug>) -> String {
    match r {
        Err(Error::Unsupported(m)) => m,
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

#[test]
fn host_copy_is_a_copy_with_the_same_lod() {
    let x = LoDTensor::from_slice(&[1i32, 2, 3, 4, 5, 6], &[3, 2], vec![vec![0, 1, 1, 3]]).unwrap();
    let y = to_place(&x, Place::Cpu).unwrap();
    assert!(!y.tensor().shares_memory_with(x.tensor()));
    assert_eq!(y.tensor().as_slice::<i32>().unwrap(), &[1, 2, 3, 4, 5, 6]);
    assert_eq!(y.lod(), x.lod());
    synchronize(Place::Cpu).unwrap();
}

/// Without a usable device every CUDA entry is `Unsupported` with a reason, never a panic.
#[test]
fn cuda_places_without_a_device_are_unsupported() {
    if cuda_device_count().is_ok() {
        eprintln!("a CUDA device is present: the no-device statuses are not checked here");
        return;
    }
    let x = LoDTensor::from_slice(&[1f32, 2.], &[2, 1], vec![vec![0, 2]]).unwrap();
    assert!(unsupported(cuda_device_count()).contains("cuda"));
    assert!(unsupported(to_place(&x, Place::Cuda(0))).contains("cuda:0"));
    assert!(unsupported(synchronize(Place::Cuda(0))).contains("cuda:0"));
    assert!(unsupported(cuda_load_kernels(0)).contains("cuda:0"));
    assert!(unsupported(cuda_stream(0)).contains("cuda:0"));
    if !cfg!(feature = "cuda") {
        assert!(unsupported(cuda_device_count()).contains("without CUDA"));
    }
}

/// Every kernel file compiles with NVRTC to machine code for sm_90 (what a device loads first; its
/// PTX is a step of that compile). Needs libnvrtc.so.13 on the
/// loader path (scripts/test.sh installs it from PyPI and sets LODTENSOR_REQUIRE_NVRTC=1, so a
/// missing compiler fails there instead of skipping).
#[cfg(feature = "cuda")]
#[test]
fn every_kernel_compiles_with_nvrtc() {
    use lodtensor::backend::cuda::{compile_kernels, KernelImage};
    match compile_kernels((9, 0), KernelImage::Cubin) {
        Ok(files) => {
            assert_eq!(files.len(), lodtensor::backend::cuda::KERNEL_SOURCES.len());
            for (name, len) in files {
                assert!(len > 0, "{name}: empty CUBIN");
                eprintln!("nvrtc: {name} -> {len} bytes of CUBIN for sm_90");
            }
        }
        Err(Error::Unsupported(m)) if std::env::var_os("LODTENSOR_REQUIRE_NVRTC").is_none() => {
            eprintln!("skipped: {m} (set LD_LIBRARY_PATH to the nvidia-cuda-nvrtc package's lib dir)");
        }
        Err(e) => panic!("{e}"),
    }
}

/// A small deterministic generator (the test needs no seed control beyond reproducibility).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n.max(1)
    }
}

/// The row kernels of sequence_expand_as and sequence_expand on the device equal the CPU result
/// byte for byte: every word size the kernel picks (row sizes 1..=48 bytes), rows sliced at odd
/// offsets, empty sequences, sequences copied no times, large batches.
#[test]
fn gpu_row_gathers_equal_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Lcg(7);
    for case in 0..60 {
        let seqs = [0, 1, 5, 300, 20_000][case % 5];
        let width = 1 + rng.next(48);
        let lengths: Vec<usize> = (0..seqs).map(|_| if rng.next(4) == 0 { 0 } else { rng.next(5) }).collect();
        let x_lengths = lengths.clone();
        let rows = seqs + 1; // one extra row, sliced off the front to shift the source address
        let data: Vec<u8> = (0..rows * width).map(|i| (i * 31 + case) as u8).collect();
        let x = Tensor::from_slice(&data, &[rows, width]).unwrap().slice_rows(1..rows).unwrap();
        let x = LoDTensor::dense(x);
        let total: usize = lengths.iter().sum();
        let y = LoDTensor::new(
            Tensor::zeros(lodtensor::DType::U8, lodtensor::Dim::new(&[total, 1]).unwrap()).unwrap(),
            if seqs == 0 { Lod::empty() } else { Lod::from_lengths(&[lengths]).unwrap() },
        )
        .unwrap();
        if seqs == 0 {
            continue;
        }
        let want = sequence_expand_as(&x, &y).unwrap();
        let xd = to_place(&x, Place::Cuda(0)).unwrap();
        let yd = to_place(&y, Place::Cuda(0)).unwrap(); // inputs of an op share its place
        let got = sequence_expand_as(&xd, &yd).unwrap();
        assert_eq!(got.tensor().place(), Place::Cuda(0));
        assert_eq!(got.lod(), want.lod());
        assert_eq!(bytes_of(&got), want.tensor().bytes().unwrap(), "case {case}: {seqs} sequences, width {width}");
        let want = sequence_expand(&x, &y, 0).unwrap();
        let got = sequence_expand(&xd, &yd, 0).unwrap();
        assert_eq!(bytes_of(&got), want.tensor().bytes().unwrap(), "sequence_expand, case {case}");
        // x with a LoD: each of its sequences (empty ones too) copied 0-3 times, the counts being
        // the last level of a two-level y (its first level groups them, as a batch of sources).
        let x_lod = Lod::from_lengths(&[x_lengths]).unwrap();
        let x_rows = x_lod.rows().unwrap() + 1;
        let data: Vec<u8> = (0..x_rows * width).map(|i| (i * 17 + case) as u8).collect();
        let x = Tensor::from_slice(&data, &[x_rows, width]).unwrap().slice_rows(1..x_rows).unwrap();
        let xs = LoDTensor::new(x, x_lod).unwrap();
        let repeats: Vec<usize> = (0..seqs).map(|_| rng.next(4)).collect();
        let groups = vec![seqs / 2, seqs - seqs / 2];
        let copies: usize = repeats.iter().sum();
        let y = LoDTensor::new(
            Tensor::zeros(lodtensor::DType::U8, lodtensor::Dim::new(&[copies, 1]).unwrap()).unwrap(),
            Lod::from_lengths(&[groups, repeats]).unwrap(),
        )
        .unwrap();
        let want = sequence_expand(&xs, &y, -1).unwrap();
        let got = sequence_expand(&to_place(&xs, Place::Cuda(0)).unwrap(), &to_place(&y, Place::Cuda(0)).unwrap(), -1);
        let got = got.unwrap();
        let what = format!("sequence_expand of a LoD, case {case}: {seqs} sequences, {copies} copies, width {width}");
        assert_eq!(got.lod(), want.lod(), "{what}");
        assert_eq!(bytes_of(&got), want.tensor().bytes().unwrap(), "{what}");
        // The output's offsets that the device made for itself, and its LoD keeps there, are the
        // host's: an op that reads them on the device gives the CPU's result.
        if copies > 0 {
            let (got, want) = (sequence_reverse(&got).unwrap(), sequence_reverse(&want).unwrap());
            assert_eq!(bytes_of(&got), want.tensor().bytes().unwrap(), "{what}, reversed");
        }
    }
    synchronize(Place::Cuda(0)).unwrap();
}

/// sequence_expand on the device of batches that the host's offsets take in many chunks (the
/// host sums them before the launch, then writes them while the device moves the rows), on 1 and
/// 4 threads: LoD, rows and the offsets the device kept equal the CPU's. A row count past usize
/// is refused before any launch; x's rows times the copies past usize, with the copies' rows
/// fitting, is not.
#[test]
fn gpu_expand_of_large_batches_equals_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Lcg(11);
    let mut runs: Vec<(usize, usize)> = (0..200_000).map(|_| (rng.next(3), rng.next(4))).collect();
    runs[1000].1 = 150_000; // one sequence copied more times than a chunk holds
    runs[50_000] = (3, 0);
    let (lengths, repeats): (Vec<usize>, Vec<usize>) = runs.into_iter().unzip();
    let rows: usize = lengths.iter().sum();
    let data: Vec<u8> = (0..rows * 4).map(|i| (i * 13 + i / 251) as u8).collect();
    let x =
        LoDTensor::new(Tensor::from_slice(&data, &[rows, 4]).unwrap(), Lod::from_lengths(&[lengths]).unwrap()).unwrap();
    let copies: usize = repeats.iter().sum();
    let y = LoDTensor::new(
        Tensor::zeros(DType::U8, Dim::new(&[copies, 1]).unwrap()).unwrap(),
        Lod::from_lengths(&[repeats]).unwrap(),
    )
    .unwrap();
    let (xd, yd) = (to_place(&x, Place::Cuda(0)).unwrap(), to_place(&y, Place::Cuda(0)).unwrap());
    common::with_1_and_4_threads(|| {
        let want = sequence_expand(&x, &y, 0).unwrap();
        let got = sequence_expand(&xd, &yd, 0).unwrap();
        assert_eq!(got.lod(), want.lod());
        assert_eq!(bytes_of(&got), want.tensor().bytes().unwrap());
        let (got, want) = (sequence_reverse(&got).unwrap(), sequence_reverse(&want).unwrap());
        assert_eq!(bytes_of(&got), want.tensor().bytes().unwrap(), "reversed by the kept offsets");
    });
    // Rows of no bytes: a 2^60-row sequence copied 3 or 16 times among 300,000 empty ones, refused
    // before any launch when its rows overflow.
    for long_copies in [3, 16] {
        common::expand_of_a_huge_sequence(long_copies, Place::Cuda(0));
    }
    synchronize(Place::Cuda(0)).unwrap();
}

/// Every kernel file loads up front, again at no cost, and the ops run after it; a device beyond
/// the count is `InvalidArgument` naming it.
#[test]
fn gpu_kernels_load_up_front() {
    if !gpu_or_skip() {
        return;
    }
    cuda_load_kernels(0).unwrap();
    cuda_load_kernels(0).unwrap();
    let n = cuda_device_count().unwrap() as u32;
    match cuda_load_kernels(n) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains(&format!("cuda:{n}")), "{m}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    let x = LoDTensor::from_slice(&[1f32, 2.], &[2, 1], vec![]).unwrap();
    let y = LoDTensor::from_slice(&[0f32; 3], &[3, 1], vec![vec![0, 2, 3]]).unwrap();
    let got = sequence_expand_as(&to_place(&x, Place::Cuda(0)).unwrap(), &to_place(&y, Place::Cuda(0)).unwrap());
    assert_eq!(bytes_of(&got.unwrap()), sequence_expand_as(&x, &y).unwrap().tensor().bytes().unwrap());
}

/// Each device's stream: the same handle at every call, a handle of its own for each device; a
/// device beyond the count is `InvalidArgument` naming it. On a GPU, work the caller queues on the
/// stream runs between the library's calls made before and after it.
#[test]
fn gpu_streams_order_the_callers_work() {
    if !gpu_or_skip() {
        return;
    }
    let n = cuda_device_count().unwrap() as u32;
    match cuda_stream(n) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains(&format!("cuda:{n}")), "{m}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    let streams: Vec<_> = (0..n).map(|d| cuda_stream(d).unwrap()).collect();
    for (d, &s) in streams.iter().enumerate() {
        assert!(!s.is_null(), "cuda:{d}: a null stream");
        assert_eq!(cuda_stream(d as u32).unwrap(), s, "cuda:{d}: the stream changed");
        assert!(!streams[..d].contains(&s), "cuda:{d} shares a stream with a device before it");
    }
    #[cfg(feature = "cuda")]
    callers_memset_runs_between_calls(streams[0]);
}

/// A fill of 256 MiB on cuda:0, then a memset of the caller's on `stream` over the same memory,
/// then the copy to the host: every element must be the memset's. Queued on a stream that does not
/// wait for the library's, the memset could run before or during the fill, or after the copy.
#[cfg(feature = "cuda")]
fn callers_memset_runs_between_calls(stream: *mut std::ffi::c_void) {
    use cudarc::driver::{result, sys};
    let n = 64 << 20;
    let t = lodtensor::ops::fill_on(Place::Cuda(0), DType::F32, Dim::new(&[n]).unwrap(), 1.0).unwrap();
    // SAFETY: the 4 n bytes of `t`'s device memory, on the library's stream of cuda:0, whose
    // context the library's calls above made current on this thread.
    unsafe { result::memset_d8_async(t.tensor().as_ptr() as sys::CUdeviceptr, 0x40, 4 * n, stream as sys::CUstream) }
        .unwrap();
    let host = to_place(&t, Place::Cpu).unwrap();
    let values = host.tensor().as_slice::<f32>().unwrap();
    let wrong = values.iter().filter(|v| v.to_bits() != 0x4040_4040).count();
    assert_eq!(wrong, 0, "{wrong} of {n} elements not the memset's: it did not run between the fill and the copy");
}

/// The caching allocator hands a freed block back to the next request of its size class.
#[test]
fn gpu_blocks_are_reused() {
    if !gpu_or_skip() || common::caches_off_for_guard_pages() {
        return;
    }
    let x = LoDTensor::from_slice(&vec![1f32; 1 << 16], &[1 << 10, 64], vec![]).unwrap();
    let a = to_place(&x, Place::Cuda(0)).unwrap();
    let addr = a.tensor().as_ptr();
    drop(a);
    let b = to_place(&x, Place::Cuda(0)).unwrap();
    assert_eq!(b.tensor().as_ptr(), addr);
    assert_eq!(bytes_of(&b), x.tensor().bytes().unwrap());
}

/// Unpack (`lod_tensor_to_array`) and `reorder_lod_tensor_by_rank` on the device equal the CPU:
/// one gather each, the time steps being row slices of one device allocation; sequences of any
/// lengths, and of one row each.
#[test]
fn gpu_unpack_and_reorder_equal_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Lcg(11);
    for case in 0..20 {
        let seqs = [1, 7, 300, 5000][case % 4];
        let width = 1 + rng.next(20);
        // Every fifth case, sequences of one row each (the reorder's ranges are then a row index).
        let lengths: Vec<usize> = (0..seqs).map(|_| if case % 5 == 4 { 1 } else { rng.next(6) }).collect();
        let rows: usize = lengths.iter().sum();
        let data: Vec<f32> = (0..rows * width).map(|i| i as f32 + case as f32).collect();
        let x =
            LoDTensor::new(Tensor::from_slice(&data, &[rows, width]).unwrap(), Lod::from_lengths(&[lengths]).unwrap())
                .unwrap();
        let table = lodtensor::RankTable::from_lod_tensor(&x, 0).unwrap();
        let xd = to_place(&x, Place::Cuda(0)).unwrap();
        let want = lodtensor::lod_tensor_to_array(&x, &table).unwrap();
        let got = lodtensor::lod_tensor_to_array(&xd, &table).unwrap();
        assert_eq!(got.len(), want.len());
        for (g, w) in got.as_slice().iter().zip(want.as_slice()) {
            assert_eq!(g.tensor().place(), Place::Cuda(0));
            assert_eq!(g.lod(), w.lod());
            assert_eq!(bytes_of(g), w.tensor().bytes().unwrap(), "unpack, case {case}");
        }
        let want = lodtensor::reorder_lod_tensor_by_rank(&x, &table).unwrap();
        let got = lodtensor::reorder_lod_tensor_by_rank(&xd, &table).unwrap();
        assert_eq!(got.lod(), want.lod());
        assert_eq!(bytes_of(&got), want.tensor().bytes().unwrap(), "reorder, case {case}");
        // Without a LoD the units are rows (one per sequence of the table), of any width, zero
        // included, and any element size.
        let (dense_width, dtype) = ([0, 1, 3, 8][case % 4], [DType::U8, DType::I16, DType::F32, DType::F64][case / 5]);
        let bytes: Vec<u8> = (0..seqs * dense_width * dtype.size()).map(|i| (i * 7 + case) as u8).collect();
        let dense =
            LoDTensor::dense(Tensor::from_bytes(dtype, Dim::new(&[seqs, dense_width]).unwrap(), &bytes).unwrap());
        let want = lodtensor::reorder_lod_tensor_by_rank(&dense, &table).unwrap();
        let got = lodtensor::reorder_lod_tensor_by_rank(&to_place(&dense, Place::Cuda(0)).unwrap(), &table).unwrap();
        assert!(got.lod().is_empty() && got.tensor().place() == Place::Cuda(0));
        assert_eq!(got.dims(), want.dims());
        assert_eq!(bytes_of(&got), want.tensor().bytes().unwrap(), "reorder of rows, case {case}");
    }
}

/// The row gather's bandwidth against a plain device-to-device copy of the same bytes, measured in
/// the same run (the target is 70% or more at sizes that fill the GPU): `sequence_expand` of
/// sequences of 64 rows and of one row each (each sequence copied once: its tables are x's and y's
/// LoD levels, kept on the device after the first call, and the output's offsets, 8 bytes a
/// sequence, which the device makes from them; the host makes its own before), and
/// `sequence_expand_as`
/// of one row per sequence (its table is y's LoD, 8 bytes a row, uploaded at the LoD's first use
/// on the device and kept with it: timed on a LoD used before, then on fresh ones). Beside each,
/// the time of a host-to-device copy of its table. Ignored in the normal run; scripts/test-gpu.sh runs it
/// (`-- --ignored --nocapture gpu_gather_bandwidth`).
#[test]
#[ignore]
fn gpu_gather_bandwidth() {
    if !gpu_or_skip() {
        return;
    }
    let gpu = Place::Cuda(0);
    let time = |f: &dyn Fn()| {
        (0..5)
            .map(|_| {
                synchronize(gpu).unwrap();
                let t = std::time::Instant::now();
                f();
                synchronize(gpu).unwrap();
                t.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    let upload_time = |bytes: usize| {
        let table = Tensor::zeros(lodtensor::DType::U8, lodtensor::Dim::new(&[bytes]).unwrap()).unwrap();
        let table = LoDTensor::dense(table);
        time(&|| drop(to_place(&table, gpu).unwrap()))
    };
    for (rows, width) in [(1usize << 21, 64usize), (1 << 24, 8), (1 << 18, 1024)] {
        let dims = lodtensor::Dim::new(&[rows, width]).unwrap();
        let data = to_place(&LoDTensor::dense(Tensor::zeros(lodtensor::DType::F32, dims).unwrap()), gpu).unwrap();
        let bytes = 2.0 * data.tensor().nbytes() as f64; // read once, written once
        let copy = time(&|| drop(to_place(&data, gpu).unwrap()));
        let mib = data.tensor().nbytes() >> 20;
        let line = |what: &str, op: f64, table_bytes: usize| {
            eprintln!(
                "{what} of {rows} x {width} f32 ({mib} MiB): copy {:.0} GB/s, op {:.0} GB/s = {:.0}% of copy; the \
                 table's upload alone {:.0} us of {:.0} us",
                bytes / copy / 1e9,
                bytes / op / 1e9,
                100.0 * copy / op,
                upload_time(table_bytes) * 1e6,
                op * 1e6
            );
        };
        for per_range in [64, 1] {
            // x in sequences of per_range rows, each written once.
            let ranges = rows / per_range;
            let x =
                LoDTensor::new(data.tensor().clone(), Lod::from_lengths(&[vec![per_range; ranges]]).unwrap()).unwrap();
            let y = LoDTensor::new(
                Tensor::zeros(lodtensor::DType::U8, lodtensor::Dim::new(&[ranges, 1]).unwrap()).unwrap(),
                Lod::from_lengths(&[vec![1; ranges]]).unwrap(),
            )
            .unwrap();
            let y = to_place(&y, gpu).unwrap();
            let op = time(&|| drop(sequence_expand(&x, &y, 0).unwrap()));
            line(&format!("expand of sequences of {per_range} row(s)"), op, 8 * (ranges + 1));
        }
        // Every row of x once, as a sequence of one row of y.
        let y = LoDTensor::new(
            Tensor::zeros(lodtensor::DType::U8, lodtensor::Dim::new(&[rows, 1]).unwrap()).unwrap(),
            Lod::from_lengths(&[vec![1; rows]]).unwrap(),
        )
        .unwrap();
        let y = to_place(&y, gpu).unwrap();
        let op = time(&|| drop(sequence_expand_as(&data, &y).unwrap()));
        line("expand_as, one row each, y's LoD on the device,", op, 8 * (rows + 1));
        // The same op on LoDs that have not been on the device (one for each timed run).
        let fresh: Vec<LoDTensor> = (0..5)
            .map(|_| {
                let lod = Lod::from_offsets(y.lod().levels().to_vec()).unwrap();
                LoDTensor::new(y.tensor().clone(), lod).unwrap()
            })
            .collect();
        let next = std::cell::Cell::new(0);
        let op = time(&|| {
            let y = &fresh[next.replace(next.get() + 1) % fresh.len()];
            drop(sequence_expand_as(&data, y).unwrap())
        });
        line("expand_as, one row each, y's LoD uploaded,", op, 8 * (rows + 1));
    }
}
