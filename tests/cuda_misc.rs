//! The smaller sequence ops on a CUDA device (emulated here: `--features cuda-emulator`): concat,
//! slice, reverse, reshape, gather_rows, mask, enumerate, erase, conv, scatter, serialization, and
//! the place rules of expand/expand_as. Every result is compared with the CPU path's on the same inputs
//! (random, fixed seeds): byte for byte for the data-movement and integer ops and for scatter;
//! within a float tolerance for sequence_conv (see `gpu_conv_equals_cpu`). Without a usable
//! device each test says it was skipped and passes.

mod common;
mod cuda_common;

use common::Rng;
use cuda_common::{
    assert_mixed, assert_same, assert_same_outcome, bytes_of, gpu, gpu_or_skip, min_time, random_bytes, GPU,
};
use half::{bf16, f16};
use lodtensor::ops::{
    gather_rows, sequence_concat, sequence_conv, sequence_enumerate, sequence_erase, sequence_mask, sequence_reshape,
    sequence_reverse, sequence_slice,
};
use lodtensor::{cuda_device_count, sequence_expand, sequence_expand_as, synchronize, to_place};
use lodtensor::{sequence_scatter, sequence_scatter_inplace, DType, Dim, Error, LoDTensor, Lod, Place, Tensor};

/// A host tensor of `dtype` and `dims` with random contents and the given LoD; with `shift`, a row
/// slice of a larger tensor, so its address is not the allocation's.
fn random_tensor(rng: &mut Rng, dtype: DType, dims: &[usize], lod: Lod, shift: bool) -> LoDTensor {
    let rows = dims[0] + shift as usize;
    let mut full = dims.to_vec();
    full[0] = rows;
    let n: usize = full.iter().product();
    let t = Tensor::from_bytes(dtype, Dim::new(&full).unwrap(), &random_bytes(rng, dtype, n)).unwrap();
    let t = if shift { t.slice_rows(1..rows).unwrap() } else { t };
    LoDTensor::new(t, lod).unwrap()
}

/// Random sequence lengths: one in four empty.
fn random_lengths(rng: &mut Rng, sequences: usize, max_len: usize) -> Vec<usize> {
    (0..sequences).map(|_| if rng.below(4) == 0 { 0 } else { rng.below(max_len + 1) }).collect()
}

/// One sequence, a few, and enough that the kernels' output spans many tiles (8192 elements each)
/// with many sequences in a tile.
const SEQUENCE_COUNTS: [usize; 4] = [1, 3, 300, 3000];

#[test]
fn gpu_concat_equals_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0x9e37_79b9);
    for case in 0..40 {
        let dtype = DType::ALL[case % DType::ALL.len()];
        let seqs = SEQUENCE_COUNTS[case % 4];
        let width = [1, 3, 5, 17][(case / 4) % 4];
        let inputs = 2 + case % 3;
        let xs: Vec<LoDTensor> = (0..inputs)
            .map(|j| {
                let lengths = if case == 0 { vec![0; seqs] } else { random_lengths(&mut rng, seqs, 6) };
                let rows: usize = lengths.iter().sum();
                // Every other case: a 2-level LoD (concat reads level 0 as absolute rows).
                let lod = if case % 2 == 1 {
                    Lod::from_lengths(&[vec![1; seqs], lengths]).unwrap()
                } else {
                    Lod::from_lengths(&[lengths]).unwrap()
                };
                random_tensor(&mut rng, dtype, &[rows, width], lod, j % 2 == 1)
            })
            .collect();
        let want = sequence_concat(&xs.iter().collect::<Vec<_>>()).unwrap();
        let xd: Vec<LoDTensor> = xs.iter().map(gpu).collect();
        let got = sequence_concat(&xd.iter().collect::<Vec<_>>()).unwrap();
        assert_same(&got, &want, &format!("concat case {case}: {inputs} x {seqs} sequences of {dtype} x {width}"));
    }
    // The CPU's errors: row widths, dtypes or sequence counts that differ, a single input.
    let a = LoDTensor::from_slice(&[1f32, 2., 3., 4.], &[2, 2], vec![vec![0, 1, 2]]).unwrap();
    let wide = LoDTensor::from_slice(&[1f32, 2., 3.], &[1, 3], vec![vec![0, 0, 1]]).unwrap();
    let ints = LoDTensor::from_slice(&[1i32, 2], &[1, 2], vec![vec![0, 1, 1]]).unwrap();
    let one_seq = LoDTensor::from_slice(&[1f32, 2.], &[1, 2], vec![vec![0, 1]]).unwrap();
    for (b, what) in [(&wide, "row width"), (&ints, "dtype"), (&one_seq, "sequence count")] {
        let want = sequence_concat(&[&a, b]);
        assert!(want.is_err(), "{what}");
        assert_same_outcome(sequence_concat(&[&gpu(&a), &gpu(b)]), want, &format!("concat {what}"));
    }
    assert_same_outcome(sequence_concat(&[&gpu(&a)]), sequence_concat(&[&a]), "concat of one input");
}

/// The whole-tensor LoD operations on device tensors: merge (a new tensor, one gather on the
/// device), lod_reset with its target in a device tensor, slice and split (shares of the device
/// memory); each equal to the CPU's.
#[test]
fn gpu_merge_lod_reset_slice_split_equal_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0x3e79_e5a1);
    for case in 0..24 {
        let dtype = DType::ALL[case % DType::ALL.len()];
        let width = [1, 3, 5, 17][(case / 4) % 4];
        // Parts of 0 to 299 rows (case 0: none has rows), two LoD levels; every other part a row
        // slice of a larger tensor.
        let parts: Vec<LoDTensor> = (0..1 + case % 4)
            .map(|j| {
                let lengths = if case == 0 {
                    vec![0; 2]
                } else {
                    let n = 1 + rng.below(60);
                    random_lengths(&mut rng, n, 5)
                };
                let lod = Lod::from_lengths(&[vec![lengths.len()], lengths.clone()]).unwrap();
                random_tensor(&mut rng, dtype, &[lengths.iter().sum(), width], lod, j % 2 == 1)
            })
            .collect();
        let what = format!("case {case}: {} parts of {dtype} x {width}", parts.len());
        let want = LoDTensor::merge(&parts.iter().collect::<Vec<_>>()).unwrap();
        let on_gpu: Vec<LoDTensor> = parts.iter().map(gpu).collect();
        let got = LoDTensor::merge(&on_gpu.iter().collect::<Vec<_>>()).unwrap();
        assert_same(&got, &want, &format!("merge {what}"));
        // One level of offsets, from a device tensor (int32 or int64).
        let rows = want.tensor().rows().unwrap();
        let cut = rng.below(rows + 1) as i64;
        let target = vec![0, cut, rows as i64];
        let y = if case % 2 == 0 {
            LoDTensor::from_slice(&target, &[3], vec![]).unwrap()
        } else {
            LoDTensor::from_slice(&target.iter().map(|&v| v as i32).collect::<Vec<_>>(), &[3, 1], vec![]).unwrap()
        };
        for append in [false, true] {
            assert_same_outcome(
                got.lod_reset(Some(&gpu(&y)), &[], append),
                want.lod_reset(Some(&y), &[], append),
                &format!("lod_reset {what}, append {append}"),
            );
        }
        let sequences = want.lod().levels()[1].len() - 1;
        if sequences > 0 {
            let (begin, end) = (rng.below(sequences), sequences);
            assert_same_outcome(got.slice(1, begin, end), want.slice(1, begin, end), &format!("slice {what}"));
        }
        let (g, w) = (got.split(1 + case % 3).unwrap(), want.split(1 + case % 3).unwrap());
        assert_eq!(g.len(), w.len(), "split {what}: pieces");
        for (i, (g, w)) in g.iter().zip(&w).enumerate() {
            assert_same(g, w, &format!("split {what}: piece {i}"));
        }
    }
    // The place rules: parts with rows on different places; y on another place than x, with or
    // without a LoD; the CPU's errors for bad offsets in a device y.
    let a = LoDTensor::from_slice(&[1f32, 2., 3., 4.], &[2, 2], vec![vec![0, 1, 2]]).unwrap();
    assert_mixed(LoDTensor::merge(&[&gpu(&a), &a]), "cuda:0", "cpu");
    let empty_host = LoDTensor::from_slice::<f32>(&[], &[0, 2], vec![vec![0, 0]]).unwrap();
    let merged = LoDTensor::merge(&[&empty_host, &gpu(&a), &empty_host]).unwrap();
    let want = LoDTensor::merge(&[&empty_host, &a, &empty_host]).unwrap();
    assert_same(&merged, &want, "merge of a device part between 0-row host parts");
    let y = LoDTensor::from_slice(&[0i64, 2], &[2], vec![]).unwrap();
    assert_mixed(a.lod_reset(Some(&gpu(&y)), &[], false), "cuda:0", "cpu");
    assert_mixed(gpu(&a).lod_reset(Some(&y), &[], false), "cuda:0", "cpu");
    assert_mixed(gpu(&a).lod_reset(Some(&a), &[], false), "cuda:0", "cpu");
    for bad in [vec![0i64, 3], vec![1, 2], vec![0, -1, 2], vec![0]] {
        let y = LoDTensor::from_slice(&bad, &[bad.len()], vec![]).unwrap();
        let want = a.lod_reset(Some(&y), &[], false);
        assert!(matches!(want, Err(Error::InvalidLod(_))), "{bad:?}");
        assert_same_outcome(gpu(&a).lod_reset(Some(&gpu(&y)), &[], false), want, &format!("lod_reset to {bad:?}"));
    }
    let floats = LoDTensor::from_slice(&[0f32, 2.], &[2], vec![]).unwrap();
    assert!(
        matches!(gpu(&a).lod_reset(Some(&gpu(&floats)), &[], false), Err(Error::Unsupported(m)) if m.contains("y"))
    );
}

