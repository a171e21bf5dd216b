//! What the kernel launchers share: the device of an input, a dtype's kernel-name suffix, counts
//! and offsets as the kernels take them.

use super::device::{device, Device};
use super::launch::upload;
use crate::dtype::DType;
use crate::error::{err, Result};
use crate::lod::LodLevel;
use crate::memory::lists;
use crate::memory::Allocation;
use crate::place::Place;
use crate::tensor::Tensor;
use std::sync::Arc;

/// The device `t` is on; `op` names the launcher in the (internal) error for a host tensor.
pub(crate) fn device_of(t: &Tensor, op: &str) -> Result<Arc<Device>> {
    match t.place() {
        Place::Cuda(ordinal) => device(ordinal),
        p => Err(err!(Internal, "{op}: the CUDA kernel got a tensor on {p}")),
    }
}

/// The kernel-name suffix of a computing dtype (the callers have checked the dtype).
pub(crate) fn dtype_suffix(dtype: DType) -> Result<&'static str> {
    Ok(match dtype {
        DType::U8 => "u8",
        DType::I8 => "i8",
        DType::I16 => "i16",
        DType::I32 => "i32",
        DType::I64 => "i64",
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::Bool => return Err(err!(Internal, "no CUDA kernel computes on bool")),
    })
}

/// The kernel-name suffix of an index's dtype, int32 or int64 (the op checked; `op` names it in
/// the internal error for another).
pub(crate) fn index_suffix(index: &Tensor, op: &str) -> Result<&'static str> {
    match index.dtype() {
        DType::I32 => Ok("i32"),
        DType::I64 => Ok("i64"),
        other => Err(err!(Internal, "{op}: index dtype {other} reached the kernel")),
    }
}

/// The kernel-name suffix of a float dtype (the callers have checked the dtype).
pub(crate) fn float_suffix(dtype: DType) -> Result<&'static str> {
    Ok(match dtype {
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        DType::F32 => "f32",
        DType::F64 => "f64",
        other => return Err(err!(Internal, "no float kernel for {other}")),
    })
}

/// A count of sequences (or ranges) as the kernels' u32; `what` names the argument.
pub(crate) fn count_u32(n: usize, what: &str) -> Result<u32> {
    u32::try_from(n).map_err(|_| err!(Unsupported, "{what}: {n} sequences; the CUDA kernel takes up to 2^32 - 1"))
}

/// `offsets` (row or element offsets) uploaded as i64, as they are (see `offset_words`).
pub(crate) fn upload_offsets(d: &Arc<Device>, offsets: &[usize]) -> Result<Arc<Allocation>> {
    upload(d, offset_words(offsets))
}

/// Offsets as the kernels' 8-byte integers, without a copy: a usize is an i64's size on every
/// target the library builds for, and offsets are at most isize::MAX, so the bytes are the same
/// (no converted copy of a LoD level that may hold millions of offsets).
pub(crate) fn offset_words(offsets: &[usize]) -> &[u64] {
    const _: () = assert!(
        std::mem::size_of::<usize>() == std::mem::size_of::<u64>()
            && std::mem::align_of::<usize>() == std::mem::align_of::<u64>()
    );
    debug_assert!(offsets.iter().all(|&o| o <= isize::MAX as usize));
    // SAFETY: same size and alignment (asserted above), and every usize value has the same bytes
    // as that u64 (and, up to isize::MAX, as that i64).
    unsafe { std::slice::from_raw_parts(offsets.as_ptr().cast::<u64>(), offsets.len()) }
}

/// The tables `parts` uploaded back to back in one allocation with one copy (each copy from
/// pageable memory is a wait of its own): the allocation, and each part's device address.
pub(crate) fn upload_joined(d: &Arc<Device>, parts: &[&[u64]]) -> Result<(Arc<Allocation>, Vec<u64>)> {
    let mut joined = lists::with_capacity(parts.iter().map(|p| p.len()).sum(), "device tables")?;
    parts.iter().for_each(|p| joined.extend_from_slice(p));
    let table = upload(d, &joined)?;
    let mut at = table.as_ptr() as u64;
    let addresses = parts
        .iter()
        .map(|p| {
            let start = at;
            at += 8 * p.len() as u64;
            start
        })
        .collect();
    Ok((table, addresses))
}

/// A LoD level's offsets on `d`, as `upload_offsets` places them: the copy the LoD keeps there,
/// uploaded at the level's first use on `d` (so ops in a row on one batch upload it once).
pub(crate) fn level_on(d: &Arc<Device>, level: LodLevel) -> Result<Arc<Allocation>> {
    level.copy_at(Place::Cuda(d.ordinal), |offsets| upload_offsets(d, offsets))
}

