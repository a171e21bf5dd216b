//! The CUDA paths of sequence_pad/unpad, sequence_pool (and first/last step), sequence_softmax,
//! log_softmax and cast against the CPU results on the same inputs (the CPU kernels are checked
//! against plain references in their own test files). Runs on the emulator (`--features
//! cuda-emulator`) and on a GPU; skipped, with a message, where no device can be used.
//!
//! Exactness: pad/unpad, first/last/max/min pooling and cast move or convert values and must be
//! equal to the CPU's bit for bit (NaN payloads included). SUM/AVERAGE/SQRT sum in f64 in the
//! CPU's order and round once, so they are bit-exact too, except that a NaN's payload may differ
//! on a GPU (its arithmetic returns a canonical NaN): those compare NaN with NaN. Softmax and
//! log-softmax: see `close`.

mod common;
mod cuda_common;

use common::{Rng, POOLS};
use cuda_common::{bytes_of, gpu, gpu_or_skip, min_time, GPU};
use lodtensor::ops::{cast, fill, log_softmax, sequence_softmax};
use lodtensor::{cuda_device_count, sequence_first_step, sequence_last_step, sequence_pad, sequence_pool};
use lodtensor::{sequence_unpad, synchronize, to_place, DType, Dim, Error, LoDTensor, Lod, Place, PoolType, Tensor};

/// The result of a device op: on the device, with the CPU result's dims and LoD; its host bytes.
fn host_bytes(got: &LoDTensor, want: &LoDTensor, place: Place) -> Vec<u8> {
    assert_eq!(got.tensor().place(), place);
    assert_eq!(got.dims(), want.dims());
    assert_eq!(got.tensor().dtype(), want.tensor().dtype());
    assert_eq!(got.lod(), want.lod());
    bytes_of(got)
}

/// Random lengths, about a quarter of them 0.
fn lengths(rng: &mut Rng, n: usize, max: usize) -> Vec<usize> {
    (0..n).map(|_| if rng.below(4) == 0 { 0 } else { rng.below(max + 1) }).collect()
}

const FLOATS: [DType; 4] = [DType::F16, DType::BF16, DType::F32, DType::F64];

/// `n` elements of a float dtype: small integers and halves (so that max/min meet ties and sums
/// are exact in every dtype), some NaN and ±0.
fn float_data(rng: &mut Rng, dtype: DType, n: usize) -> Tensor {
    let v: Vec<f64> = (0..n)
        .map(|_| match rng.below(40) {
            0 => f64::NAN,
            1 => -0.0,
            2 => f64::INFINITY,
            _ => (rng.below(17) as f64 - 8.0) / 2.0,
        })
        .collect();
    let t = Tensor::from_slice(&v, &[n]).unwrap();
    cast(&LoDTensor::dense(t), dtype).unwrap().into_parts().0
}

/// `n` random elements of any dtype: random bytes (bool: 0 or 1).
fn any_data(rng: &mut Rng, dtype: DType, n: usize) -> Vec<u8> {
    let bytes: Vec<u8> = (0..n * dtype.size()).map(|_| rng.next() as u8).collect();
    if dtype == DType::Bool {
        bytes.iter().map(|b| b & 1).collect()
    } else {
        bytes
    }
}

fn with_lod(t: Tensor, dims: &[usize], lengths: &[Vec<usize>]) -> LoDTensor {
    let t = Tensor::from_bytes(t.dtype(), Dim::new(dims).unwrap(), t.bytes().unwrap()).unwrap();
    LoDTensor::new(t, Lod::from_lengths(lengths).unwrap()).unwrap()
}

/// Floats of `dtype` in `a` and `b` equal bit for bit, except that any NaN equals any NaN.
fn same_floats_nan_as_nan(dtype: DType, a: &[u8], b: &[u8]) -> bool {
    let want = to_f64s(dtype, a);
    let got = to_f64s(dtype, b);
    want.len() == got.len()
        && want.iter().zip(&got).all(|(w, g)| (w.is_nan() && g.is_nan()) || w.to_bits() == g.to_bits())
}

fn to_f64s(dtype: DType, bytes: &[u8]) -> Vec<f64> {
    let t = Tensor::from_bytes(dtype, Dim::new(&[bytes.len() / dtype.size()]).unwrap(), bytes).unwrap();
    let t = cast(&LoDTensor::dense(t), DType::F64).unwrap();
    t.tensor().as_slice::<f64>().unwrap().to_vec()
}