#[test]
fn gpu_slice_equals_cpu_with_offsets_on_the_device() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0x51ce);
    for case in 0..24 {
        let dtype = DType::ALL[case % DType::ALL.len()];
        let seqs = SEQUENCE_COUNTS[case % 4];
        let lengths = if case < 4 { vec![0; seqs] } else { random_lengths(&mut rng, seqs, 8) };
        let rows: usize = lengths.iter().sum();
        let x = random_tensor(
            &mut rng,
            dtype,
            &[rows, 1 + case % 7, 2],
            Lod::from_lengths(std::slice::from_ref(&lengths)).unwrap(),
            true,
        );
        let (mut offs, mut lens) = (Vec::new(), Vec::new());
        for &l in &lengths {
            let o = rng.below(l + 1);
            offs.push(o as i64);
            lens.push(rng.below(l - o + 1) as i64);
        }
        let (offset, length) = if case % 2 == 0 {
            (
                LoDTensor::from_slice(&offs, &[seqs, 1], vec![]).unwrap(),
                LoDTensor::from_slice(&lens, &[seqs, 1], vec![]).unwrap(),
            )
        } else {
            let o32: Vec<i32> = offs.iter().map(|&v| v as i32).collect();
            let l32: Vec<i32> = lens.iter().map(|&v| v as i32).collect();
            (
                LoDTensor::from_slice(&o32, &[seqs], vec![]).unwrap(),
                LoDTensor::from_slice(&l32, &[seqs], vec![]).unwrap(),
            )
        };
        let want = sequence_slice(&x, &offset, &length);
        let got = sequence_slice(&gpu(&x), &gpu(&offset), &gpu(&length));
        assert_same_outcome(got, want, &format!("slice case {case}"));
    }
    // The rules on device inputs give the CPU's errors.
    let x = LoDTensor::from_slice(&[1f32, 2., 3., 4., 5.], &[5, 1], vec![vec![0, 3, 5]]).unwrap();
    for (o, l) in [([0i64, 1], [4i64, 1]), ([-1, 0], [1, 1]), ([0, 0], [1, -2])] {
        let (o, l) =
            (LoDTensor::from_slice(&o, &[2, 1], vec![]).unwrap(), LoDTensor::from_slice(&l, &[2, 1], vec![]).unwrap());
        let want = sequence_slice(&x, &o, &l);
        assert!(want.is_err());
        assert_same_outcome(sequence_slice(&gpu(&x), &gpu(&o), &gpu(&l)), want, "slice errors");
    }
}

#[test]
fn gpu_reverse_equals_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0x7e7e);
    for case in 0..30 {
        let dtype = DType::ALL[case % DType::ALL.len()];
        let seqs = SEQUENCE_COUNTS[case % 4];
        let lengths = if case == 1 { vec![0; seqs] } else { random_lengths(&mut rng, seqs, 9) };
        let rows: usize = lengths.iter().sum();
        let width = [1, 2, 3, 8, 13, 64][case % 6];
        let x = random_tensor(&mut rng, dtype, &[rows, width], Lod::from_lengths(&[lengths]).unwrap(), case % 3 == 0);
        let want = sequence_reverse(&x).unwrap();
        assert_same(&sequence_reverse(&gpu(&x)).unwrap(), &want, &format!("reverse case {case}: {dtype} x {width}"));
    }
    let column = LoDTensor::from_slice(&[1f32, 2., 3.], &[3], vec![vec![0, 3]]).unwrap();
    let nested = LoDTensor::from_slice(&[1f32, 2., 3.], &[3, 1], vec![vec![0, 1], vec![0, 3]]).unwrap();
    for x in [column, nested] {
        let want = sequence_reverse(&x);
        assert!(want.is_err());
        assert_same_outcome(sequence_reverse(&gpu(&x)), want, "reverse errors");
    }
}

/// The tile kernels find each tile's first and last sequence by a search over the whole table,
/// then each row's between them: tables of 70 000 and 300 000 sequences (tiles deep in the table),
/// with runs of up to 5000 empty sequences (equal offsets), which must resolve to the sequence
/// that holds the row. sequence_reverse and sequence_expand_as (two kernel families) against the
/// CPU.
#[test]
fn gpu_tiles_find_rows_among_many_sequences() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0x5eed);
    for (case, sequences) in [70_000usize, 300_000].into_iter().enumerate() {
        // Runs of empty sequences of every length up to thousands, between short ones.
        let mut lengths = Vec::with_capacity(sequences);
        while lengths.len() < sequences {
            let empties = [0, 1, 7, 300, 5000][rng.below(5)].min(sequences - lengths.len());
            lengths.extend(std::iter::repeat_n(0, empties));
            if lengths.len() < sequences {
                lengths.push(1 + rng.below(3));
            }
        }
        let rows: usize = lengths.iter().sum();
        let x = random_tensor(&mut rng, DType::U8, &[rows, 1], Lod::from_lengths(&[lengths.clone()]).unwrap(), false);
        let want = sequence_reverse(&x).unwrap();
        assert_same(&sequence_reverse(&gpu(&x)).unwrap(), &want, &format!("reverse, {sequences} sequences"));
        // expand_as: row k of x repeated lengths[k] times.
        let dense = random_tensor(&mut rng, DType::I16, &[sequences, 1], Lod::empty(), case == 1);
        let y = LoDTensor::new(Tensor::zeros(DType::U8, Dim::new(&[rows]).unwrap()).unwrap(), x.lod().clone()).unwrap();
        let want = sequence_expand_as(&dense, &y).unwrap();
        assert_same(&sequence_expand_as(&gpu(&dense), &gpu(&y)).unwrap(), &want, &format!("expand_as, {sequences}"));
    }
}

#[test]
fn gpu_reshape_equals_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0x4e5a);
    for case in 0..30 {
        let dtype = DType::ALL[case % DType::ALL.len()];
        let seqs = SEQUENCE_COUNTS[case % 4];
        let m = [1, 2, 4, 6][case % 4];
        let lengths: Vec<usize> = if case < 4 {
            vec![0; seqs]
        } else {
            random_lengths(&mut rng, seqs, 4).into_iter().map(|l| 2 * l).collect()
        };
        let rows: usize = lengths.iter().sum();
        let x = random_tensor(&mut rng, dtype, &[rows, m], Lod::from_lengths(&[lengths]).unwrap(), case % 2 == 0);
        // 2^62: rows that wide overflow a row's bytes for every dtype but the 1-byte ones, which
        // both places must refuse (an empty batch takes any width).
        for new_dim in [1, 2, 3, 4, 12, 1 << 62] {
            let want = sequence_reshape(&x, new_dim);
            let got = sequence_reshape(&gpu(&x), new_dim);
            assert_same_outcome(got, want, &format!("reshape case {case}, new_dim {new_dim}"));
        }
    }
}

/// A device tensor's record in Paddle's format (its elements copied from the device straight into
/// the record) is its host copy's, byte for byte: every dtype, empty tensors and row slices.
#[test]
fn gpu_serialize_equals_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0x5e71);
    for case in 0..20 {
        let dtype = DType::ALL[case % DType::ALL.len()];
        let lengths = random_lengths(&mut rng, SEQUENCE_COUNTS[case % 4], 5);
        let rows: usize = lengths.iter().sum();
        let x =
            random_tensor(&mut rng, dtype, &[rows, case % 3], Lod::from_lengths(&[lengths]).unwrap(), case % 2 == 0);
        let want = lodtensor::serialize(&x).unwrap();
        assert_eq!(lodtensor::serialize(&gpu(&x)).unwrap(), want, "case {case}: {dtype}, {rows} rows");
    }
}

/// The host copy of `len` bytes of device memory at `ptr` on cuda:0, read as `dtype` [n].
fn device_bytes(ptr: *const std::ffi::c_void, dtype: DType, n: usize) -> Vec<u8> {
    let t =
        unsafe { Tensor::borrowed(GPU, dtype, Dim::new(&[n]).unwrap(), ptr.cast_mut().cast(), n * dtype.size(), None) };
    let host = to_place(&LoDTensor::dense(t.unwrap()), Place::Cpu).unwrap();
    host.tensor().bytes().unwrap().to_vec()
}

/// A device tensor lent through Arrow's C device data interface: device CUDA 0, no event (the
/// work is done), the elements the tensor's own device memory, each LoD level's offsets on the
/// device as int64, and the chain as the host export's.
#[test]
fn gpu_arrow_device_export_lends_device_memory() {
    use lodtensor::interop::arrow::{to_arrow, to_arrow_device, DEVICE_CUDA};
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0xa770);
    for case in 0..12 {
        // No bool (refused below) nor bfloat16 (no Arrow type).
        let dtype =
            [DType::U8, DType::I8, DType::I16, DType::I32, DType::I64, DType::F16, DType::F32, DType::F64][case % 8];
        let outer = random_lengths(&mut rng, SEQUENCE_COUNTS[case % 4].max(1), 3);
        let inner = random_lengths(&mut rng, outer.iter().sum(), 4);
        let rows: usize = inner.iter().sum();
        let lod = Lod::from_lengths(&[outer, inner]).unwrap();
        let x = random_tensor(&mut rng, dtype, &[rows, 1 + case % 3], lod, case % 2 == 0);
        let on_device = gpu(&x);
        let (mut schema, mut device) = to_arrow_device(&on_device).unwrap();
        let (mut host_schema, mut host) = to_arrow(&x).unwrap();
        assert_eq!((device.device_type, device.device_id), (DEVICE_CUDA, 0));
        assert!(device.sync_event.is_null() && device.reserved == [0; 3]);
        unsafe {
            let (mut a, mut h) = (&device.array, &host);
            for level in x.lod().levels() {
                assert_eq!((a.length, a.n_buffers), (h.length, h.n_buffers));
                let want: Vec<u8> = level.iter().flat_map(|&o| (o as i64).to_ne_bytes()).collect();
                assert_eq!(device_bytes(*a.buffers.add(1), DType::I64, level.len()), want, "case {case}");
                (a, h) = (&**a.children, &**h.children);
            }
            let elements = &**a.children; // one fixed-size list, then the elements
            assert_eq!(*elements.buffers.add(1), on_device.tensor().as_ptr().cast(), "zero copy");
            assert_eq!(device_bytes(*elements.buffers.add(1), dtype, x.tensor().numel()), x.tensor().bytes().unwrap());
            drop(on_device); // the export holds the memory
            assert_eq!(device_bytes(*elements.buffers.add(1), dtype, x.tensor().numel()), x.tensor().bytes().unwrap());
            (schema.release.unwrap())(&mut schema);
            (device.array.release.unwrap())(&mut device.array);
            (host_schema.release.unwrap())(&mut host_schema);
            (host.release.unwrap())(&mut host);
        }
    }
    let flags = Tensor::from_bytes(DType::Bool, Dim::new(&[2]).unwrap(), &[1, 0]).unwrap();
    let flags = gpu(&LoDTensor::dense(flags));
    assert!(matches!(to_arrow(&flags), Err(Error::Unsupported(m)) if m.contains("lodtensor_to_arrow_device")));
}

