//! scatter_rows on a CUDA device (emulated here: `--features cuda-emulator`): every result is
//! compared with the CPU path's on the same random inputs (fixed seeds), byte for byte in both
//! modes (ADD adds each row's updates in the CPU's order, so even float sums are exact), for every
//! dtype, int32 and int64 indices, repeated and empty indices, 1-d x, zero-row x, widths that are
//! multiples of nothing and row slices at odd addresses. Also the errors on device inputs and
//! mixed places. Without a usable device each test says it was skipped and passes.

mod common;
mod cuda_common;

use common::Rng;
use cuda_common::{assert_mixed, assert_same_outcome, bytes_of, gpu, gpu_or_skip, min_time, random_bytes, GPU};
use half::{bf16, f16};
use lodtensor::{cuda_device_count, scatter_rows, to_place};
use lodtensor::{DType, Dim, Error, LoDTensor, Lod, Place, ScatterMode, Tensor};

use ScatterMode::{Add, Overwrite};

/// A host tensor of `dtype` and `dims`, random contents: any bits for the integers and bool (0 or
/// 1); finite floats in [-4, 4) (a GPU's NaN payloads after an add are its own). With `shift`, a
/// row slice of a larger tensor, so its address is not the allocation's.
fn random_tensor(rng: &mut Rng, dtype: DType, dims: &[usize], shift: bool) -> Tensor {
    let mut full = dims.to_vec();
    full[0] += shift as usize;
    let n: usize = full.iter().product();
    let floats: Vec<f32> = (0..n).map(|_| 8.0 * rng.unit() - 4.0).collect();
    let t = match dtype {
        DType::F16 => Tensor::from_slice(&floats.iter().map(|&v| f16::from_f32(v)).collect::<Vec<_>>(), &full),
        DType::BF16 => Tensor::from_slice(&floats.iter().map(|&v| bf16::from_f32(v)).collect::<Vec<_>>(), &full),
        DType::F32 => Tensor::from_slice(&floats, &full),
        DType::F64 => Tensor::from_slice(&floats.iter().map(|&v| v as f64 / 3.0).collect::<Vec<_>>(), &full),
        _ => Tensor::from_bytes(dtype, Dim::new(&full).unwrap(), &random_bytes(rng, dtype, n)),
    }
    .unwrap();
    if shift {
        t.slice_rows(1..full[0]).unwrap()
    } else {
        t
    }
}

/// x (`[rows, width]`, or `[rows]` when `width` is None, with a LoD), index (m values in
/// [0, rows), int32 `[m]` or int64 `[m, 1]`) and updates.
fn case(rng: &mut Rng, dtype: DType, rows: usize, width: Option<usize>, m: usize, k: usize) -> [LoDTensor; 3] {
    let row_dims: Vec<usize> = width.into_iter().collect();
    let xdims = [&[rows][..], &row_dims].concat();
    let udims = [&[m][..], &row_dims].concat();
    let shift = k % 3 == 1;
    let lod = if rows > 0 { Lod::from_lengths(&[vec![rows / 2, rows - rows / 2]]).unwrap() } else { Lod::empty() };
    let x = LoDTensor::new(random_tensor(rng, dtype, &xdims, shift), lod).unwrap();
    let upd = LoDTensor::dense(random_tensor(rng, dtype, &udims, !shift));
    // Few distinct rows on odd cases: many repeats.
    let spread = if k % 2 == 1 { rows.min(3) } else { rows };
    let idx: Vec<i64> = (0..m).map(|_| rng.below(spread.max(1)) as i64).collect();
    let index = if k.is_multiple_of(2) {
        Tensor::from_slice(&idx, &[m, 1])
    } else {
        Tensor::from_slice(&idx.iter().map(|&v| v as i32).collect::<Vec<_>>(), &[m])
    };
    [x, LoDTensor::dense(index.unwrap()), upd]
}

#[test]
fn gpu_scatter_rows_equals_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(0x5ca7_7e55);
    // Rows of 9, 11 and 17 bits: one, two and three radix passes of ADD's sort on the device.
    let shapes: [(usize, Option<usize>, usize); 9] = [
        (1, Some(3), 5),
        (7, Some(1), 20),
        (40, Some(17), 100),
        (300, Some(33), 900),
        (2000, Some(5), 3000),
        (70_000, Some(2), 5000),
        (50, None, 120),
        (9, Some(4), 0),
        (0, Some(6), 0),
    ];
    for (s, &(rows, width, m)) in shapes.iter().enumerate() {
        for dtype in DType::ALL {
            for k in 0..2 {
                let [x, index, upd] = case(&mut rng, dtype, rows, width, m, s + k);
                let (xd, id, ud) = (gpu(&x), gpu(&index), gpu(&upd));
                for mode in [Overwrite, Add] {
                    let what = format!("{mode:?} {dtype} rows {rows} width {width:?} m {m} case {k}");
                    let want = scatter_rows(&x, &index, &upd, mode);
                    if dtype == DType::Bool && mode == Add {
                        assert!(matches!(want, Err(Error::Unsupported(_))), "{what}");
                    }
                    assert_same_outcome(scatter_rows(&xd, &id, &ud, mode), want, &what);
                }
                assert!(bytes_of(&xd) == x.tensor().bytes().unwrap(), "x is not modified");
            }
        }
    }
}

