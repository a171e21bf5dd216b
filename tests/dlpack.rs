//! DLPack: a tensor lent as a `DLManagedTensorVersioned` (its fields, its memory outliving the
//! tensor, the deleter) and managed tensors taken as tensors (zero copy, the deleter called once
//! when the last handle goes, never on failure), with every documented error; and a round trip
//! in the form before DLPack 1.0 (the C test, test_dlpack.c, checks that form as the other).

use lodtensor::interop::dlpack::{
    from_dlpack, to_dlpack, DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, DLTensor,
    FLAG_READ_ONLY,
};
use lodtensor::{DType, Error, LoDTensor, Lod, Tensor};
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A managed tensor over a caller's `Vec<f32>`, as a producer would make it: the deleter counts
/// its calls in `deleted` and frees the box.
struct Producer {
    managed: DLManagedTensorVersioned,
    data: Vec<f32>,
    shape: Vec<i64>,
    strides: Vec<i64>,
    deleted: &'static AtomicUsize,
}

unsafe extern "C" fn delete_producer(m: *mut DLManagedTensorVersioned) {
    let p = Box::from_raw((*m).manager_ctx.cast::<Producer>());
    p.deleted.fetch_add(1, Ordering::SeqCst);
}

/// A float32 managed tensor of `shape` holding 0, 1, 2, ... with the given strides (NULL when
/// `strides` is None).
fn produce(shape: &[i64], strides: Option<&[i64]>, deleted: &'static AtomicUsize) -> *mut DLManagedTensorVersioned {
    let n: i64 = shape.iter().product();
    let mut p = Box::new(Producer {
        managed: DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 1 },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_producer),
            flags: 0,
            dl_tensor: DLTensor {
                data: std::ptr::null_mut(),
                device: DLDevice { device_type: 1, device_id: 0 },
                ndim: shape.len() as i32,
                dtype: DLDataType { code: 2, bits: 32, lanes: 1 },
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
        },
        data: (0..n.max(0)).map(|i| i as f32).collect(),
        shape: shape.to_vec(),
        strides: strides.map_or(vec![], |s| s.to_vec()),
        deleted,
    });
    p.managed.dl_tensor.data = p.data.as_mut_ptr().cast();
    p.managed.dl_tensor.shape = p.shape.as_mut_ptr();
    if strides.is_some() {
        p.managed.dl_tensor.strides = p.strides.as_mut_ptr();
    }
    let raw = Box::into_raw(p);
    unsafe {
        (*raw).managed.manager_ctx = raw.cast::<c_void>();
        &mut (*raw).managed
    }
}

/// Frees a managed tensor that a failed import left with the caller.
fn give_back(m: *mut DLManagedTensorVersioned) {
    unsafe { ((*m).deleter.unwrap())(m) }
}

fn values(t: &LoDTensor) -> Vec<f32> {
    t.tensor().as_slice::<f32>().unwrap().to_vec()
}

#[test]
fn an_exported_tensor_describes_the_tensor_and_outlives_it() {
    let x = LoDTensor::new(
        Tensor::from_slice(&[1i16, 2, 3, 4, 5, 6], &[3, 2]).unwrap(),
        Lod::from_offsets(vec![vec![0, 1, 3]]).unwrap(),
    )
    .unwrap();
    // A row slice: the data address is the slice's first element, byte_offset 0.
    let rows = LoDTensor::dense(x.tensor().slice_rows(1..3).unwrap());
    let address = rows.tensor().as_ptr();
    let m = to_dlpack::<DLManagedTensorVersioned>(&rows);
    drop((x, rows));
    unsafe {
        let t = &(*m).dl_tensor;
        assert_eq!((*m).version, DLPackVersion { major: 1, minor: 0 });
        assert_eq!((*m).flags, 0);
        assert_eq!(t.device, DLDevice { device_type: 1, device_id: 0 });
        assert_eq!(t.dtype, DLDataType { code: 0, bits: 16, lanes: 1 });
        assert_eq!(t.ndim, 2);
        assert_eq!(std::slice::from_raw_parts(t.shape, 2), &[2, 2]);
        assert_eq!(std::slice::from_raw_parts(t.strides, 2), &[2, 1]);
        assert_eq!(t.byte_offset, 0);
        assert_eq!(t.data.cast::<u8>().cast_const(), address);
        // The tensors have gone; the memory has not.
        assert_eq!(std::slice::from_raw_parts(t.data.cast::<i16>(), 4), &[3, 4, 5, 6]);
        ((*m).deleter.unwrap())(m);
    }
}