/// Arrow's bits of `bytes` (any non-zero byte true), least significant first, the spare bits 0.
fn bits_of(bytes: &[u8]) -> Vec<u8> {
    let mut bits = vec![0u8; bytes.len().div_ceil(8)];
    for (i, &b) in bytes.iter().enumerate() {
        bits[i / 8] |= u8::from(b != 0) << (i % 8);
    }
    bits
}

/// Bool device tensors lent as Arrow's bits packed on the device (every length around a byte's
/// edge, bytes other than 0 and 1 taken as true, under a LoD and without), and taken back from
/// device bits, from bit offsets within a byte, as bool device tensors of 0 and 1.
#[test]
fn gpu_arrow_device_bools_go_as_bits_packed_on_the_device() {
    use lodtensor::interop::arrow::{from_arrow_device, to_arrow_device, DEVICE_CUDA};
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0xa773);
    for n in [0usize, 1, 7, 8, 9, 15, 16, 17, 1000, 4099] {
        let bytes: Vec<u8> = (0..n).map(|_| [0u8, 1, 1, 2, 255][rng.below(5)]).collect();
        let lod = if n > 0 && n % 2 == 1 { Lod::from_lengths(&[vec![1, n - 1]]).unwrap() } else { Lod::empty() };
        let x = LoDTensor::new(Tensor::from_bytes(DType::Bool, Dim::new(&[n]).unwrap(), &bytes).unwrap(), lod).unwrap();
        let (mut schema, mut device) = to_arrow_device(&gpu(&x)).unwrap();
        assert_eq!((device.device_type, device.device_id), (DEVICE_CUDA, 0));
        unsafe {
            let values = if x.lod().num_levels() > 0 { &**device.array.children } else { &device.array };
            assert_eq!(values.length as usize, n);
            assert_eq!(device_bytes(*values.buffers.add(1), DType::U8, n.div_ceil(8)), bits_of(&bytes), "n {n}");
            let y = from_arrow_device(&schema, &mut device).unwrap();
            (schema.release.unwrap())(&mut schema);
            assert_eq!((y.tensor().place(), y.lod()), (GPU, x.lod()));
            let back = to_place(&y, Place::Cpu).unwrap();
            let want: Vec<u8> = bytes.iter().map(|&b| u8::from(b != 0)).collect();
            assert_eq!(back.tensor().bytes().unwrap(), want, "n {n}");
        }
    }

    // Device bytes read as bits 1..10 of [0b1011_0110, 0b10]: uint8 elements relabelled as bool.
    let bytes = gpu(&LoDTensor::from_slice(&[0b1011_0110u8, 0b10], &[2], vec![]).unwrap());
    let (mut schema, mut device) = to_arrow_device(&bytes).unwrap();
    let format = schema.format;
    schema.format = c"b".as_ptr();
    (device.array.length, device.array.offset) = (9, 1);
    let y = unsafe { from_arrow_device(&schema, &mut device) }.unwrap();
    assert!(device.array.release.is_none(), "moved, and released: the bits were copied");
    schema.format = format;
    unsafe { (schema.release.unwrap())(&mut schema) };
    assert_eq!(y.tensor().place(), GPU);
    assert_eq!(to_place(&y, Place::Cpu).unwrap().tensor().bytes().unwrap(), [1, 1, 0, 1, 1, 0, 1, 0, 1]);
    // Host bits labelled as the device's are refused, naming the array.
    let host = LoDTensor::from_slice(&[0b101u8], &[1], vec![]).unwrap();
    let (mut schema, host_array) = lodtensor::interop::arrow::to_arrow(&host).unwrap();
    schema.format = c"b".as_ptr();
    let mut device = lodtensor::interop::arrow::ArrowDeviceArray {
        array: host_array,
        device_id: 0,
        device_type: DEVICE_CUDA,
        sync_event: std::ptr::null_mut(),
        reserved: [0; 3],
    };
    device.array.length = 3;
    let e = unsafe { from_arrow_device(&schema, &mut device) }.unwrap_err();
    assert!(matches!(&e, Error::InvalidArgument(m) if m.contains("array.array:")), "{e}");
    schema.format = format;
    unsafe {
        (device.array.release.unwrap())(&mut device.array);
        (schema.release.unwrap())(&mut schema);
    }
}

/// Strings and fixed-size binary in device memory taken as uint8 device tensors: a device
/// export's offsets and bytes relabelled as one `large_utf8` array (whole and sliced) and its
/// rows of bytes as `fixed_size_binary`, taken zero copy, the offsets read from the device, the
/// producer's array released once with the last handle; and device text lent as strings (UTF-8
/// checked on the device) and taken back.
#[test]
fn gpu_arrow_device_strings_are_taken_as_device_bytes() {
    use lodtensor::interop::arrow::{from_arrow_device, to_arrow_device, to_arrow_device_strings, to_arrow_strings};
    use lodtensor::interop::arrow::{ArrowArray, ArrowDeviceArray, ArrowSchema, Encoding, DEVICE_CUDA};
    use std::ffi::CStr;
    use std::sync::atomic::{AtomicUsize, Ordering};
    if !gpu_or_skip() {
        return;
    }
    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    unsafe extern "C" fn count_release(a: *mut ArrowArray) {
        RELEASED.fetch_add(1, Ordering::SeqCst);
        (*a).release = None;
    }
    unsafe extern "C" fn release_schema(s: *mut ArrowSchema) {
        (*s).release = None;
    }
    // "Grüße", "", "tok", "x" as one LoD level over their bytes, and as rows of 2 bytes.
    let text = "Grüßetokx".as_bytes();
    let sentences = LoDTensor::from_slice(text, &[text.len()], vec![vec![0, 7, 7, 10, 11]]).unwrap();
    let pairs = LoDTensor::from_slice(&text[..10], &[5, 2], vec![]).unwrap();
    // (tensor, format, array offset, LoD, the bytes taken)
    for (x, format, offset, want_lod, want) in [
        (&sentences, c"U", 0, vec![0, 7, 7, 10, 11], 0..11),
        (&sentences, c"U", 1, vec![0, 0, 3, 4], 7..11),
        (&pairs, c"w:2", 1, vec![], 2..10),
    ] {
        let on_device = gpu(x);
        let (mut lent_schema, mut lent) = to_arrow_device(&on_device).unwrap();
        unsafe {
            // The elements and, for strings, the offsets of the export, as one array.
            let elements = *(**lent.array.children).buffers.add(1);
            let mut buffers = if x.lod().num_levels() > 0 {
                vec![std::ptr::null(), *lent.array.buffers.add(1), elements]
            } else {
                vec![std::ptr::null(), elements]
            };
            let mut schema: ArrowSchema = std::mem::zeroed();
            schema.format = format.as_ptr();
            schema.release = Some(release_schema);
            let mut device = ArrowDeviceArray { array: std::mem::zeroed(), ..lent };
            device.array = ArrowArray {
                length: lent.array.length - offset,
                offset,
                n_buffers: buffers.len() as i64,
                buffers: buffers.as_mut_ptr(),
                release: Some(count_release),
                ..std::mem::zeroed()
            };
            let before = RELEASED.load(Ordering::SeqCst);
            let y = from_arrow_device(&schema, &mut device).unwrap_or_else(|e| panic!("{format:?}: {e}"));
            assert!(device.array.release.is_none(), "moved out");
            assert_eq!((y.tensor().place(), y.tensor().dtype()), (GPU, DType::U8));
            assert_eq!(y.lod().levels().first().cloned().unwrap_or_default(), want_lod, "{format:?}");
            let first = on_device.tensor().as_ptr().cast::<u8>().add(want.start);
            assert_eq!(y.tensor().as_ptr(), first.cast(), "zero copy");
            let back = to_place(&y, Place::Cpu).unwrap();
            assert_eq!(back.tensor().bytes().unwrap(), &text[want], "{format:?} from {offset}");
            drop(y);
            assert_eq!(RELEASED.load(Ordering::SeqCst), before + 1, "released with the last handle");
            (lent_schema.release.unwrap())(&mut lent_schema);
            (lent.array.release.unwrap())(&mut lent.array);
        }
    }

    // And lent back as strings: the LoD's device offsets and the tensor's device bytes.
    let on_device = gpu(&sentences);
    for encoding in [Encoding::Utf8, Encoding::Binary] {
        let (mut schema, mut device) = to_arrow_device_strings(&on_device, encoding).unwrap();
        unsafe {
            let format = CStr::from_ptr(schema.format).to_str().unwrap();
            assert_eq!(format, if encoding == Encoding::Utf8 { "U" } else { "Z" });
            assert_eq!((device.device_type, device.array.length, device.array.n_buffers), (DEVICE_CUDA, 4, 3));
            assert_eq!(*device.array.buffers.add(2), on_device.tensor().as_ptr().cast(), "zero copy");
            let offsets: Vec<u8> = [0i64, 7, 7, 10, 11].iter().flat_map(|o| o.to_ne_bytes()).collect();
            assert_eq!(device_bytes(*device.array.buffers.add(1), DType::I64, 5), offsets);
            let y = from_arrow_device(&schema, &mut device).unwrap();
            (schema.release.unwrap())(&mut schema);
            assert_eq!((y.tensor().as_ptr(), y.lod()), (on_device.tensor().as_ptr(), sentences.lod()));
        }
    }
    // "Gr" and the first byte of "ü" are not UTF-8 on their own.
    let split = LoDTensor::from_slice(text, &[text.len()], vec![vec![0, 3, 11]]).unwrap();
    let e = to_arrow_device_strings(&gpu(&split), Encoding::Utf8).err().unwrap();
    assert!(matches!(&e, Error::InvalidArgument(m) if m.ends_with("(bytes 0..3) is not UTF-8 at byte 2")), "{e}");
    let (mut schema, mut device) = to_arrow_device_strings(&gpu(&split), Encoding::Binary).unwrap();
    unsafe {
        (schema.release.unwrap())(&mut schema);
        (device.array.release.unwrap())(&mut device.array);
    }
    let e = to_arrow_strings(&on_device, Encoding::Binary).err().unwrap();
    assert!(matches!(&e, Error::Unsupported(m) if m.contains("lodtensor_to_arrow_device_strings")), "{e}");
}