#[test]
fn gpu_scatter_rows_errors_match_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let x = LoDTensor::from_slice(&[1f32, 2., 3., 4., 5., 6.], &[3, 2], vec![]).unwrap();
    let upd = LoDTensor::from_slice(&[1f32, 1., 2., 2.], &[2, 2], vec![]).unwrap();
    let bad_upd = LoDTensor::from_slice(&[1f32, 1., 2.], &[3, 1], vec![]).unwrap();
    let f64_upd = LoDTensor::from_slice(&[1f64, 1., 2., 2.], &[2, 2], vec![]).unwrap();
    for index in [
        LoDTensor::from_slice(&[0i64, 3], &[2], vec![]).unwrap(),
        LoDTensor::from_slice(&[-1i32, 0], &[2, 1], vec![]).unwrap(),
        LoDTensor::from_slice(&[0f32, 1.], &[2], vec![]).unwrap(),
        LoDTensor::from_slice(&[0i64, 1], &[1, 2], vec![]).unwrap(),
    ] {
        for mode in [Overwrite, Add] {
            for u in [&upd, &bad_upd, &f64_upd] {
                let what = format!("{mode:?} index {:?} updates {:?}", index.dims(), u.dims());
                let want = scatter_rows(&x, &index, u, mode);
                assert!(want.is_err(), "{what}");
                assert_same_outcome(scatter_rows(&gpu(&x), &gpu(&index), &gpu(u), mode), want, &what);
            }
        }
    }
}

#[test]
fn gpu_scatter_rows_mixed_places() {
    if !gpu_or_skip() {
        return;
    }
    let x = LoDTensor::from_slice(&[1f32, 2., 3., 4.], &[2, 2], vec![]).unwrap();
    let index = LoDTensor::from_slice(&[1i64], &[1], vec![]).unwrap();
    let upd = LoDTensor::from_slice(&[9f32, 9.], &[1, 2], vec![]).unwrap();
    let mut others = vec![(Place::Cpu, "cpu")];
    if cuda_device_count().unwrap() > 1 {
        others.push((Place::Cuda(1), "cuda:1"));
    }
    for (p, name) in others {
        let on = |t: &LoDTensor| to_place(t, p).unwrap();
        for mode in [Overwrite, Add] {
            assert_mixed(scatter_rows(&on(&x), &gpu(&index), &gpu(&upd), mode), "cuda:0", name);
            assert_mixed(scatter_rows(&gpu(&x), &on(&index), &gpu(&upd), mode), "cuda:0", name);
            assert_mixed(scatter_rows(&gpu(&x), &gpu(&index), &on(&upd), mode), "cuda:0", name);
        }
    }
}

/// Bandwidth of scatter_rows on a real GPU against a device copy of the output's bytes (what a
/// copy-free op cannot beat): overwrite moves the output once, add reads x and the updates and
/// writes the output. Prints only; meaningless on the emulator, so it is ignored in the normal
/// run; scripts/test-gpu.sh-style: `-- --ignored --nocapture gpu_scatter_rows_bandwidth`.
#[test]
#[ignore]
fn gpu_scatter_rows_bandwidth() {
    if !gpu_or_skip() {
        return;
    }
    let time = min_time;
    let mut rng = Rng(0x1234_5679);
    for (rows, width, m) in [(1usize << 20, 64usize, 1usize << 19), (1 << 16, 1024, 1 << 16)] {
        let x = gpu(&LoDTensor::dense(Tensor::zeros(DType::F32, Dim::new(&[rows, width]).unwrap()).unwrap()));
        let upd = gpu(&LoDTensor::dense(Tensor::zeros(DType::F32, Dim::new(&[m, width]).unwrap()).unwrap()));
        let idx: Vec<i64> = (0..m).map(|_| rng.below(rows) as i64).collect();
        let index = gpu(&LoDTensor::dense(Tensor::from_slice(&idx, &[m]).unwrap()));
        let out_bytes = x.tensor().nbytes() as f64;
        let copy = time(&|| drop(to_place(&x, GPU).unwrap()));
        let over = time(&|| drop(scatter_rows(&x, &index, &upd, Overwrite).unwrap()));
        let add = time(&|| drop(scatter_rows(&x, &index, &upd, Add).unwrap()));
        let add_bytes = 2.0 * out_bytes + upd.tensor().nbytes() as f64;
        eprintln!(
            "scatter_rows {rows} x {width} f32, {m} updates: copy {:.0} GB/s; overwrite {:.0} GB/s = {:.0}% of copy; \
             add {:.0} GB/s = {:.0}% of copy",
            2.0 * out_bytes / copy / 1e9,
            2.0 * out_bytes / over / 1e9,
            100.0 * copy / over,
            add_bytes / add / 1e9,
            100.0 * (add_bytes / add) / (2.0 * out_bytes / copy)
        );
    }
}