#[test]
fn an_exported_0_d_tensor_has_no_shape_values() {
    let m = to_dlpack::<DLManagedTensorVersioned>(&LoDTensor::dense(Tensor::from_slice(&[7.5f64], &[]).unwrap()));
    unsafe {
        assert_eq!((*m).dl_tensor.ndim, 0);
        assert_eq!(*(*m).dl_tensor.data.cast::<f64>(), 7.5);
        give_back(m);
    }
}

#[test]
fn an_imported_tensor_shares_the_memory_and_calls_the_deleter_once_when_the_last_handle_goes() {
    static DELETED: AtomicUsize = AtomicUsize::new(0);
    let m = produce(&[4, 2], None, &DELETED);
    let data = unsafe { (*m).dl_tensor.data.cast::<u8>().cast_const() };
    let x = unsafe { from_dlpack(m, Lod::from_offsets(vec![vec![0, 3, 4]]).unwrap()) }.unwrap();
    assert_eq!(x.tensor().as_ptr(), data, "zero copy");
    assert_eq!(x.dims().as_slice(), &[4, 2]);
    assert_eq!(x.lod().levels(), &[vec![0, 3, 4]]);
    assert_eq!(values(&x), (0..8).map(|i| i as f32).collect::<Vec<_>>());
    let piece = x.slice(0, 1, 2).unwrap();
    drop(x);
    assert_eq!(DELETED.load(Ordering::SeqCst), 0, "a slice still uses the memory");
    assert_eq!(values(&piece), &[6.0, 7.0]);
    drop(piece);
    assert_eq!(DELETED.load(Ordering::SeqCst), 1);
}

#[test]
fn a_round_trip_through_dlpack_is_the_same_memory() {
    let x = LoDTensor::dense(Tensor::from_slice(&[1u8, 2, 3], &[3]).unwrap());
    let y = unsafe { from_dlpack(to_dlpack::<DLManagedTensorVersioned>(&x), Lod::empty()) }.unwrap();
    assert_eq!(y.tensor().as_ptr(), x.tensor().as_ptr());
    assert_eq!(y.tensor().dtype(), DType::U8);
    drop(x);
    assert_eq!(y.tensor().as_slice::<u8>().unwrap(), &[1, 2, 3]);
}

#[test]
fn the_form_before_dlpack_1_0_describes_the_tensor_and_round_trips() {
    let x = LoDTensor::dense(Tensor::from_slice(&[1i32, 2, 3, 4, 5, 6], &[2, 3]).unwrap());
    let m = to_dlpack::<DLManagedTensor>(&x);
    unsafe {
        let t = &(*m).dl_tensor;
        assert_eq!(t.dtype, DLDataType { code: 0, bits: 32, lanes: 1 });
        assert_eq!(std::slice::from_raw_parts(t.shape, 2), &[2, 3]);
        assert_eq!(std::slice::from_raw_parts(t.strides, 2), &[3, 1]);
        assert_eq!(t.data.cast::<u8>().cast_const(), x.tensor().as_ptr());
        assert!((*m).deleter.is_some());
    }
    let y = unsafe { from_dlpack(m, Lod::from_offsets(vec![vec![0, 2]]).unwrap()) }.unwrap();
    assert_eq!(y.tensor().as_ptr(), x.tensor().as_ptr());
    drop(x);
    assert_eq!(y.tensor().as_slice::<i32>().unwrap(), &[1, 2, 3, 4, 5, 6]);
    assert_eq!(y.lod().levels(), &[vec![0, 2]]);
}

#[test]
fn strides_that_step_as_compact_ones_are_taken() {
    static DELETED: AtomicUsize = AtomicUsize::new(0);
    // Compact, and a dim of size 1 with an arbitrary stride.
    for (shape, strides) in [(&[2i64, 3][..], &[3i64, 1][..]), (&[2, 1, 3], &[3, 99, 1]), (&[0, 5], &[7, 7])] {
        let m = produce(shape, Some(strides), &DELETED);
        let x = unsafe { from_dlpack(m, Lod::empty()) }.unwrap();
        assert_eq!(x.dims().as_slice().iter().map(|&d| d as i64).collect::<Vec<_>>(), shape);
    }
    assert_eq!(DELETED.load(Ordering::SeqCst), 3);
}