/// Random bytes for the UTF-8 check, as strings: characters of every length (the code points at
/// the ends of each length's range among them), then in half of them one to three bytes replaced
/// (by bytes at the ends of UTF-8's ranges among others), dropped or doubled, or a sequence just
/// inside or outside one of UTF-8's rules put in; cut into strings at
/// random bytes (so inside characters too) or, three times in four, at the next character, and
/// sometimes twice at one place (an empty string). Returns the
/// bytes and their LoD level.
fn utf8_like_strings(rng: &mut Rng) -> (Vec<u8>, Vec<usize>) {
    const EDGE_POINTS: [u32; 10] = [0, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF];
    const EDGE_BYTES: [u8; 24] = [
        0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF,
        0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF,
    ];
    // At a character: each just inside or just outside a rule of UTF-8 (overlong forms,
    // surrogates, past U+10FFFF, a character cut short, a lone continuation).
    const EDGE_SEQUENCES: [&[u8]; 20] = [
        &[0xC0, 0x80],
        &[0xC1, 0xBF],
        &[0xC2, 0x80],
        &[0xE0, 0x9F, 0xBF],
        &[0xE0, 0xA0, 0x80],
        &[0xED, 0x9F, 0xBF],
        &[0xED, 0xA0, 0x80],
        &[0xEF, 0xBF, 0xBF],
        &[0xF0, 0x8F, 0xBF, 0xBF],
        &[0xF0, 0x90, 0x80, 0x80],
        &[0xF4, 0x8F, 0xBF, 0xBF],
        &[0xF4, 0x90, 0x80, 0x80],
        &[0xF5, 0x80, 0x80, 0x80],
        &[0xE2, 0x82],
        &[0xF0, 0x9F, 0x98],
        &[0xE2, 0x82, 0xAC, 0x80],
        &[0x80],
        &[0xBF, 0xBF],
        &[0xC3],
        &[0xFF],
    ];
    const RANGES: [(u32, u32); 4] = [(0, 0x80), (0x80, 0x800), (0x800, 0x10000), (0x10000, 0x110000)];
    let most = if rng.below(8) == 0 { 3000 } else { 40 };
    let chars = rng.below(most);
    let mut bytes = Vec::new();
    for _ in 0..chars {
        let c = if rng.below(4) == 0 {
            EDGE_POINTS[rng.below(EDGE_POINTS.len())]
        } else {
            let (lo, hi) = RANGES[rng.below(4)];
            lo + rng.below((hi - lo) as usize) as u32
        };
        let c = char::from_u32(c).unwrap_or('\u{FFFD}'); // a surrogate drawn
        bytes.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
    }
    let damage = if rng.below(2) == 0 { 0 } else { 1 + rng.below(3) };
    for _ in 0..damage {
        if bytes.is_empty() {
            break;
        }
        let i = rng.below(bytes.len());
        match rng.below(5) {
            0 => bytes[i] = rng.below(256) as u8,
            1 => bytes[i] = EDGE_BYTES[rng.below(EDGE_BYTES.len())],
            2 => drop(bytes.remove(i)),
            3 => bytes.insert(i, bytes[i]),
            _ => {
                let at = (i..bytes.len()).find(|&k| bytes[k] & 0xC0 != 0x80).unwrap_or(bytes.len());
                let edge = EDGE_SEQUENCES[rng.below(EDGE_SEQUENCES.len())];
                bytes.splice(at..at, edge.iter().copied());
            }
        }
    }
    let mut cuts: Vec<usize> = (0..rng.below(6))
        .map(|_| {
            let mut at = rng.below(bytes.len() + 1);
            if rng.below(4) > 0 {
                while at < bytes.len() && bytes[at] & 0xC0 == 0x80 {
                    at += 1;
                }
            }
            at
        })
        .collect();
    if let Some(&c) = cuts.first().filter(|_| rng.below(4) == 0) {
        cuts.push(c);
    }
    cuts.sort_unstable();
    let level = std::iter::once(0).chain(cuts).chain(std::iter::once(bytes.len())).collect();
    (bytes, level)
}

/// The UTF-8 check of device text (a kernel over the bytes where they lie) against a check string
/// by string with `std::str::from_utf8`, on 3000 random texts, about half of them broken (a bad
/// byte, a missing or doubled one, a character cut between two strings): device text is lent as
/// UTF-8 exactly when every string is UTF-8, and refused with the host export's message, which
/// names the first broken string.
#[test]
fn gpu_utf8_check_agrees_with_a_check_string_by_string() {
    use lodtensor::interop::arrow::{to_arrow_device_strings, to_arrow_strings, Encoding};
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0x07f8);
    let (mut lent, mut refused, mut cut_only) = (0, 0, 0);
    for round in 0..3000 {
        let (bytes, level) = utf8_like_strings(&mut rng);
        let whole = std::str::from_utf8(&bytes).is_ok();
        let broken = level.windows(2).any(|w| std::str::from_utf8(&bytes[w[0]..w[1]]).is_err());
        let x = LoDTensor::from_slice(&bytes, &[bytes.len()], vec![level.clone()]).unwrap();
        match (to_arrow_device_strings(&gpu(&x), Encoding::Utf8), broken) {
            (Ok((mut schema, mut device)), false) => unsafe {
                (schema.release.unwrap())(&mut schema);
                (device.array.release.unwrap())(&mut device.array);
                lent += 1;
            },
            (Err(Error::InvalidArgument(m)), true) => {
                let host = to_arrow_strings(&x, Encoding::Utf8).err().unwrap();
                assert_eq!(Error::InvalidArgument(m), host, "round {round}");
                refused += 1;
                cut_only += whole as usize;
            }
            (got, _) => panic!("round {round}: {:?} for {bytes:x?} in {level:?}", got.map(|_| ()).err()),
        }
    }
    assert!(lent > 1000 && refused > 1000 && cut_only > 100, "{lent} lent, {refused} refused, {cut_only} cut only");
}

/// Device arrays on a CUDA device taken as device tensors: a device export comes back as the
/// same device memory, the LoD read from the device, with and without an event to wait for;
/// host buffers labelled as device memory, and bool elements there, are refused and left alone.
#[test]
fn gpu_arrow_device_import_takes_device_memory() {
    use lodtensor::interop::arrow::{from_arrow_device, to_arrow, to_arrow_device, ArrowDeviceArray, DEVICE_CUDA};
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0xa771);
    for case in 0..12 {
        let dtype = [DType::U8, DType::I16, DType::I32, DType::I64, DType::F16, DType::F32, DType::F64][case % 7];
        let lengths = random_lengths(&mut rng, SEQUENCE_COUNTS[case % 4].max(1), 5);
        let rows: usize = lengths.iter().sum();
        let x = random_tensor(&mut rng, dtype, &[rows, case % 3 + 1], Lod::from_lengths(&[lengths]).unwrap(), false);
        let on_device = gpu(&x);
        let (mut schema, mut device) = to_arrow_device(&on_device).unwrap();
        // A `CUevent*` to wait for: the emulator accepts any handle but NULL (a real driver needs
        // a live event, which this test cannot make).
        let mut event: usize = 0x1000;
        if cfg!(feature = "cuda-emulator") && case % 2 == 0 {
            device.sync_event = (&raw mut event).cast();
        }
        let y = unsafe { from_arrow_device(&schema, &mut device) }.unwrap();
        assert!(device.array.release.is_none(), "moved out");
        unsafe { (schema.release.unwrap())(&mut schema) };
        assert_eq!(y.tensor().place(), GPU);
        assert_eq!(y.tensor().as_ptr(), on_device.tensor().as_ptr(), "zero copy");
        assert_eq!(y.lod(), x.lod());
        drop(on_device);
        let back = to_place(&y, Place::Cpu).unwrap();
        assert_eq!(back.tensor().bytes().unwrap(), x.tensor().bytes().unwrap(), "case {case}");
    }

    // An event the driver does not know (a NULL handle, which the emulator refuses as the driver
    // does): the driver's failure, nothing taken.
    if cfg!(feature = "cuda-emulator") {
        let (mut schema, mut device) =
            to_arrow_device(&gpu(&LoDTensor::from_slice(&[7i64], &[1], vec![]).unwrap())).unwrap();
        let mut no_event: usize = 0;
        device.sync_event = (&raw mut no_event).cast();
        let e = unsafe { from_arrow_device(&schema, &mut device) }.unwrap_err();
        assert!(matches!(&e, Error::Internal(m) if m.contains("array.sync_event")), "{e}");
        unsafe {
            (device.array.release.unwrap())(&mut device.array);
            (schema.release.unwrap())(&mut schema);
        }
    }

    // Host memory said to be on the device: the LoD offsets are not device memory.
    let x = LoDTensor::from_slice(&[1i32, 2, 3], &[3], vec![vec![0, 1, 3]]).unwrap();
    let (mut schema, host) = to_arrow(&x).unwrap();
    let mut device = ArrowDeviceArray {
        array: host,
        device_id: 0,
        device_type: DEVICE_CUDA,
        sync_event: std::ptr::null_mut(),
        reserved: [0; 3],
    };
    let e = unsafe { from_arrow_device(&schema, &mut device) }.unwrap_err();
    assert!(matches!(&e, Error::InvalidArgument(m) if m.contains("array.array:") && m.contains("cuda:0")), "{e}");
    assert!(device.array.release.is_some(), "left with the caller");
    unsafe {
        (device.array.release.unwrap())(&mut device.array);
        (schema.release.unwrap())(&mut schema);
    }
}