#[test]
fn gpu_pad_and_unpad_equal_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0x9e3779b97f4a7c15);
    for (case, dtype) in DType::ALL.iter().cycle().take(40).enumerate() {
        let dtype = *dtype;
        let sequences = [1, 3, 17, 200][case % 4];
        let step: &[usize] = [&[1usize][..], &[3], &[7], &[2, 3], &[13], &[0]][case % 6];
        let width: usize = step.iter().product();
        let lens = lengths(&mut rng, sequences, 6);
        let rows: usize = lens.iter().sum();
        let mut dims = vec![rows];
        dims.extend_from_slice(step);
        let data = any_data(&mut rng, dtype, rows * width);
        let x = LoDTensor::new(
            Tensor::from_bytes(dtype, Dim::new(&dims).unwrap(), &data).unwrap(),
            Lod::from_lengths(std::slice::from_ref(&lens)).unwrap(),
        )
        .unwrap();
        let scalar = (case / 10 + case) % 2 == 0; // each dtype both ways
        let pad_dims: &[usize] = if scalar { &[1] } else { step };
        let pad_n: usize = pad_dims.iter().product();
        let pad = LoDTensor::dense(
            Tensor::from_bytes(dtype, Dim::new(pad_dims).unwrap(), &any_data(&mut rng, dtype, pad_n)).unwrap(),
        );
        let longest = lens.iter().copied().max().unwrap_or(0);
        for padded in [-1, longest as i64 + 2] {
            let (want, want_len) = sequence_pad(&x, &pad, padded).unwrap();
            let (got, got_len) = sequence_pad(&gpu(&x), &gpu(&pad), padded).unwrap();
            let what = format!("case {case}: {dtype}, {sequences} sequences, step {step:?}, padded {padded}");
            assert_eq!(host_bytes(&got, &want, GPU), want.tensor().bytes().unwrap(), "{what}");
            assert_eq!(host_bytes(&got_len, &want_len, GPU), want_len.tensor().bytes().unwrap(), "{what}: length");

            // And back: unpad with the length on the device, int64 and int32.
            let want_x = sequence_unpad(&want, &want_len).unwrap();
            for length in [got_len.clone(), gpu(&cast(&want_len, DType::I32).unwrap())] {
                let got_x = sequence_unpad(&got, &length).unwrap();
                assert_eq!(host_bytes(&got_x, &want_x, GPU), want_x.tensor().bytes().unwrap(), "{what}: unpad");
            }
        }
    }
    synchronize(GPU).unwrap();
}

#[test]
fn gpu_pad_errors_are_the_cpu_errors() {
    if !gpu_or_skip() {
        return;
    }
    let x = LoDTensor::from_slice(&[1f32, 2., 3., 4., 5., 6.], &[3, 2], vec![vec![0, 1, 3]]).unwrap();
    let pad = LoDTensor::dense(Tensor::from_slice(&[0f32], &[1]).unwrap());
    let (xd, padd) = (gpu(&x), gpu(&pad));
    let msg = |r: lodtensor::Result<(LoDTensor, LoDTensor)>| r.unwrap_err().to_string();
    assert_eq!(msg(sequence_pad(&xd, &padd, 1)), msg(sequence_pad(&x, &pad, 1)));
    assert_eq!(msg(sequence_pad(&xd, &padd, -2)), msg(sequence_pad(&x, &pad, -2)));
    let bad_pad = LoDTensor::dense(Tensor::from_slice(&[0f64], &[1]).unwrap());
    assert_eq!(msg(sequence_pad(&xd, &gpu(&bad_pad), -1)), msg(sequence_pad(&x, &bad_pad, -1)));

    let padded = LoDTensor::dense(Tensor::from_slice(&[1f32; 8], &[2, 2, 2]).unwrap());
    for bad in [vec![3i64, 0], vec![1, -1]] {
        let len = LoDTensor::dense(Tensor::from_slice(&bad, &[2]).unwrap());
        let want = sequence_unpad(&padded, &len).unwrap_err();
        let got = sequence_unpad(&gpu(&padded), &gpu(&len)).unwrap_err();
        assert!(matches!(got, Error::InvalidArgument(_)), "{got}");
        assert_eq!(got.to_string(), want.to_string());
    }
    let len = LoDTensor::dense(Tensor::from_slice(&[1i16, 1], &[2]).unwrap());
    let got = sequence_unpad(&gpu(&padded), &gpu(&len)).unwrap_err();
    assert!(matches!(got, Error::Unsupported(_)), "{got}");
    assert_eq!(got.to_string(), sequence_unpad(&padded, &len).unwrap_err().to_string());
}