/// Imports `m` after `change`, which must fail with `kind` and a message containing `words`,
/// without calling the deleter.
fn refused(change: impl FnOnce(*mut DLManagedTensorVersioned), lod: Lod, kind: fn(String) -> Error, words: &str) {
    static DELETED: AtomicUsize = AtomicUsize::new(0);
    let m = produce(&[3, 2], None, &DELETED);
    change(m);
    let before = DELETED.load(Ordering::SeqCst);
    let e = unsafe { from_dlpack(m, lod) }.map(|_| ()).unwrap_err();
    assert_eq!(DELETED.load(Ordering::SeqCst), before, "a failed import called the deleter: {e}");
    assert_eq!(std::mem::discriminant(&e), std::mem::discriminant(&kind(String::new())), "{e}");
    assert!(e.to_string().starts_with(if words.starts_with("lod") { "" } else { "managed: " }), "{e}");
    assert!(e.to_string().contains(words), "{e:?} does not say {words:?}");
    unsafe {
        // Back as it was made, for its deleter.
        (*m).dl_tensor.shape = (*(*m).manager_ctx.cast::<Producer>()).shape.as_mut_ptr();
    }
    give_back(m);
}

#[test]
fn every_documented_error() {
    use Error::*;
    let none = Lod::empty;
    assert!(
        matches!(unsafe { from_dlpack::<DLManagedTensorVersioned>(std::ptr::null_mut(), Lod::empty()) }, Err(NullArgument(m)) if m.contains("managed"))
    );
    refused(|m| unsafe { (*m).version.major = 2 }, none(), Unsupported, "version 2.1");
    refused(|m| unsafe { (*m).flags = FLAG_READ_ONLY }, none(), Unsupported, "read-only");
    refused(|m| unsafe { (*m).dl_tensor.device.device_type = 4 }, none(), Unsupported, "device type 4");
    refused(|m| unsafe { (*m).dl_tensor.device.device_id = 3 }, none(), InvalidArgument, "got 3");
    refused(|m| unsafe { (*m).dl_tensor.dtype.lanes = 4 }, none(), Unsupported, "lanes");
    refused(|m| unsafe { (*m).dl_tensor.dtype.code = 5 }, none(), Unsupported, "code 5");
    refused(|m| unsafe { (*m).dl_tensor.ndim = -1 }, none(), InvalidArgument, "ndim -1");
    refused(|m| unsafe { (*m).dl_tensor.ndim = 10 }, none(), Unsupported, "10 dims");
    refused(|m| unsafe { (*m).dl_tensor.shape = std::ptr::null_mut() }, none(), NullArgument, "shape");
    refused(|m| unsafe { *(*m).dl_tensor.shape = -3 }, none(), InvalidArgument, "negative");
    refused(
        |m| unsafe {
            let p = &mut *(*m).manager_ctx.cast::<Producer>();
            p.strides = vec![1, 3]; // column-major
            (*m).dl_tensor.strides = p.strides.as_mut_ptr();
        },
        none(),
        Unsupported,
        "not compact row-major",
    );
    refused(|m| unsafe { (*m).dl_tensor.data = std::ptr::null_mut() }, none(), NullArgument, "data");
    // NULL data is NULL whatever the offset from it: no element may be read at byte_offset.
    let null_offset = |m: *mut DLManagedTensorVersioned| unsafe {
        (*m).dl_tensor.data = std::ptr::null_mut();
        (*m).dl_tensor.byte_offset = 64;
    };
    refused(null_offset, none(), NullArgument, "data is NULL");
    refused(|m| unsafe { (*m).dl_tensor.byte_offset = 2 }, none(), InvalidArgument, "aligned");
    refused(|_| {}, Lod::from_offsets(vec![vec![0, 2]]).unwrap(), InvalidLod, "lod: ");
    refused(|m| unsafe { *(*m).dl_tensor.shape.add(1) = i64::MAX }, none(), OutOfMemory, "overflows");
    refused(|m| unsafe { *(*m).dl_tensor.shape = 1 << 61 }, none(), OutOfMemory, "more bytes");
}