/// Record batches of device tensors: lent with each column's elements in place on the device and
/// its chain the column's own device export; taken back as device tensors over the same memory,
/// equal to the host columns; columns on two places, and a device column through the host call,
/// refused; a text column lent as device strings, and broken text refused.
#[test]
fn gpu_arrow_device_record_batches_lend_and_take_device_memory() {
    use lodtensor::interop::arrow::{
        from_arrow_device_record_batch, to_arrow_device, to_arrow_device_record_batch, to_arrow_record_batch,
        Encoding::{Utf8, Values},
        DEVICE_CUDA,
    };
    use std::ffi::CStr;
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0xa772);
    for case in 0..8 {
        let entries = SEQUENCE_COUNTS[case % 4].max(1);
        let lengths = random_lengths(&mut rng, entries, 4);
        let rows: usize = lengths.iter().sum();
        let lod = Lod::from_lengths(&[lengths]).unwrap();
        let tokens = random_tensor(&mut rng, DType::I64, &[rows], lod, false);
        let scores = random_tensor(&mut rng, DType::F32, &[entries, 1 + case % 3], Lod::empty(), false);
        let columns = [gpu(&tokens), gpu(&scores)];
        let named = [(&columns[0], "tokens", Values), (&columns[1], "scores", Values)];
        let (mut schema, mut device) = to_arrow_device_record_batch(&named).unwrap();
        assert_eq!((device.device_type, device.device_id), (DEVICE_CUDA, 0));
        assert!(device.sync_event.is_null());
        unsafe {
            for (i, x) in columns.iter().enumerate() {
                let (alone_schema, alone) = to_arrow_device(x).unwrap();
                let column = &**device.array.children.add(i);
                assert_eq!((column.length, column.n_children), (alone.array.length, alone.array.n_children));
                let (mut s, mut a) = (alone_schema, alone.array);
                (s.release.unwrap())(&mut s);
                (a.release.unwrap())(&mut a);
            }
            let back = from_arrow_device_record_batch(&schema, &mut device).unwrap();
            assert!(device.array.release.is_none(), "moved out");
            (schema.release.unwrap())(&mut schema);
            for ((y, x), host) in back.iter().zip(&columns).zip([&tokens, &scores]) {
                assert_eq!(y.tensor().place(), GPU);
                assert_eq!(y.tensor().as_ptr(), x.tensor().as_ptr(), "zero copy");
                assert_eq!(y.lod(), host.lod());
                let y = to_place(y, Place::Cpu).unwrap();
                assert_eq!(y.tensor().bytes().unwrap(), host.tensor().bytes().unwrap(), "case {case}");
            }
        }
        let mixed = [(&columns[0], "tokens", Values), (&scores, "scores", Values)];
        let e = to_arrow_device_record_batch(&mixed).err().expect("refused");
        assert!(
            matches!(&e, Error::InvalidArgument(m) if m.contains("columns[1]: on cpu, columns[0] on cuda:0")),
            "{e}"
        );
        let e = to_arrow_record_batch(&named).err().expect("refused");
        let points_on = |m: &str| m.contains("columns[0]: on cuda:0") && m.contains("_to_arrow_device_record_batch");
        assert!(matches!(&e, Error::Unsupported(m) if points_on(m)), "{e}");
    }

    // A text column on the device beside a column of scores: its offsets and bytes device memory,
    // UTF-8 checked there; a character split between two strings refused, naming the column.
    let text = "Grüßetokx".as_bytes();
    let sentences = gpu(&LoDTensor::from_slice(text, &[text.len()], vec![vec![0, 7, 7, 10, 11]]).unwrap());
    let scores = gpu(&random_tensor(&mut rng, DType::F32, &[4], Lod::empty(), false));
    let named = [(&scores, "scores", Values), (&sentences, "text", Utf8)];
    let (mut schema, mut device) = to_arrow_device_record_batch(&named).unwrap();
    unsafe {
        let strings = &**device.array.children.add(1);
        assert_eq!(CStr::from_ptr((**schema.children.add(1)).format).to_str().unwrap(), "U");
        assert_eq!((strings.length, strings.n_buffers), (4, 3));
        assert_eq!(*strings.buffers.add(2), sentences.tensor().as_ptr().cast(), "zero copy");
        let offsets: Vec<u8> = [0i64, 7, 7, 10, 11].iter().flat_map(|o| o.to_ne_bytes()).collect();
        assert_eq!(device_bytes(*strings.buffers.add(1), DType::I64, 5), offsets);
        let back = from_arrow_device_record_batch(&schema, &mut device).unwrap();
        (schema.release.unwrap())(&mut schema);
        assert_eq!((back[1].tensor().as_ptr(), back[1].lod()), (sentences.tensor().as_ptr(), sentences.lod()));
    }
    let split = gpu(&LoDTensor::from_slice(text, &[text.len()], vec![vec![0, 3, 4, 5, 11]]).unwrap());
    let named = [(&scores, "scores", Values), (&split, "text", Utf8)];
    let e = to_arrow_device_record_batch(&named).err().expect("refused");
    let want = "columns[1]: sequence 0 of LoD level 0 (bytes 0..3) is not UTF-8 at byte 2";
    assert!(matches!(&e, Error::InvalidArgument(m) if m == want), "{e}");
}

#[test]
fn gpu_gather_rows_equals_cpu_with_the_index_on_the_device() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0x6a7);
    for case in 0..30 {
        let dtype = DType::ALL[case % DType::ALL.len()];
        let rows = [1, 7, 500, 0][case % 4];
        let x = random_tensor(&mut rng, dtype, &[rows, 1 + case % 9], Lod::empty(), case % 2 == 0);
        let k = if rows == 0 { 0 } else { [0, 1, 40, 900][case % 3] };
        // Runs of consecutive indices (one range each) mixed with random ones.
        let mut index = Vec::new();
        while index.len() < k {
            let start = rng.below(rows);
            let run = 1 + rng.below(5);
            index.extend((start..(start + run).min(rows)).map(|i| i as i64));
        }
        index.truncate(k);
        let index = if case % 2 == 0 {
            LoDTensor::from_slice(&index, &[k], vec![]).unwrap()
        } else {
            let i32s: Vec<i32> = index.iter().map(|&v| v as i32).collect();
            LoDTensor::from_slice(&i32s, &[k, 1], vec![]).unwrap()
        };
        let want = gather_rows(&x, &index).unwrap();
        assert_same(&gather_rows(&gpu(&x), &gpu(&index)).unwrap(), &want, &format!("gather_rows case {case}"));
    }
    let x = LoDTensor::from_slice(&[1u8, 2, 3], &[3, 1], vec![]).unwrap();
    let bad = LoDTensor::from_slice(&[0i64, 3], &[2], vec![]).unwrap();
    let want = gather_rows(&x, &bad);
    assert!(matches!(want, Err(Error::OutOfRange(_))));
    assert_same_outcome(gather_rows(&gpu(&x), &gpu(&bad)), want, "gather_rows out of range");
    // A bad index is caught whatever the rows' width (zero included: no element is moved) and
    // wherever it stands, negative or past the end.
    for width in [0usize, 1, 6] {
        let x = LoDTensor::dense(Tensor::zeros(DType::F32, Dim::new(&[3, width]).unwrap()).unwrap());
        for bad in [[0i64, 1, 2, -1, 0], [2, 2, 1, 0, 3]] {
            let bad = LoDTensor::from_slice(&bad, &[5], vec![]).unwrap();
            let want = gather_rows(&x, &bad);
            assert!(matches!(want, Err(Error::OutOfRange(_))), "width {width}");
            assert_same_outcome(gather_rows(&gpu(&x), &gpu(&bad)), want, &format!("width {width}: bad index"));
        }
    }
}