/// Inputs on different places are an InvalidArgument naming both places, for every ported op
/// with two inputs: host vs cuda:0 and cuda:0 vs cuda:1.
#[test]
fn gpu_mixed_places_are_invalid() {
    if !gpu_or_skip() {
        return;
    }
    let x = LoDTensor::from_slice(&[1f32, 2., 3., 4.], &[2, 2], vec![vec![0, 1, 2]]).unwrap();
    let pad = LoDTensor::dense(Tensor::from_slice(&[0f32], &[1]).unwrap());
    let padded = LoDTensor::dense(Tensor::from_slice(&[1f32; 4], &[2, 2]).unwrap());
    let len = LoDTensor::dense(Tensor::from_slice(&[1i64, 2], &[2]).unwrap());
    let mut pairs = vec![(Place::Cuda(0), Place::Cpu), (Place::Cpu, Place::Cuda(0))];
    if cuda_device_count().unwrap() > 1 {
        pairs.push((Place::Cuda(0), Place::Cuda(1)));
    }
    for (a, b) in pairs {
        let check = |e: Error| {
            let m = e.to_string();
            assert!(matches!(e, Error::InvalidArgument(_)), "{m}");
            assert!(m.contains(&a.to_string()) && m.contains(&b.to_string()), "{m}");
        };
        check(sequence_pad(&to_place(&x, a).unwrap(), &to_place(&pad, b).unwrap(), -1).unwrap_err());
        check(sequence_unpad(&to_place(&padded, a).unwrap(), &to_place(&len, b).unwrap()).unwrap_err());
    }
}

#[test]
fn gpu_pool_equals_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0x2545f4914f6cdd1d);
    for case in 0..32 {
        let dtype = FLOATS[case % 4];
        let width = [1, 5, 33, 70, 3, 0][case % 6];
        let two_levels = case % 3 == 2;
        let top = [1, 4, 50, 300][case / 4 % 4];
        let mut lod = vec![lengths(&mut rng, top, 5)];
        if two_levels {
            let n: usize = lod[0].iter().sum();
            lod.push(lengths(&mut rng, n, 7));
        } else {
            lod[0] = lengths(&mut rng, top, 40);
        }
        let rows: usize = lod.last().unwrap().iter().sum();
        if lod.last().unwrap().is_empty() {
            continue; // no sequence at the last level: nothing to pool
        }
        let dims = if case % 5 == 4 && width > 0 { vec![rows, 1, width] } else { vec![rows, width] };
        let x = with_lod(float_data(&mut rng, dtype, rows * width), &dims, &lod);
        let xd = gpu(&x);
        for pool in POOLS {
            let pad_value = [0.0, -1.5, f64::NAN, 1e300][case % 4];
            let want = sequence_pool(&x, pool, pad_value).unwrap();
            let got = sequence_pool(&xd, pool, pad_value).unwrap();
            let what = format!("case {case}: {pool:?} {dtype} {dims:?}, lod {lod:?}");
            let (w, g) = (want.out.tensor().bytes().unwrap(), host_bytes(&got.out, &want.out, GPU));
            match pool {
                PoolType::Sum | PoolType::Average | PoolType::Sqrt => {
                    assert!(same_floats_nan_as_nan(dtype, w, &g), "{what}")
                }
                _ => assert_eq!(w, &g[..], "{what}"),
            }
            assert_eq!(want.max_index.is_some(), got.max_index.is_some(), "{what}");
            if let (Some(w), Some(g)) = (&want.max_index, &got.max_index) {
                assert_eq!(host_bytes(g, w, GPU), w.tensor().bytes().unwrap(), "{what}: max_index");
            }
        }
        let want = sequence_first_step(&x).unwrap();
        assert_eq!(host_bytes(&sequence_first_step(&xd).unwrap(), &want, GPU), want.tensor().bytes().unwrap());
        let want = sequence_last_step(&x).unwrap();
        assert_eq!(host_bytes(&sequence_last_step(&xd).unwrap(), &want, GPU), want.tensor().bytes().unwrap());
    }
}