/// Every level of `lod` on CUDA device `ordinal` (see `level_on`), outermost first.
pub fn lod_levels_on(ordinal: u32, lod: &crate::lod::Lod) -> Result<Vec<Arc<Allocation>>> {
    let d = device(ordinal)?;
    (0..lod.num_levels()).map(|k| level_on(&d, lod.lod_level(k)?)).collect()
}

/// The words the row-movement kernels copy in, in bytes, widest first.
pub(crate) const WORDS: [usize; 5] = [16, 8, 4, 2, 1];

/// The widest word (of `WORDS`) dividing `row_bytes` and every address: the unit in which the
/// row-movement kernels copy.
pub(crate) fn word_for(row_bytes: usize, addrs: impl IntoIterator<Item = u64> + Clone) -> usize {
    WORDS
        .into_iter()
        .find(|&w| row_bytes.is_multiple_of(w) && addrs.clone().into_iter().all(|a| a % w as u64 == 0))
        .expect("1 divides everything")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dim::Dim;
    use crate::lod::Lod;
    use crate::ops::{
        cast, sequence_concat, sequence_conv, sequence_enumerate, sequence_expand, sequence_expand_as, sequence_pad,
        sequence_pool, sequence_reverse, sequence_softmax, sequence_unpad, to_place, PoolType,
    };
    use crate::LoDTensor;

    /// Every op that reads a LoD level on the device reads the copy the LoD keeps there: with a
    /// copy planted that holds another partition of the same rows, each op's result is the CPU's
    /// for that partition (with the level uploaded per call it would be the CPU's for the LoD's
    /// own offsets). On a second device, which has no copy yet, the ops upload the level and then
    /// keep it.
    #[test]
    fn ops_read_the_lods_device_copy() {
        let Some(devices) = super::super::device::devices_for_test() else { return };
        let _alone = super::super::device::second_device_alone();
        let (own, planted) = (vec![0usize, 2, 2, 5], vec![0usize, 1, 4, 5]);
        let data: Vec<f32> = (0..20).map(|i| (i as f32 * 0.37).sin()).collect();
        let host = |offsets: &[usize], width: usize| {
            let t = Tensor::from_slice(&data[..5 * width], &[5, width]).unwrap();
            LoDTensor::new(t, Lod::from_offsets(vec![offsets.to_vec()]).unwrap()).unwrap()
        };
        let ids = |x: &LoDTensor| cast(x, DType::I64).unwrap();
        let filter = LoDTensor::dense(Tensor::from_slice(&data[..9 * 2], &[9, 2]).unwrap());
        let pad = LoDTensor::dense(Tensor::from_slice(&[-1.0f32], &[1]).unwrap());
        let expand_x = LoDTensor::dense(Tensor::from_slice(&data[..6], &[3, 2]).unwrap());
        // Each op on a LoDTensor with the LoD under test (x: 5 rows of 3, column: 5 rows of 1).
        type Op<'a> = Box<dyn Fn(&LoDTensor, &LoDTensor, Place) -> LoDTensor + 'a>;
        let ops: Vec<(&str, Op)> = vec![
            ("sequence_reverse", Box::new(|x, _, _| sequence_reverse(x).unwrap())),
            ("sequence_pool", Box::new(|x, _, _| sequence_pool(x, PoolType::Sum, 0.0).unwrap().out)),
            ("sequence_pool max", Box::new(|x, _, _| sequence_pool(x, PoolType::Max, 0.0).unwrap().out)),
            ("sequence_pad", Box::new(|x, _, p| sequence_pad(x, &to_place(&pad, p).unwrap(), 3).unwrap().0)),
            ("sequence_softmax", Box::new(|_, c, _| sequence_softmax(c).unwrap())),
            ("sequence_enumerate", Box::new(|_, c, _| sequence_enumerate(&ids(c), 2, 7).unwrap())),
            (
                "sequence_conv",
                Box::new(|x, _, p| sequence_conv(x, &to_place(&filter, p).unwrap(), None, 3, -1, 1, false).unwrap()),
            ),
            (
                "sequence_expand_as",
                Box::new(|_, c, p| sequence_expand_as(&to_place(&expand_x, p).unwrap(), c).unwrap()),
            ),
        ];
        let values = |t: &LoDTensor| -> Vec<f64> {
            let t = to_place(t, Place::Cpu).unwrap();
            match t.tensor().dtype() {
                DType::I64 => t.tensor().as_slice::<i64>().unwrap().iter().map(|&v| v as f64).collect(),
                _ => t.tensor().as_slice::<f32>().unwrap().iter().map(|&v| v as f64).collect(),
            }
        };
        let close = |a: &[f64], b: &[f64]| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-5);
        for (name, op) in &ops {
            let (x, column) = (host(&own, 3), host(&own, 1));
            let d = device(0).unwrap();
            let (xd, cd) = (to_place(&x, Place::Cuda(0)).unwrap(), to_place(&column, Place::Cuda(0)).unwrap());
            // xd and cd carry LoDs of their own: plant the copy in each.
            for t in [&xd, &cd] {
                let planted_copy = upload_offsets(&d, &planted).unwrap();
                t.lod().lod_level(0).unwrap().copy_at(Place::Cuda(0), |_| Ok(planted_copy)).unwrap();
            }
            let want = op(&host(&planted, 3), &host(&planted, 1), Place::Cpu);
            let got = op(&xd, &cd, Place::Cuda(0));
            assert!(close(&values(&got), &values(&want)), "{name}: the op did not read the planted device copy");
            if devices > 1 {
                let (x1, c1) = (to_place(&x, Place::Cuda(1)).unwrap(), to_place(&column, Place::Cuda(1)).unwrap());
                let want = op(&x, &column, Place::Cpu);
                let got = op(&x1, &c1, Place::Cuda(1));
                assert!(close(&values(&got), &values(&want)), "{name}: wrong on a device without a copy");
                let lod = if name.ends_with("expand_as") || name.ends_with("softmax") || name.ends_with("enumerate") {
                    c1.lod()
                } else {
                    x1.lod()
                };
                assert_kept(lod, 1, name);
            }
        }
        // sequence_concat's, sequence_expand's and sequence_unpad's output offsets are made by
        // the op (on the device by concat and expand, uploaded by unpad), so a planted copy of
        // other offsets would give a result that no CPU op gives; instead: the result is the
        // CPU's, and the launch left the levels it read on the device, the output's included,
        // holding the host's offsets.
        let (a, b) = (host(&own, 3), host(&planted, 3));
        let (ad, bd) = (to_place(&a, Place::Cuda(0)).unwrap(), to_place(&b, Place::Cuda(0)).unwrap());
        let got = sequence_concat(&[&ad, &bd]).unwrap();
        assert!(close(&values(&got), &values(&sequence_concat(&[&a, &b]).unwrap())), "sequence_concat");
        for lod in [ad.lod(), bd.lod(), got.lod()] {
            assert_kept(lod, 0, "sequence_concat");
        }
        let y = LoDTensor::new(
            Tensor::zeros(DType::U8, Dim::new(&[4, 1]).unwrap()).unwrap(),
            Lod::from_offsets(vec![vec![0, 1, 3, 4]]).unwrap(),
        )
        .unwrap();
        let yd = to_place(&y, Place::Cuda(0)).unwrap();
        let got = sequence_expand(&ad, &yd, 0).unwrap();
        assert!(close(&values(&got), &values(&sequence_expand(&a, &y, 0).unwrap())), "sequence_expand");
        for lod in [ad.lod(), yd.lod(), got.lod()] {
            assert_kept(lod, 0, "sequence_expand");
        }
        let (padded, length) = sequence_pad(&a, &pad, 4).unwrap();
        let (pd, ld) = (to_place(&padded, Place::Cuda(0)).unwrap(), to_place(&length, Place::Cuda(0)).unwrap());
        let got = sequence_unpad(&pd, &ld).unwrap();
        assert!(close(&values(&got), &values(&sequence_unpad(&padded, &length).unwrap())), "sequence_unpad");
        assert_kept(got.lod(), 0, "sequence_unpad");
    }

    /// `lod`'s level 0 has a copy on device `ordinal` that holds its offsets.
    fn assert_kept(lod: &Lod, ordinal: u32, what: &str) {
        let level = lod.lod_level(0).unwrap();
        let kept = level.copy_at(Place::Cuda(ordinal), |_| panic!("{what}: no copy kept on cuda:{ordinal}")).unwrap();
        let n = level.offsets().len();
        let kept = Tensor::from_allocation(kept, DType::I64, Dim::new(&[n]).unwrap()).unwrap();
        let want: Vec<i64> = level.offsets().iter().map(|&o| o as i64).collect();
        assert_eq!(super::super::device::copy_to_host(&kept).unwrap().as_slice::<i64>().unwrap(), want, "{what}");
    }
}