/// `n` values of a numeric `dtype` around the range of `maxlen` (negatives, fractions for floats).
fn mask_input(rng: &mut Rng, dtype: DType, n: usize) -> Tensor {
    let v: Vec<f64> = (0..n).map(|_| rng.below(12) as f64 - 2.0 + if rng.below(2) == 0 { 0.5 } else { 0.0 }).collect();
    let int = |v: &f64| v.floor();
    match dtype {
        DType::U8 => Tensor::from_slice(&v.iter().map(|v| int(v).max(0.0) as u8).collect::<Vec<_>>(), &[n]),
        DType::I8 => Tensor::from_slice(&v.iter().map(|v| int(v) as i8).collect::<Vec<_>>(), &[n]),
        DType::I16 => Tensor::from_slice(&v.iter().map(|v| int(v) as i16).collect::<Vec<_>>(), &[n]),
        DType::I32 => Tensor::from_slice(&v.iter().map(|v| int(v) as i32).collect::<Vec<_>>(), &[n]),
        DType::I64 => Tensor::from_slice(&v.iter().map(|v| int(v) as i64).collect::<Vec<_>>(), &[n]),
        DType::F16 => Tensor::from_slice(&v.iter().map(|&v| f16::from_f64(v)).collect::<Vec<_>>(), &[n]),
        DType::BF16 => Tensor::from_slice(&v.iter().map(|&v| bf16::from_f64(v)).collect::<Vec<_>>(), &[n]),
        DType::F32 => Tensor::from_slice(&v.iter().map(|&v| v as f32).collect::<Vec<_>>(), &[n]),
        DType::F64 => Tensor::from_slice(&v, &[n]),
        DType::Bool => Tensor::from_bytes(DType::Bool, Dim::new(&[n]).unwrap(), &vec![1; n]),
    }
    .unwrap()
}

#[test]
fn gpu_mask_equals_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0x3a5c);
    for (case, &x_dtype) in DType::ALL.iter().enumerate() {
        for (k, &out_dtype) in DType::ALL.iter().enumerate() {
            let n = [0, 1, 37, 300][(case + k) % 4];
            let x = LoDTensor::dense(mask_input(&mut rng, x_dtype, n));
            for maxlen in [-1, 1, 7] {
                let want = sequence_mask(&x, maxlen, out_dtype);
                let got = sequence_mask(&gpu(&x), maxlen, out_dtype);
                if let Ok(w) = &want {
                    assert!(w.tensor().numel() > 0 || n == 0 || maxlen < 0, "the test must produce masks");
                }
                assert_same_outcome(got, want, &format!("mask {x_dtype} -> {out_dtype}, n {n}, maxlen {maxlen}"));
            }
        }
    }
    // 2-d x, and the errors.
    let x = LoDTensor::dense(Tensor::from_slice(&[3i32, 0, 1, 5, 2, 2], &[2, 3]).unwrap());
    assert_same(
        &sequence_mask(&gpu(&x), 6, DType::F32).unwrap(),
        &sequence_mask(&x, 6, DType::F32).unwrap(),
        "2-d mask",
    );
    assert_same_outcome(sequence_mask(&gpu(&x), 0, DType::I64), sequence_mask(&x, 0, DType::I64), "maxlen 0");
}

#[test]
fn gpu_enumerate_equals_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0xe1e1);
    for case in 0..32 {
        let seqs = SEQUENCE_COUNTS[case % 4];
        let lengths = if case < 4 { vec![0; seqs] } else { random_lengths(&mut rng, seqs, 12) };
        let rows: usize = lengths.iter().sum();
        // 2-level LoDs too: windows stay inside the sequences of the last level.
        let lod = if case % 3 == 2 {
            let top = vec![seqs / 2, seqs - seqs / 2];
            Lod::from_lengths(&[top, lengths]).unwrap()
        } else {
            Lod::from_lengths(&[lengths]).unwrap()
        };
        let dtype = if case % 2 == 0 { DType::I32 } else { DType::I64 };
        let dims: &[usize] = if case % 4 < 2 { &[rows, 1] } else { &[rows] };
        let x = random_tensor(&mut rng, dtype, dims, lod, case % 5 == 0);
        let win = [2, 3, 7, 30][(case / 2) % 4];
        let pad = [0, -1, 5][case % 3];
        let want = sequence_enumerate(&x, win, pad);
        let got = sequence_enumerate(&gpu(&x), win, pad);
        assert_same_outcome(got, want, &format!("enumerate case {case}: {seqs} sequences, win {win}, pad {pad}"));
    }
    let x = LoDTensor::from_slice(&[1i32, 2, 3], &[3, 1], vec![vec![0, 3]]).unwrap();
    assert_same_outcome(sequence_enumerate(&gpu(&x), 1, 0), sequence_enumerate(&x, 1, 0), "win 1");
    assert_same_outcome(sequence_enumerate(&gpu(&x), 2, 1 << 40), sequence_enumerate(&x, 2, 1 << 40), "pad range");
}

#[test]
fn gpu_erase_equals_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0xe2a5);
    for case in 0..32 {
        let seqs = SEQUENCE_COUNTS[case % 4];
        let lengths = if case < 4 { vec![0; seqs] } else { random_lengths(&mut rng, seqs, 12) };
        let rows: usize = lengths.iter().sum();
        let lod = if case % 3 == 2 {
            Lod::from_lengths(&[vec![seqs / 3, seqs - seqs / 3], lengths]).unwrap()
        } else {
            Lod::from_lengths(&[lengths]).unwrap()
        };
        let ids: Vec<i64> = (0..rows).map(|_| rng.below(8) as i64 - 1).collect();
        let x = if case % 2 == 0 {
            LoDTensor::new(Tensor::from_slice(&ids, &[rows, 1]).unwrap(), lod).unwrap()
        } else {
            let i32s: Vec<i32> = ids.iter().map(|&v| v as i32).collect();
            LoDTensor::new(Tensor::from_slice(&i32s, &[rows]).unwrap(), lod).unwrap()
        };
        let tokens: &[i64] = [&[][..], &[3], &[2, 3, 5], &[-1, 0, 1, 2, 3, 4, 5, 6], &[6, 6, 1]][case % 5];
        let want = sequence_erase(&x, tokens);
        let got = sequence_erase(&gpu(&x), tokens);
        assert_same_outcome(got, want, &format!("erase case {case}: tokens {tokens:?}"));
    }
    let x = LoDTensor::from_slice(&[1f32, 2.], &[2, 1], vec![vec![0, 2]]).unwrap();
    assert_same_outcome(sequence_erase(&gpu(&x), &[1]), sequence_erase(&x, &[1]), "float x");
}

/// sequence_conv on the device against the CPU. The kernel sums in the CPU's order without fused
/// multiply-adds, so the emulator (and, by IEEE rounding, a GPU) gives the CPU's bits; the test
/// allows |got - want| <= 1e-5 * (1 + |want|) for float32 and 1e-12 * (1 + |want|) for float64
/// (a few units in the last place for these sizes: products of values in [-1, 1], at most 60
/// terms), which a kernel summing in another order would also meet.
#[test]
fn gpu_conv_equals_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0xc0c0);
    let mut max_diff = 0f64;
    for case in 0..40 {
        let seqs = SEQUENCE_COUNTS[case % 4];
        let lengths = if case < 4 { vec![0; seqs] } else { random_lengths(&mut rng, seqs, 7) };
        let rows: usize = lengths.iter().sum();
        let (start, length) = [(0i64, 1i64), (-1, 3), (2, 3), (-2, 5), (0, 3), (-4, 2)][case % 6];
        let trainable = case % 2 == 1 && !(start == 0 && length == 1);
        let n = [1, 3, 4, 0][(case / 6) % 4];
        let m = [1, 4, 5][case % 3];
        let up = (-start).max(0) as usize;
        let down = (start + length - 1).max(0) as usize;
        let f64s = case % 4 == 3;
        let values = |rng: &mut Rng, k: usize| -> Vec<f64> { (0..k).map(|_| 2.0 * rng.unit() as f64 - 1.0).collect() };
        let make = |v: Vec<f64>, dims: &[usize], lod: Vec<Vec<usize>>| {
            if f64s {
                LoDTensor::from_slice(&v, dims, lod).unwrap()
            } else {
                LoDTensor::from_slice(&v.iter().map(|&v| v as f32).collect::<Vec<_>>(), dims, lod).unwrap()
            }
        };
        let x = make(values(&mut rng, rows * n), &[rows, n], Lod::from_lengths(&[lengths]).unwrap().levels().to_vec());
        let filter = make(values(&mut rng, length as usize * n * m), &[length as usize * n, m], vec![]);
        let padding = make(values(&mut rng, (up + down) * n), &[up + down, n], vec![]);
        let want = sequence_conv(&x, &filter, Some(&padding), length, start, 1, trainable).unwrap();
        let got = sequence_conv(&gpu(&x), &gpu(&filter), Some(&gpu(&padding)), length, start, 1, trainable).unwrap();
        assert_eq!(got.tensor().place(), GPU);
        assert_eq!((got.dims(), got.lod()), (want.dims(), want.lod()), "conv case {case}");
        let got = to_place(&got, Place::Cpu).unwrap();
        let (g, w): (Vec<f64>, Vec<f64>) = if f64s {
            (got.tensor().as_slice::<f64>().unwrap().to_vec(), want.tensor().as_slice::<f64>().unwrap().to_vec())
        } else {
            let up = |t: &LoDTensor| t.tensor().as_slice::<f32>().unwrap().iter().map(|&v| v as f64).collect();
            (up(&got), up(&want))
        };
        let tol = if f64s { 1e-12 } else { 1e-5 };
        for (i, (g, w)) in g.iter().zip(&w).enumerate() {
            max_diff = max_diff.max((g - w).abs());
            assert!((g - w).abs() <= tol * (1.0 + w.abs()), "conv case {case}, element {i}: {g} vs {w}");
        }
    }
    eprintln!("sequence_conv: largest |device - CPU| = {max_diff:e}");
    // Errors on device inputs: the CPU's.
    let x = LoDTensor::from_slice(&[1f32, 2.], &[2, 1], vec![vec![0, 2]]).unwrap();
    let f = LoDTensor::from_slice(&[1f32, 2.], &[2, 1], vec![]).unwrap();
    assert_same_outcome(
        sequence_conv(&gpu(&x), &gpu(&f), None, 3, -1, 1, false),
        sequence_conv(&x, &f, None, 3, -1, 1, false),
        "filter dims",
    );
    let xi = LoDTensor::from_slice(&[1i32, 2], &[2, 1], vec![vec![0, 2]]).unwrap();
    let fi = LoDTensor::from_slice(&[1i32, 2], &[2, 1], vec![]).unwrap();
    let want = sequence_conv(&xi, &fi, None, 2, 0, 1, false);
    assert!(matches!(want, Err(Error::Unsupported(_))));
    assert_same_outcome(sequence_conv(&gpu(&xi), &gpu(&fi), None, 2, 0, 1, false), want, "int conv");
}