/// Sums of values that do not add exactly (random, of mixed magnitudes): equal bit for bit,
/// because the device adds in f64 in the CPU's order and rounds once.
#[test]
fn gpu_pool_sums_are_bit_exact() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(77);
    for dtype in FLOATS {
        let lens = lengths(&mut rng, 64, 50);
        let rows: usize = lens.iter().sum();
        let width = 9;
        let v: Vec<f64> = (0..rows * width)
            .map(|_| (rng.unit() as f64 - 0.5) * 10f64.powi(rng.below(12) as i32 - 6) + rng.unit() as f64 * 1e-9)
            .collect();
        let t = cast(&LoDTensor::dense(Tensor::from_slice(&v, &[v.len()]).unwrap()), dtype).unwrap();
        let x = with_lod(t.into_parts().0, &[rows, width], &[lens]);
        for pool in [PoolType::Sum, PoolType::Average, PoolType::Sqrt] {
            let want = sequence_pool(&x, pool, 0.0).unwrap().out;
            let got = sequence_pool(&gpu(&x), pool, 0.0).unwrap().out;
            assert_eq!(host_bytes(&got, &want, GPU), want.tensor().bytes().unwrap(), "{pool:?} {dtype}");
        }
    }
}

#[test]
fn gpu_pool_errors_are_the_cpu_errors() {
    if !gpu_or_skip() {
        return;
    }
    let x = LoDTensor::from_slice(&[1i32, 2, 3, 4], &[2, 2], vec![vec![0, 1, 2]]).unwrap();
    let want = sequence_pool(&x, PoolType::Sum, 0.0).unwrap_err();
    let got = sequence_pool(&gpu(&x), PoolType::Sum, 0.0).unwrap_err();
    assert!(matches!(got, Error::Unsupported(_)), "{got}");
    assert_eq!(got.to_string(), want.to_string());
    let flat = LoDTensor::dense(Tensor::from_slice(&[1f32, 2.], &[2, 1]).unwrap());
    let want = sequence_pool(&flat, PoolType::Max, 0.0).unwrap_err();
    let got = sequence_pool(&gpu(&flat), PoolType::Max, 0.0).unwrap_err();
    assert_eq!(got.to_string(), want.to_string());
    let got = sequence_first_step(&gpu(&x)).unwrap_err();
    assert_eq!(got.to_string(), sequence_first_step(&x).unwrap_err().to_string());
}

/// Softmax tolerance: the device sums the exponentials in another order (a tree, for segments
/// longer than 32) and a GPU's expf/exp/log differ from the host's by up to 2 ulp, so results may
/// differ by a few units in the last place of the compute type (f32 for float16/bfloat16/float32,
/// f64 for float64), and a 16-bit result may round to its neighbour: `rtol` is 2 ulp of the
/// element type (float32: 8 ulp), relative to max(|want|, scale) where `scale` is 1 for
/// log-softmax (x - m - ln Σ: its error is relative to the terms, not to their difference) and
/// the smallest normal for softmax (probabilities are relative-accurate down to subnormals).
fn close(dtype: DType, want: &[u8], got: &[u8], log: bool) -> Result<(), String> {
    let rtol = match dtype {
        DType::F16 => 2.0 * 2f64.powi(-10),
        DType::BF16 => 2.0 * 2f64.powi(-7),
        DType::F32 => 8.0 * 2f64.powi(-23),
        _ => 16.0 * 2f64.powi(-52),
    };
    let floor = match (log, dtype) {
        (true, _) => 1.0,
        (false, DType::F16) => 2f64.powi(-14),
        (false, DType::F64) => f64::MIN_POSITIVE,
        (false, _) => f32::MIN_POSITIVE as f64,
    };
    let (w, g) = (to_f64s(dtype, want), to_f64s(dtype, got));
    for (i, (w, g)) in w.iter().zip(&g).enumerate() {
        let ok = if w.is_nan() || w.is_infinite() {
            w.is_nan() == g.is_nan() && (w.is_nan() || w == g)
        } else {
            (w - g).abs() <= rtol * w.abs().max(floor)
        };
        if !ok {
            return Err(format!("element {i}: cpu {w}, gpu {g}"));
        }
    }
    Ok(())
}

