//! Arrow arrays in device memory, taken through the C device data interface as the host takes
//! them: random and damaged arrays and record batches (tests/arrow_producer) with every buffer
//! moved to a CUDA device are taken as the same tensors there, or refused with the error that the
//! host import gives the same array in host memory, nothing taken. So reading the LoD offsets and
//! validity bits from the device (in one copy where they are small, one read at a time where not)
//! decides as the host's reads in place do. Without a usable device each test says it was skipped.

mod arrow_producer;
mod common;
mod cuda_common;

use arrow_producer::*;
use common::Rng;
use cuda_common::{gpu, gpu_or_skip, GPU};
use lodtensor::backend::cuda::lod_levels_on;
use lodtensor::interop::arrow::{
    from_arrow, from_arrow_device, from_arrow_device_record_batch, from_arrow_record_batch, ArrowArray,
    ArrowDeviceArray, ArrowSchema, DEVICE_CUDA,
};
use lodtensor::{cuda_counters, to_place, DType, Dim, Error, LoDTensor, Place, Result, Tensor};
use std::sync::atomic::AtomicUsize;
use std::sync::Mutex;

/// Held by each test: they count the device's uploads, which are the device's, not the test's.
static DEVICE: Mutex<()> = Mutex::new(());

/// Moves every buffer of `array` and its children to the device: each a device copy, kept alive
/// in `kept`, whose address takes the host buffer's place.
unsafe fn buffers_to_device(array: &mut ArrowArray, kept: &mut Vec<LoDTensor>) {
    let made = &*array.private_data.cast::<Made>();
    for (i, bytes) in made.buffers.iter().enumerate() {
        let slot = &mut *array.buffers.add(i);
        if slot.is_null() {
            continue;
        }
        // An empty buffer keeps an address of device memory.
        let bytes = if bytes.is_empty() { &[0u8][..] } else { &bytes[..] };
        let copy = gpu(&LoDTensor::from_slice(bytes, &[bytes.len()], vec![]).unwrap());
        *slot = copy.tensor().as_ptr().cast();
        kept.push(copy);
    }
    for i in 0..array.n_children as usize {
        buffers_to_device(&mut **array.children.add(i), kept);
    }
}

/// `array` as a device array on cuda:0, its buffers moved there (kept in `kept`).
fn on_device(mut array: ArrowArray, kept: &mut Vec<LoDTensor>) -> ArrowDeviceArray {
    unsafe { buffers_to_device(&mut array, kept) };
    ArrowDeviceArray {
        array,
        device_id: 0,
        device_type: DEVICE_CUDA,
        sync_event: std::ptr::null_mut(),
        reserved: [0; 3],
    }
}

/// Checks that the device import's outcome, `device` (of the array in `left`), is the host
/// import's, `host`: the same tensors, the device's on the device, or the same error, its paths
/// one `array.` deeper; a refused array is left with the caller. Returns whether it was taken.
fn same_outcome(
    host: Result<Vec<LoDTensor>>,
    device: Result<Vec<LoDTensor>>,
    left: &mut ArrowArray,
    round: usize,
) -> bool {
    match (host, device) {
        (Ok(host), Ok(device)) => {
            assert!(left.release.is_none(), "round {round}: taken, and moved out");
            assert_eq!(host.len(), device.len());
            for (i, (h, d)) in host.iter().zip(&device).enumerate() {
                assert_eq!(d.tensor().place(), GPU, "round {round}, column {i}");
                assert_eq!((d.dims(), d.tensor().dtype(), d.lod()), (h.dims(), h.tensor().dtype(), h.lod()));
                let back = to_place(d, Place::Cpu).unwrap();
                assert_eq!(tensor_value(&back), tensor_value(h), "round {round}, column {i}");
                levels_are_on_the_device(d, round, i);
            }
            true
        }
        (Err(host), Err(device)) => {
            assert_eq!(
                std::mem::discriminant(&host),
                std::mem::discriminant(&device),
                "round {round}: {host} / {device}"
            );
            assert_eq!(device.to_string().replace("array.array", "array"), host.to_string(), "round {round}");
            assert!(left.release.is_some(), "round {round}: a refused array stays the caller's");
            unsafe { (left.release.unwrap())(left) };
            false
        }
        (host, device) => {
            panic!("round {round}: the host import gives {:?}, the device's {:?}", kind(&host), kind(&device))
        }
    }
}