/// x of `dtype` `[rows, width]`, ids (repeated, int32 or int64) and updates for sequence_scatter.
fn scatter_case(rng: &mut Rng, dtype: DType, case: usize) -> (LoDTensor, LoDTensor, LoDTensor) {
    // Up to 120000 target elements (three radix passes of the device's sort by target) and two
    // tiles of the sort's 1024 ids.
    let rows = [1, 4, 60, 400][case % 4];
    let width = [1, 3, 7, 300][(case / 4) % 4];
    let seqs = 1 + rng.below(rows);
    let lengths = random_lengths(rng, seqs, 9);
    let m: usize = lengths.iter().sum();
    let lod = Lod::from_lengths(&[lengths]).unwrap();
    // Small ids make duplicates; integers hold any bits, so sums wrap.
    let ids: Vec<i64> = (0..m).map(|_| rng.below(width) as i64).collect();
    let ids = if case.is_multiple_of(2) {
        LoDTensor::new(Tensor::from_slice(&ids, &[m, 1]).unwrap(), lod.clone()).unwrap()
    } else {
        let i32s: Vec<i32> = ids.iter().map(|&v| v as i32).collect();
        LoDTensor::new(Tensor::from_slice(&i32s, &[m]).unwrap(), lod.clone()).unwrap()
    };
    let floats = |rng: &mut Rng, n: usize| -> Vec<f32> { (0..n).map(|_| 8.0 * rng.unit() - 4.0).collect() };
    let values = |rng: &mut Rng, dims: &[usize], lod: Lod| -> LoDTensor {
        let n = dims.iter().product();
        let t = match dtype {
            // Finite values: a GPU's NaN payloads are its own.
            DType::F16 => {
                Tensor::from_slice(&floats(rng, n).iter().map(|&v| f16::from_f32(v)).collect::<Vec<_>>(), dims)
            }
            DType::BF16 => {
                Tensor::from_slice(&floats(rng, n).iter().map(|&v| bf16::from_f32(v)).collect::<Vec<_>>(), dims)
            }
            DType::F32 => Tensor::from_slice(&floats(rng, n), dims),
            DType::F64 => Tensor::from_slice(&floats(rng, n).iter().map(|&v| v as f64 / 3.0).collect::<Vec<_>>(), dims),
            _ => Tensor::from_bytes(dtype, Dim::new(dims).unwrap(), &random_bytes(rng, dtype, n)),
        };
        LoDTensor::new(t.unwrap(), lod).unwrap()
    };
    let x = values(rng, &[rows, width], Lod::empty());
    let updates = values(rng, &[m, 1], lod);
    (x, ids, updates)
}

#[test]
fn gpu_scatter_equals_cpu_out_of_place_and_in_place() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0x5ca7);
    let dtypes =
        [DType::U8, DType::I8, DType::I16, DType::I32, DType::I64, DType::F16, DType::BF16, DType::F32, DType::F64];
    for (k, &dtype) in dtypes.iter().enumerate() {
        for case in 0..12 {
            let (x, ids, updates) = scatter_case(&mut rng, dtype, case + k);
            let what = format!("scatter {dtype}, case {case}");
            let want = sequence_scatter(&x, &ids, &updates).unwrap();
            let (xd, idsd, updd) = (gpu(&x), gpu(&ids), gpu(&updates));
            assert_same(&sequence_scatter(&xd, &idsd, &updd).unwrap(), &want, &what);
            assert!(bytes_of(&xd) == x.tensor().bytes().unwrap(), "{what}: out of place changed x");
            let mut inplace = xd.copy_to_same_place();
            sequence_scatter_inplace(&mut inplace, &idsd, &updd).unwrap();
            assert_same(&inplace, &want, &format!("{what}, in place"));
        }
    }
    // The CPU's errors: an id out of range, too many sequences, bool x; in place on shared memory.
    let x = LoDTensor::from_slice(&[0i32; 6], &[2, 3], vec![]).unwrap();
    let upd = LoDTensor::from_slice(&[1i32, 1], &[2, 1], vec![vec![0, 1, 2]]).unwrap();
    for ids in [[0i64, 3], [-1, 0]] {
        let ids = LoDTensor::from_slice(&ids, &[2, 1], vec![vec![0, 1, 2]]).unwrap();
        let want = sequence_scatter(&x, &ids, &upd);
        assert!(matches!(want, Err(Error::OutOfRange(_))));
        assert_same_outcome(sequence_scatter(&gpu(&x), &gpu(&ids), &gpu(&upd)), want, "scatter id range");
        let mut xd = gpu(&x);
        assert!(sequence_scatter_inplace(&mut xd, &gpu(&ids), &gpu(&upd)).is_err());
        assert!(bytes_of(&xd) == x.tensor().bytes().unwrap(), "a failed in-place scatter wrote");
    }
    let ids = LoDTensor::from_slice(&[0i64, 1, 2], &[3, 1], vec![vec![0, 1, 2, 3]]).unwrap();
    let upd3 = LoDTensor::from_slice(&[1i32, 1, 1], &[3, 1], vec![vec![0, 1, 2, 3]]).unwrap();
    assert_same_outcome(
        sequence_scatter(&gpu(&x), &gpu(&ids), &gpu(&upd3)),
        sequence_scatter(&x, &ids, &upd3),
        "more sequences than rows",
    );
    let xb =
        LoDTensor::new(Tensor::from_bytes(DType::Bool, Dim::new(&[2, 3]).unwrap(), &[0; 6]).unwrap(), Lod::empty())
            .unwrap();
    let ub = LoDTensor::new(
        Tensor::from_bytes(DType::Bool, Dim::new(&[2, 1]).unwrap(), &[1; 2]).unwrap(),
        upd.lod().clone(),
    )
    .unwrap();
    // A bool x is refused as such on both places, whatever its ids hold (the CPU checks ids
    // before it scatters, a device in its kernel).
    for ids in [[0i64, 1], [0, 3]] {
        let ids = LoDTensor::from_slice(&ids, &[2, 1], vec![vec![0, 1, 2]]).unwrap();
        let want = sequence_scatter(&xb, &ids, &ub);
        assert!(matches!(&want, Err(Error::Unsupported(m)) if m.starts_with("x: dtype bool")), "{want:?}");
        assert_same_outcome(sequence_scatter(&gpu(&xb), &gpu(&ids), &gpu(&ub)), want, "bool scatter");
        let (mut on_host, mut on_device) = (xb.copy().unwrap(), gpu(&xb));
        let want = sequence_scatter_inplace(&mut on_host, &ids, &ub).map(|()| on_host);
        let got = sequence_scatter_inplace(&mut on_device, &gpu(&ids), &gpu(&ub)).map(|()| on_device);
        assert_same_outcome(got, want, "bool scatter in place");
    }
    let ids2 = LoDTensor::from_slice(&[0i64, 1], &[2, 1], vec![vec![0, 1, 2]]).unwrap();
    let mut xd = gpu(&x);
    let _share = xd.clone();
    assert!(matches!(sequence_scatter_inplace(&mut xd, &gpu(&ids2), &gpu(&upd)), Err(Error::InvalidArgument(_))));
}

/// A copy of a device tensor on its device, with its own memory (for in-place tests).
trait CopyOnDevice {
    fn copy_to_same_place(&self) -> LoDTensor;
}

impl CopyOnDevice for LoDTensor {
    fn copy_to_same_place(&self) -> LoDTensor {
        to_place(self, self.tensor().place()).unwrap()
    }
}