#[test]
fn gpu_softmax_equals_cpu_to_tolerance() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0xdeadbeefcafef00d);
    for case in 0..24 {
        let dtype = FLOATS[case % 4];
        // Short sequences (a thread each), and long ones (a block each, with the tree sum).
        let max_len = [3, 32, 200][case / 4 % 3];
        let lens = lengths(&mut rng, [1, 9, 120][case % 3], max_len);
        let rows: usize = lens.iter().sum();
        let v: Vec<f64> =
            (0..rows).map(|_| if rng.below(50) == 0 { -1e4 } else { (rng.unit() as f64 - 0.5) * 30.0 }).collect();
        let t = cast(&LoDTensor::dense(Tensor::from_slice(&v, &[rows]).unwrap()), dtype).unwrap().into_parts().0;
        let dims = if case % 2 == 0 { vec![rows] } else { vec![rows, 1] };
        let x = with_lod(t, &dims, std::slice::from_ref(&lens));
        let want = sequence_softmax(&x).unwrap();
        let got = sequence_softmax(&gpu(&x)).unwrap();
        let g = host_bytes(&got, &want, GPU);
        if let Err(e) = close(dtype, want.tensor().bytes().unwrap(), &g, false) {
            panic!("sequence_softmax case {case}: {dtype}, lengths {lens:?}: {e}");
        }
    }
    for case in 0..24 {
        let dtype = FLOATS[case % 4];
        let width = [1, 7, 32, 33, 300, 5][case % 6];
        let dims: Vec<usize> = match case % 3 {
            0 => vec![width],
            1 => vec![1 + rng.below(40), width],
            _ => vec![1 + rng.below(5), 3, width],
        };
        let n: usize = dims.iter().product();
        let v: Vec<f64> = (0..n).map(|_| (rng.unit() as f64 - 0.5) * 40.0).collect();
        let t = Tensor::from_slice(&v, &dims).unwrap();
        let x = cast(&LoDTensor::dense(t), dtype).unwrap();
        let want = log_softmax(&x).unwrap();
        let got = log_softmax(&gpu(&x)).unwrap();
        let g = host_bytes(&got, &want, GPU);
        if let Err(e) = close(dtype, want.tensor().bytes().unwrap(), &g, true) {
            panic!("log_softmax case {case}: {dtype} {dims:?}: {e}");
        }
    }
    // NaN and infinities: the same NaN/inf pattern as the CPU.
    let x = LoDTensor::from_slice(
        &[1f32, f32::NAN, 2., f32::NEG_INFINITY, 0., 3., f32::INFINITY, 1.],
        &[8, 1],
        vec![vec![0, 3, 6, 8]],
    )
    .unwrap();
    let want = sequence_softmax(&x).unwrap();
    let g = host_bytes(&sequence_softmax(&gpu(&x)).unwrap(), &want, GPU);
    close(DType::F32, want.tensor().bytes().unwrap(), &g, false).unwrap();
    let want = log_softmax(&x).unwrap();
    let g = host_bytes(&log_softmax(&gpu(&x)).unwrap(), &want, GPU);
    close(DType::F32, want.tensor().bytes().unwrap(), &g, true).unwrap();
    // Zero rows, and rows of width 0.
    for dims in [[0usize, 4], [3, 0]] {
        let x = LoDTensor::dense(Tensor::zeros(DType::F32, Dim::new(&dims).unwrap()).unwrap());
        let got = log_softmax(&gpu(&x)).unwrap();
        assert_eq!(got.dims(), x.dims());
    }
}

#[test]
fn gpu_softmax_errors_are_the_cpu_errors() {
    if !gpu_or_skip() {
        return;
    }
    let x = LoDTensor::from_slice(&[1i32, 2, 3, 4], &[4, 1], vec![vec![0, 1, 4]]).unwrap();
    let got = sequence_softmax(&gpu(&x)).unwrap_err();
    assert!(matches!(got, Error::Unsupported(_)), "{got}");
    assert_eq!(got.to_string(), sequence_softmax(&x).unwrap_err().to_string());
    let got = log_softmax(&gpu(&x)).unwrap_err();
    assert_eq!(got.to_string(), log_softmax(&x).unwrap_err().to_string());
    let wide = LoDTensor::from_slice(&[1f32, 2., 3., 4.], &[2, 2], vec![vec![0, 1, 2]]).unwrap();
    let got = sequence_softmax(&gpu(&wide)).unwrap_err();
    assert_eq!(got.to_string(), sequence_softmax(&wide).unwrap_err().to_string());
}