/// Checks that every LoD level of `x`, a device import, already has its copy on the device (the
/// producer's offsets, rebased there), and that each copy holds the level's offsets.
fn levels_are_on_the_device(x: &LoDTensor, round: usize, column: usize) {
    let before = cuda_counters(0).unwrap();
    let copies = lod_levels_on(0, x.lod()).unwrap();
    let uploads = cuda_counters(0).unwrap().since(&before).uploads;
    assert_eq!(uploads, 0, "round {round}, column {column}: uploads of its LoD");
    for (k, copy) in copies.into_iter().enumerate() {
        let offsets = &x.lod().levels()[k];
        let t = Tensor::from_allocation(copy, DType::I64, Dim::new(&[offsets.len()]).unwrap()).unwrap();
        let host = to_place(&LoDTensor::dense(t), Place::Cpu).unwrap();
        let want: Vec<i64> = offsets.iter().map(|&o| o as i64).collect();
        assert_eq!(host.tensor().as_slice::<i64>().unwrap(), want, "round {round}, column {column}, level {k}");
    }
}

/// What an import gave, for a message.
fn kind(r: &Result<Vec<LoDTensor>>) -> std::result::Result<usize, &Error> {
    r.as_ref().map(Vec::len)
}

/// An import of the host's arrays or of device arrays, as one tensor a column.
type Import<A> = unsafe fn(*const ArrowSchema, *mut A) -> Result<Vec<LoDTensor>>;

/// Imports two arrays that `make` makes, one in host memory with `host`, the other with its
/// buffers moved to the device with `device`, and checks that the outcomes are the same (see
/// [`same_outcome`]): whether the arrays were taken.
fn taken_as_on_the_host(
    make: impl Fn() -> (ArrowSchema, ArrowArray),
    host: Import<ArrowArray>,
    device: Import<ArrowDeviceArray>,
    round: usize,
) -> bool {
    let ((mut host_schema, mut host_array), (mut schema, array)) = (make(), make());
    let mut kept = Vec::new();
    let mut lent = on_device(array, &mut kept);
    unsafe {
        let from_host = host(&host_schema, &mut host_array);
        if from_host.is_err() {
            (host_array.release.unwrap())(&mut host_array);
        }
        let from_device = device(&schema, &mut lent);
        let taken = same_outcome(from_host, from_device, &mut lent.array, round);
        (host_schema.release.unwrap())(&mut host_schema);
        (schema.release.unwrap())(&mut schema);
        taken
    }
}

unsafe fn one_from_host(schema: *const ArrowSchema, array: *mut ArrowArray) -> Result<Vec<LoDTensor>> {
    from_arrow(schema, array).map(|x| vec![x])
}

unsafe fn one_from_device(schema: *const ArrowSchema, array: *mut ArrowDeviceArray) -> Result<Vec<LoDTensor>> {
    from_arrow_device(schema, array).map(|x| vec![x])
}

#[test]
fn damaged_device_arrays_are_taken_or_refused_as_on_the_host() {
    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    let _device = DEVICE.lock().unwrap_or_else(|e| e.into_inner());
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(41);
    let (mut taken, mut refused) = (0, 0);
    for round in 0..1500 {
        let spec = damaged_spec(&mut rng, round);
        if taken_as_on_the_host(|| make(spec.clone(), &RELEASED), one_from_host, one_from_device, round) {
            taken += 1;
        } else {
            refused += 1;
        }
    }
    assert!(taken > 150 && refused > 150, "{taken} taken, {refused} refused");
}

#[test]
fn damaged_device_record_batches_are_taken_or_refused_as_on_the_host() {
    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    let _device = DEVICE.lock().unwrap_or_else(|e| e.into_inner());
    if !gpu_or_skip() {
        return;
    }
    let mut rng = Rng(43);
    let (mut taken, mut refused) = (0, 0);
    for round in 0..1200 {
        let (columns, length, offset) = damaged_batch(&mut rng);
        // The struct's own validity bits, now and then, all set or with a null among its rows.
        let bits = (offset + length) as usize;
        let validity = match round % 4 {
            0 => Some((vec![0xff; bits.div_ceil(8)], -1)),
            1 => {
                let mut v = vec![0xffu8; bits.div_ceil(8)];
                let i = rng.below(bits);
                v[i / 8] ^= 1 << (i % 8);
                Some((v, -1))
            }
            _ => None,
        };
        let batch = || make_batch(columns.clone(), length, offset, validity.clone(), &RELEASED);
        if taken_as_on_the_host(batch, from_arrow_record_batch, from_arrow_device_record_batch, round) {
            taken += 1;
        } else {
            refused += 1;
        }
    }
    assert!(taken > 120 && refused > 120, "{taken} taken, {refused} refused");
}