/// Inputs on different places (the CPU and cuda:0, or cuda:0 and cuda:1) are an InvalidArgument
/// naming both, for every op with more than one input.
#[test]
fn gpu_mixed_places_are_errors_naming_both() {
    if !gpu_or_skip() {
        return;
    }
    let second = if cuda_device_count().unwrap() > 1 { Some(Place::Cuda(1)) } else { None };
    let x = LoDTensor::from_slice(&[1f32, 2., 3., 4.], &[4, 1], vec![vec![0, 1, 4]]).unwrap();
    let y = LoDTensor::from_slice(&[0u8; 3], &[3, 1], vec![vec![0, 2, 3]]).unwrap();
    let idx = LoDTensor::from_slice(&[1i64, 0], &[2, 1], vec![]).unwrap();
    let xd = gpu(&x);
    let mut others: Vec<(LoDTensor, &str)> = vec![(x.clone(), "cpu")];
    if let Some(p) = second {
        others.push((to_place(&x, p).unwrap(), "cuda:1"));
    }
    for (other, name) in &others {
        assert_mixed(sequence_concat(&[&xd, other]), "cuda:0", name);
        assert_mixed(sequence_concat(&[other, &xd]), "cuda:0", name);
        let idx_other = to_place(&idx, other.tensor().place()).unwrap();
        assert_mixed(sequence_slice(&xd, &idx_other, &gpu(&idx)), "cuda:0", name);
        assert_mixed(sequence_slice(&xd, &gpu(&idx), &idx_other), "cuda:0", name);
        assert_mixed(gather_rows(&xd, &idx_other), "cuda:0", name);
        assert_mixed(gather_rows(other, &gpu(&idx)), "cuda:0", name);
        let y_other = to_place(&y, other.tensor().place()).unwrap();
        assert_mixed(sequence_expand(&xd, &y_other, 0), "cuda:0", name);
        assert_mixed(sequence_expand(other, &gpu(&y), 0), "cuda:0", name);
        let dense = LoDTensor::from_slice(&[1f32, 2.], &[2, 1], vec![]).unwrap();
        assert_mixed(sequence_expand_as(&gpu(&dense), &y_other), "cuda:0", name);
        assert_mixed(sequence_expand_as(&to_place(&dense, other.tensor().place()).unwrap(), &gpu(&y)), "cuda:0", name);
        let f = LoDTensor::from_slice(&[1f32, 2., 3.], &[3, 1], vec![]).unwrap();
        let f_other = to_place(&f, other.tensor().place()).unwrap();
        assert_mixed(sequence_conv(&xd, &f_other, None, 3, -1, 1, false), "cuda:0", name);
        let pad = LoDTensor::from_slice(&[0f32, 0.], &[2, 1], vec![]).unwrap();
        let pad_other = to_place(&pad, other.tensor().place()).unwrap();
        assert_mixed(sequence_conv(&xd, &gpu(&f), Some(&pad_other), 3, -1, 1, true), "cuda:0", name);
        let xs = LoDTensor::from_slice(&[0f32; 4], &[2, 2], vec![]).unwrap();
        let ids = LoDTensor::from_slice(&[0i64, 1], &[2, 1], vec![vec![0, 1, 2]]).unwrap();
        let upd = LoDTensor::from_slice(&[1f32, 2.], &[2, 1], vec![vec![0, 1, 2]]).unwrap();
        let p = other.tensor().place();
        let (xs_o, ids_o, upd_o) = (to_place(&xs, p).unwrap(), to_place(&ids, p).unwrap(), to_place(&upd, p).unwrap());
        assert_mixed(sequence_scatter(&gpu(&xs), &ids_o, &gpu(&upd)), "cuda:0", name);
        assert_mixed(sequence_scatter(&gpu(&xs), &gpu(&ids), &upd_o), "cuda:0", name);
        assert_mixed(sequence_scatter(&xs_o, &gpu(&ids), &gpu(&upd)), "cuda:0", name);
        let mut xs_d = gpu(&xs);
        assert_mixed(sequence_scatter_inplace(&mut xs_d, &ids_o, &gpu(&upd)), "cuda:0", name);
    }
    // Same place, y on the device: expand and expand_as run there.
    let yd = gpu(&y);
    let dense = LoDTensor::from_slice(&[1f32, 2.], &[2, 1], vec![]).unwrap();
    assert_same(&sequence_expand(&xd, &yd, 0).unwrap(), &sequence_expand(&x, &y, 0).unwrap(), "expand");
    assert_same(&sequence_expand_as(&gpu(&dense), &yd).unwrap(), &sequence_expand_as(&dense, &y).unwrap(), "expand_as");
    synchronize(GPU).unwrap();
}

// ---- Bandwidth on a real GPU (ignored here; scripts/test-gpu.sh runs them with --ignored):
// each op's effective bandwidth (bytes read + written) against a device copy of the same bytes.

fn report(op: &str, rows: usize, width: usize, bytes: f64, copy: f64, t: f64) {
    eprintln!(
        "{op} {rows} x {width} f32: copy {:.0} GB/s, {op} {:.0} GB/s = {:.0}% of copy",
        bytes / copy / 1e9,
        bytes / t / 1e9,
        100.0 * copy / t
    );
}

/// The time of a device copy of `t`'s elements (without its LoD, whose host copy would be timed too).
fn device_copy_time(t: &LoDTensor) -> f64 {
    let dense = LoDTensor::dense(t.tensor().clone());
    min_time(&|| drop(to_place(&dense, GPU).unwrap()))
}

const BANDWIDTH_SHAPES: [(usize, usize, usize); 3] = [(1 << 21, 64, 1), (1 << 24, 8, 40), (1 << 18, 1024, 200)];

fn bandwidth_input(rows: usize, width: usize, mean_len: usize) -> LoDTensor {
    let mut rng = Rng(77);
    let mut lengths = Vec::new();
    let mut left = rows;
    while left > 0 {
        let l = (1 + rng.below(2 * mean_len)).min(left);
        lengths.push(l);
        left -= l;
    }
    let t = Tensor::zeros(DType::F32, Dim::new(&[rows, width]).unwrap()).unwrap();
    gpu(&LoDTensor::new(t, Lod::from_lengths(&[lengths]).unwrap()).unwrap())
}

#[test]
#[ignore]
fn gpu_concat_bandwidth() {
    if !gpu_or_skip() {
        return;
    }
    for (rows, width, mean_len) in BANDWIDTH_SHAPES {
        let x = bandwidth_input(rows / 2, width, mean_len);
        let out = sequence_concat(&[&x, &x]).unwrap();
        let bytes = 2.0 * out.tensor().nbytes() as f64;
        let copy = device_copy_time(&out);
        let concat = min_time(&|| drop(sequence_concat(&[&x, &x]).unwrap()));
        report("concat", rows, width, bytes, copy, concat);
    }
}

#[test]
#[ignore]
fn gpu_reverse_bandwidth() {
    if !gpu_or_skip() {
        return;
    }
    for (rows, width, mean_len) in BANDWIDTH_SHAPES {
        let x = bandwidth_input(rows, width, mean_len);
        let bytes = 2.0 * x.tensor().nbytes() as f64;
        let copy = device_copy_time(&x);
        let reverse = min_time(&|| drop(sequence_reverse(&x).unwrap()));
        report("reverse", rows, width, bytes, copy, reverse);
    }
}

#[test]
#[ignore]
fn gpu_gather_rows_bandwidth() {
    if !gpu_or_skip() {
        return;
    }
    for (rows, width, _) in BANDWIDTH_SHAPES {
        let x = bandwidth_input(rows, width, 1);
        // A random permutation-like index: one range per row, the kernel's worst case.
        let mut rng = Rng(5);
        let index: Vec<i64> = (0..rows).map(|_| rng.below(rows) as i64).collect();
        let index = gpu(&LoDTensor::from_slice(&index, &[rows], vec![]).unwrap());
        let bytes = 2.0 * x.tensor().nbytes() as f64;
        let copy = device_copy_time(&x);
        let gather = min_time(&|| drop(gather_rows(&x, &index).unwrap()));
        report("gather_rows", rows, width, bytes, copy, gather);
    }
}

/// The kernels' own float16/bfloat16 conversions on the values where they are easy to get wrong:
/// subnormals, the largest finite values, infinities, NaN, and sums that round to a subnormal or
/// overflow (sequence_scatter rounds after every add; sequence_mask compares the exact value).
#[test]
fn gpu_half_precision_edges_equal_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let f16_bits: [u16; 12] =
        [0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x3c01, 0x3555, 0, 0x8000];
    let bf16_bits: [u16; 12] =
        [0x0001, 0x8001, 0x007f, 0x0080, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x3f81, 0x3eab, 0, 0x8000];
    for (dtype, bits) in [(DType::F16, f16_bits), (DType::BF16, bf16_bits)] {
        let bytes: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
        let x = LoDTensor::dense(Tensor::from_bytes(dtype, Dim::new(&[12]).unwrap(), &bytes).unwrap());
        for out_dtype in [DType::F16, DType::BF16, DType::I8, DType::Bool] {
            assert_same(
                &sequence_mask(&gpu(&x), 3, out_dtype).unwrap(),
                &sequence_mask(&x, 3, out_dtype).unwrap(),
                &format!("mask of {dtype} edges"),
            );
        }
        // x is [12, 12], every row the 12 values; sequence r of the ids adds value r to each
        // element of row r: element (r, c) is value c + value r, every pair once.
        let ids: Vec<i64> = (0..12).flat_map(|_| 0..12).collect();
        let upd: Vec<u8> =
            (0..12).flat_map(|r| std::iter::repeat_n(bits[r], 12)).flat_map(|b| b.to_le_bytes()).collect();
        let lod = Lod::from_lengths(&[vec![12; 12]]).unwrap();
        let ids = LoDTensor::new(Tensor::from_slice(&ids, &[144, 1]).unwrap(), lod.clone()).unwrap();
        let upd = LoDTensor::new(Tensor::from_bytes(dtype, Dim::new(&[144, 1]).unwrap(), &upd).unwrap(), lod).unwrap();
        let rows: Vec<u8> = bytes.iter().copied().cycle().take(12 * bytes.len()).collect();
        let x2 = LoDTensor::dense(Tensor::from_bytes(dtype, Dim::new(&[12, 12]).unwrap(), &rows).unwrap());
        let want = sequence_scatter(&x2, &ids, &upd).unwrap();
        let got = sequence_scatter(&gpu(&x2), &gpu(&ids), &gpu(&upd)).unwrap();
        // NaN results (inf + -inf) are compared as NaN: a GPU's NaN payload is its own.
        let (g, w) = (bytes_of(&got), want.tensor().bytes().unwrap().to_vec());
        let is_nan = |b: u16| if dtype == DType::F16 { b & 0x7fff > 0x7c00 } else { b & 0x7fff > 0x7f80 };
        for (i, (g, w)) in g.chunks(2).zip(w.chunks(2)).enumerate() {
            let (g, w) = (u16::from_le_bytes([g[0], g[1]]), u16::from_le_bytes([w[0], w[1]]));
            assert!(g == w || (is_nan(g) && is_nan(w)), "{dtype} scatter element {i}: {g:#06x} vs {w:#06x}");
        }
    }
}