/// Source elements for cast: every bit pattern of 8- and 16-bit dtypes; for the others random
/// bits, plus the edge values (±0, ±inf, NaNs with payloads, signalling NaNs, subnormals, halfway
/// cases of every narrower float, integer range edges and just beyond).
fn cast_sources(rng: &mut Rng, dtype: DType) -> Vec<u8> {
    if dtype.size() == 1 && dtype != DType::Bool {
        return (0..=255u8).collect();
    }
    if dtype == DType::Bool {
        return (0..=255u8).collect(); // any non-zero byte reads as true
    }
    if dtype.size() == 2 {
        return (0..=u16::MAX).flat_map(|v| v.to_le_bytes()).collect();
    }
    let mut edges: Vec<f64> = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        0.49999999999999994,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        5e-324,
        -5e-324,
        f64::MAX,
        f64::MIN,
        f32::MAX as f64,
        f32::MIN_POSITIVE as f64,
        1.401298464324817e-45,
        7e-46,
        65504.0,
        65519.99,
        65520.0,
        -65520.0,
        6.103515625e-5,
        5.960464477539063e-8,
        2.9802322387695312e-8,
        2.980_232_238_769_531_3e-8 * 1.0000001,
        3.3895313892515355e38,
        3.3961775292304e38,
        127.0,
        127.9,
        128.0,
        -128.0,
        -128.9,
        -129.0,
        255.0,
        255.9,
        256.0,
        -1.0e-300,
        32767.5,
        32768.0,
        -32768.9,
        -32769.0,
        2147483647.0,
        2147483647.9,
        2147483648.0,
        -2147483648.9,
        -2147483649.0,
        9.223372036854775e18,
        9.223372036854776e18,
        -9.223372036854776e18,
        -9.223372036854778e18,
        1e19,
        -1e19,
        16777217.0,
        9007199254740993.0,
    ];
    // Halfway cases between neighbours of float16, bfloat16 and float32, and just off them.
    for bits in [11, 8, 24] {
        let h = 1.0 + 2f64.powi(-bits);
        edges.extend([h, -h, h * (1.0 + 1e-15), 1.0 + 3.0 * 2f64.powi(-bits), 1024.0 * h]);
    }
    let mut out: Vec<u8> = Vec::new();
    match dtype {
        DType::F32 => {
            for e in &edges {
                out.extend((*e as f32).to_le_bytes());
            }
            for bits in [
                0x7f800001u32,
                0xff800001,
                0x7fa00000,
                0x7fc00001,
                0xffffffff,
                0x00000001,
                0x807fffff,
                0x33000000,
                0x33000001,
            ] {
                out.extend(bits.to_le_bytes());
            }
        }
        DType::F64 => {
            for e in &edges {
                out.extend(e.to_le_bytes());
            }
            for bits in
                [0x7ff0000000000001u64, 0xfff0000000000001, 0x7ff4000000000000, 0x7ff8000000000001, 0x7ff0000020000000]
            {
                out.extend(bits.to_le_bytes());
            }
        }
        DType::I32 => {
            for v in [0i32, 1, -1, i32::MAX, i32::MIN, 16777217, -16777217, 65520, 65519, 2049, 257, 128, -129, 32768] {
                out.extend(v.to_le_bytes());
            }
        }
        _ => {
            for v in [
                0i64,
                1,
                -1,
                i64::MAX,
                i64::MIN,
                i64::MAX - 1,
                1 << 53,
                (1 << 53) + 1,
                (1 << 24) + 1,
                65520,
                65519,
                9007199254740993,
                -9007199254740993,
                0x7fff_ff80_0000_0000,
                0x7fff_ff7f_ffff_ffff,
                -0x2000_0000_0000_0000,
            ] {
                out.extend(v.to_le_bytes());
            }
        }
    }
    for _ in 0..4096 {
        out.extend(&rng.next().to_le_bytes()[..dtype.size()]);
    }
    out
}

/// All 100 pairs: the device's conversion equals the CPU's bit for bit.
#[test]
fn gpu_cast_equals_cpu_bit_for_bit() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(12345);
    for from in DType::ALL {
        let bytes = cast_sources(&mut rng, from);
        let n = bytes.len() / from.size();
        let x = LoDTensor::dense(Tensor::from_bytes(from, Dim::new(&[n]).unwrap(), &bytes).unwrap());
        let xd = gpu(&x);
        for to in DType::ALL {
            let want = cast(&x, to).unwrap();
            let got = cast(&xd, to).unwrap();
            let (w, g) = (want.tensor().bytes().unwrap(), host_bytes(&got, &want, GPU));
            if let Some(i) =
                (0..n).find(|&i| w[i * to.size()..(i + 1) * to.size()] != g[i * to.size()..(i + 1) * to.size()])
            {
                panic!(
                    "cast {from} -> {to}: element {i} (source bytes {:02x?}): cpu {:02x?}, gpu {:02x?}",
                    &bytes[i * from.size()..(i + 1) * from.size()],
                    &w[i * to.size()..(i + 1) * to.size()],
                    &g[i * to.size()..(i + 1) * to.size()]
                );
            }
        }
    }
    // Dims and LoD kept; zero elements.
    let x = LoDTensor::from_slice(&[1.5f32, -2.5, 3.0, 1e10], &[2, 2], vec![vec![0, 0, 2]]).unwrap();
    let want = cast(&x, DType::I16).unwrap();
    assert_eq!(host_bytes(&cast(&gpu(&x), DType::I16).unwrap(), &want, GPU), want.tensor().bytes().unwrap());
    let empty = LoDTensor::dense(Tensor::zeros(DType::F64, Dim::new(&[0, 3]).unwrap()).unwrap());
    let got = cast(&gpu(&empty), DType::BF16).unwrap();
    assert_eq!(got.dims(), empty.dims());
    assert_eq!(got.tensor().place(), GPU);
}

/// `fill` has no place argument: it makes a host tensor (move it with `to_place`).
#[test]
fn fill_stays_on_the_host() {
    let t = fill(DType::F32, Dim::new(&[2, 3]).unwrap(), 1.5).unwrap();
    assert_eq!(t.tensor().place(), Place::Cpu);
}

/// Bandwidth of sequence_pad and cast against a device copy of the same bytes. Ignored; on a GPU:
/// `cargo test --release --features cuda --target-dir target/cuda --test cuda_seq -- --ignored
/// --nocapture bandwidth` (scripts/test-gpu.sh runs only tests/cuda.rs's bandwidth test).
#[test]
#[ignore]
fn gpu_pad_and_cast_bandwidth() {
    if !gpu_or_skip() {
        return;
    }
    let time = min_time;
    for (sequences, len, width) in [(1usize << 16, 32usize, 64usize), (1 << 20, 16, 8), (1 << 12, 64, 1024)] {
        let rows = sequences * len;
        let dims = Dim::new(&[rows, width]).unwrap();
        // Every other sequence is half as long: half of each padded slot of those is pad.
        let lens: Vec<usize> = (0..sequences).map(|i| if i % 2 == 0 { len } else { len / 2 }).collect();
        let used: usize = lens.iter().sum();
        let x = LoDTensor::new(
            Tensor::zeros(DType::F32, Dim::new(&[used, width]).unwrap()).unwrap(),
            Lod::from_lengths(&[lens]).unwrap(),
        )
        .unwrap();
        let xd = gpu(&x);
        let pad = gpu(&LoDTensor::dense(Tensor::from_slice(&[0f32], &[1]).unwrap()));
        let full = gpu(&LoDTensor::dense(Tensor::zeros(DType::F32, dims).unwrap()));
        let out_bytes = full.tensor().nbytes() as f64;
        let copy = time(&|| drop(to_place(&full, GPU).unwrap()));
        let padt = time(&|| drop(sequence_pad(&xd, &pad, -1).unwrap()));
        let pad_bytes = xd.tensor().nbytes() as f64 + out_bytes;
        let castt = time(&|| drop(cast(&full, DType::F16).unwrap()));
        let cast_bytes = out_bytes * 1.5;
        eprintln!(
            "{sequences} x {len} x {width} f32 ({} MiB): copy {:.0} GB/s; pad {:.0} GB/s = {:.0}% of copy; cast to f16 {:.0} GB/s = {:.0}% of copy",
            full.tensor().nbytes() >> 20,
            2.0 * out_bytes / copy / 1e9,
            pad_bytes / padt / 1e9,
            100.0 * (pad_bytes / padt) / (2.0 * out_bytes / copy),
            cast_bytes / castt / 1e9,
            100.0 * (cast_bytes / castt) / (2.0 * out_bytes / copy),
        );
    }
}
