//! The Arrow C data interface: tensors lent as Arrow arrays (the chain's formats, lengths and
//! buffers, read by a reader written here from the interface's rules; the memory outliving the
//! tensor; children moved out) and Arrow arrays taken as tensors (zero copy, slices and offsets
//! honoured, the release called once when the last handle goes and never on failure), with every
//! documented error.

mod arrow_producer;
mod common;

use arrow_producer::*;
use common::{rounds, tally_floor, Rng};
use lodtensor::interop::arrow::{from_arrow, to_arrow, ArrowArray, ArrowSchema};
use lodtensor::{DType, Error, LoDTensor, Lod, Tensor};
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The formats of a chain, outermost first.
unsafe fn formats(schema: &ArrowSchema) -> Vec<String> {
    let mut out = vec![CStr::from_ptr(schema.format).to_str().unwrap().to_owned()];
    if schema.n_children == 1 {
        out.extend(formats(&**schema.children));
    }
    out
}

fn random_tensor(rng: &mut Rng, dtype: DType) -> LoDTensor {
    let levels = rng.below(4);
    let entries = if levels == 0 { rng.below(5) } else { 1 + rng.below(4) };
    random_column(rng, dtype, levels, entries)
}

/// A random tensor of `levels` LoD levels and `entries` entries: sequences at level 0, or rows
/// without a LoD.
fn random_column(rng: &mut Rng, dtype: DType, levels: usize, entries: usize) -> LoDTensor {
    let mut lod: Vec<Vec<usize>> = Vec::new();
    let mut entries = entries;
    for _ in 0..levels {
        let mut level = vec![0];
        for _ in 0..entries {
            let len = if rng.below(4) == 0 { 0 } else { rng.below(4) };
            level.push(level.last().unwrap() + len);
        }
        entries = *level.last().unwrap();
        lod.push(level);
    }
    let rows = entries;
    let mut dims = vec![rows];
    for _ in 0..rng.below(3) {
        dims.push(if rng.below(6) == 0 { 0 } else { 1 + rng.below(3) });
    }
    let numel: usize = dims.iter().product();
    let bytes: Vec<u8> = (0..numel * dtype.size())
        .map(|_| if dtype == DType::Bool { rng.below(2) as u8 } else { rng.below(256) as u8 })
        .collect();
    let tensor = Tensor::from_bytes(dtype, lodtensor::Dim::new(&dims).unwrap(), &bytes).unwrap();
    LoDTensor::new(tensor, Lod::from_offsets(lod).unwrap()).unwrap()
}

/// The kind of an error, by name.
fn kind(e: &Error) -> &'static str {
    match e {
        Error::NullArgument(_) => "NullArgument",
        Error::InvalidArgument(_) => "InvalidArgument",
        Error::InvalidLod(_) => "InvalidLod",
        Error::Unsupported(_) => "Unsupported",
        Error::OutOfMemory(_) => "OutOfMemory",
        other => panic!("unexpected {other:?}"),
    }
}

unsafe fn release(mut schema: ArrowSchema, mut array: ArrowArray) {
    (schema.release.unwrap())(&mut schema);
    assert!(schema.release.is_none(), "release marks the schema released");
    (array.release.unwrap())(&mut array);
    assert!(array.release.is_none(), "release marks the array released");
}

#[test]
fn exported_random_tensors_read_back_as_their_sequences() {
    let mut rng = Rng(7);
    for round in 0..rounds(300) {
        let (dtype, format) = DTYPES[round % DTYPES.len()];
        let x = random_tensor(&mut rng, dtype);
        let (schema, array) = to_arrow(&x).unwrap();
        unsafe {
            let mut expected: Vec<String> = x.lod().levels().iter().map(|_| "+L".to_owned()).collect();
            expected.extend(x.dims().as_slice()[1..].iter().map(|d| format!("+w:{d}")));
            expected.push(format.to_owned());
            assert_eq!(formats(&schema), expected, "{x:?}");
            assert_eq!(CStr::from_ptr(schema.name).to_str().unwrap(), "");
            assert_eq!(read(&schema, &array), tensor_value(&x), "{x:?}");
            if x.lod().num_levels() > 0 {
                // The top level's offsets are the LoD's, in place.
                let offsets =
                    std::slice::from_raw_parts((*array.buffers.add(1)).cast::<i64>(), array.length as usize + 1);
                let level: Vec<i64> = x.lod().levels()[0].iter().map(|&o| o as i64).collect();
                assert_eq!(offsets, &level[..]);
                assert!((*array.buffers).is_null(), "no validity buffer");
            }
            release(schema, array);
        }
    }
}

#[test]
fn an_export_outlives_the_tensor_and_shares_its_memory() {
    let x = LoDTensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2], vec![vec![0, 1, 3]]).unwrap();
    let slice = x.slice(0, 1, 2).unwrap();
    let (schema, array) = to_arrow(&slice).unwrap();
    drop((x, slice.clone()));
    unsafe {
        let values = &**(**array.children).children;
        let data = (*values.buffers.add(1)).cast::<f32>();
        assert_eq!(data, slice.tensor().as_slice::<f32>().unwrap().as_ptr(), "zero copy");
        drop(slice);
        let expected = vec![Value::List(vec![
            Value::List(vec![
                Value::Element(3.0f32.to_ne_bytes().to_vec()),
                Value::Element(4.0f32.to_ne_bytes().to_vec()),
            ]),
            Value::List(vec![
                Value::Element(5.0f32.to_ne_bytes().to_vec()),
                Value::Element(6.0f32.to_ne_bytes().to_vec()),
            ]),
        ])];
        assert_eq!(read(&schema, &array), expected);
        release(schema, array);
    }
}

#[test]
fn a_child_moved_out_stays_valid_after_its_parent_is_released() {
    let x = LoDTensor::from_slice(&[7i32, 8, 9], &[3], vec![vec![0, 2, 3]]).unwrap();
    let (schema, mut array) = to_arrow(&x).unwrap();
    drop(x);
    unsafe {
        let slot = *array.children;
        let mut child = std::ptr::read(slot);
        (*slot).release = None; // moved
        (array.release.unwrap())(&mut array);
        let mut child_schema_owner = schema;
        let data = std::slice::from_raw_parts((*child.buffers.add(1)).cast::<i32>(), 3);
        assert_eq!(data, [7, 8, 9]);
        (child.release.unwrap())(&mut child);
        assert!(child.release.is_none());
        (child_schema_owner.release.unwrap())(&mut child_schema_owner);
    }
}

#[test]
fn refusals_of_export() {
    let bf = LoDTensor::dense(Tensor::zeros(DType::BF16, lodtensor::Dim::new(&[2]).unwrap()).unwrap());
    assert_eq!(kind(&to_arrow(&bf).err().unwrap()), "Unsupported");
    let scalar = LoDTensor::dense(Tensor::zeros(DType::F32, lodtensor::Dim::new(&[]).unwrap()).unwrap());
    assert_eq!(kind(&to_arrow(&scalar).err().unwrap()), "InvalidArgument");
}

#[test]
fn sliced_lists_are_taken_zero_copy_and_released_once_by_the_last_handle() {
    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    // large_list<int16> of entries 1..3 of [[0,1], [2,3,4], [], [5,6]]; the values array has an
    // offset of 1 and one element before it.
    let values = values_spec("s", bytes_of(&[-1i16, 0, 1, 2, 3, 4, 5, 6]), 7, 1);
    let spec = list_spec(&[0, 2, 5, 5, 7], true, 1, values);
    let (mut schema, mut array) = make(spec, &RELEASED);
    unsafe {
        let expected = read(&schema, &array);
        let data_addr = (*(**array.children).buffers.add(1)).cast::<i16>();
        let x = from_arrow(&schema, &mut array).unwrap();
        assert!(array.release.is_none(), "moved out");
        assert_eq!(x.lod().levels(), &[vec![0, 3, 3, 5]]);
        assert_eq!(x.tensor().as_slice::<i16>().unwrap(), [2, 3, 4, 5, 6]);
        assert_eq!(x.tensor().as_slice::<i16>().unwrap().as_ptr(), data_addr.add(3), "zero copy");
        assert_eq!(tensor_value(&x), expected);
        (schema.release.unwrap())(&mut schema); // the schema stays the caller's
        let piece = x.slice(0, 2, 3).unwrap();
        drop(x);
        assert_eq!(RELEASED.load(Ordering::SeqCst), 0, "a slice still holds the memory");
        assert_eq!(piece.tensor().as_slice::<i16>().unwrap(), [5, 6]);
        drop(piece);
        assert_eq!(RELEASED.load(Ordering::SeqCst), 1);
    }
}

#[test]
fn random_arrow_arrays_are_taken_as_their_sequences() {
    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    let mut rng = Rng(11);
    for round in 0..rounds(400) {
        let (dtype, format) = DTYPES[round % DTYPES.len()];
        let levels = rng.below(3);
        let fixed: Vec<usize> = (0..rng.below(3)).map(|_| rng.below(4)).collect();
        let length = if levels > 0 { 1 + rng.below(4) } else { rng.below(5) };
        let (mut schema, mut array) = make(random_spec(&mut rng, format, levels, &fixed, length), &RELEASED);
        unsafe {
            let expected = read(&schema, &array);
            let before = RELEASED.load(Ordering::SeqCst);
            let x = from_arrow(&schema, &mut array).unwrap_or_else(|e| panic!("round {round}: {e}"));
            assert_eq!(x.tensor().dtype(), dtype);
            assert_eq!(&x.dims().as_slice()[1..], &fixed[..]);
            assert_eq!(x.lod().num_levels(), levels);
            assert_eq!(tensor_value(&x), expected);
            assert!(array.release.is_none());
            drop(x);
            assert_eq!(RELEASED.load(Ordering::SeqCst), before + 1);
            (schema.release.unwrap())(&mut schema);
        }
    }
}

#[test]
fn strings_and_binary_are_taken_as_byte_sequences_zero_copy() {
    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    let data = b"xyzabcdefg";
    for format in BINARY {
        // Entries 1..4 of ["", "ab", "cde", ""], whose offsets start at 3: "ab", "cde", "".
        let (mut schema, mut array) = make(bytes_spec(format, &[3, 3, 5, 8, 8], data, 1), &RELEASED);
        unsafe {
            let bytes_addr = (*array.buffers.add(2)).cast::<u8>();
            let before = RELEASED.load(Ordering::SeqCst);
            let x = from_arrow(&schema, &mut array).unwrap();
            assert_eq!(x.tensor().dtype(), DType::U8, "{format}");
            assert_eq!(x.lod().levels(), &[vec![0, 2, 5, 5]]);
            assert_eq!(x.tensor().bytes().unwrap(), b"abcde");
            assert_eq!(x.tensor().as_ptr().cast::<u8>(), bytes_addr.add(3), "zero copy");
            let piece = x.slice(0, 1, 2).unwrap();
            drop(x);
            assert_eq!(RELEASED.load(Ordering::SeqCst), before, "a slice still holds the memory");
            assert_eq!(piece.tensor().bytes().unwrap(), b"cde");
            drop(piece);
            assert_eq!(RELEASED.load(Ordering::SeqCst), before + 1);
            (schema.release.unwrap())(&mut schema);
        }
    }
    // A list of strings: two levels, [["ab", ""], [], ["cde"]].
    let strings = bytes_spec("u", &[3, 5, 5, 8], data, 0);
    let (mut schema, mut array) = make(list_spec(&[0, 2, 2, 3], false, 0, strings), &RELEASED);
    unsafe {
        let x = from_arrow(&schema, &mut array).unwrap();
        assert_eq!(x.lod().levels(), &[vec![0, 2, 2, 3], vec![0, 2, 2, 5]]);
        assert_eq!(x.tensor().bytes().unwrap(), b"abcde");
        (schema.release.unwrap())(&mut schema);
    }
    // Fixed-size binary of 3 bytes, entries 1..3: rows of 3 bytes.
    let (mut schema, mut array) = make(values_spec("w:3", data[..9].to_vec(), 2, 1), &RELEASED);
    unsafe {
        let bytes_addr = (*array.buffers.add(1)).cast::<u8>();
        let x = from_arrow(&schema, &mut array).unwrap();
        assert_eq!((x.tensor().dtype(), x.dims().as_slice()), (DType::U8, &[2, 3][..]));
        assert!(x.lod().levels().is_empty());
        assert_eq!(x.tensor().bytes().unwrap(), b"abcdef");
        assert_eq!(x.tensor().as_ptr().cast::<u8>(), bytes_addr.add(3), "zero copy");
        (schema.release.unwrap())(&mut schema);
    }
}

#[test]
fn random_binary_arrays_are_taken_as_their_bytes() {
    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    let mut rng = Rng(13);
    for round in 0..rounds(400) {
        let levels = rng.below(3);
        let fixed_size = round % 5 == 4;
        let (format, fixed) = if fixed_size {
            (format!("w:{}", rng.below(4)), (0..rng.below(2)).map(|_| rng.below(4)).collect())
        } else {
            (BINARY[round % 4].to_owned(), vec![])
        };
        let length = if levels > 0 || !fixed_size { 1 + rng.below(4) } else { rng.below(5) };
        let (mut schema, mut array) = make(random_spec(&mut rng, &format, levels, &fixed, length), &RELEASED);
        unsafe {
            let expected = read(&schema, &array);
            let before = RELEASED.load(Ordering::SeqCst);
            let x = from_arrow(&schema, &mut array).unwrap_or_else(|e| panic!("round {round} ({format}): {e}"));
            assert_eq!(x.tensor().dtype(), DType::U8);
            // Binary adds a level (its offsets) over the bytes; fixed-size binary a dim.
            assert_eq!(x.lod().num_levels(), levels + usize::from(!fixed_size));
            if fixed_size {
                assert_eq!(x.dims().as_slice().len(), fixed.len() + 2);
            }
            assert_eq!(tensor_value(&x), expected, "round {round} ({format})");
            drop(x);
            assert_eq!(RELEASED.load(Ordering::SeqCst), before + 1);
            (schema.release.unwrap())(&mut schema);
        }
    }
}

/// Random text (words of 1-4 byte characters, empty ones among them) as a 1-d uint8 tensor, one
/// LoD level a string, under `outer` levels of lists; with `damage`, one byte replaced at random.
fn random_text(rng: &mut Rng, outer: usize, damage: bool) -> LoDTensor {
    const CHARS: [&str; 6] = ["a", "Z", "ß", "ü", "語", "😀"];
    let mut lod: Vec<Vec<usize>> = Vec::new();
    let mut entries = 1 + rng.below(4);
    for _ in 0..outer {
        let mut level = vec![0];
        for _ in 0..entries {
            level.push(level.last().unwrap() + rng.below(4));
        }
        entries = *level.last().unwrap();
        lod.push(level);
    }
    let (mut bytes, mut offsets) = (Vec::new(), vec![0]);
    for _ in 0..entries {
        for _ in 0..rng.below(4) {
            bytes.extend_from_slice(CHARS[rng.below(CHARS.len())].as_bytes());
        }
        offsets.push(bytes.len());
    }
    if damage && !bytes.is_empty() {
        let i = rng.below(bytes.len());
        bytes[i] = rng.below(256) as u8;
    }
    lod.push(offsets);
    LoDTensor::from_slice(&bytes, &[bytes.len()], lod).unwrap()
}

/// The first string of `x`'s last level that is not UTF-8, read string by string: its sequence
/// and where it breaks.
fn first_broken_string(x: &LoDTensor) -> Option<(usize, usize)> {
    let bytes = x.tensor().bytes().unwrap();
    let level = x.lod().levels().last().unwrap();
    level
        .windows(2)
        .enumerate()
        .find_map(|(i, w)| std::str::from_utf8(&bytes[w[0]..w[1]]).err().map(|e| (i, w[0] + e.valid_up_to())))
}

/// `got`, an export of random text whose first broken string (for UTF-8) is `broken`: the export
/// when there is none; else `None`, once it is checked to have been refused naming that string of
/// `arg`'s LoD level `level` and the byte where it breaks.
fn lent_unless_broken<T>(
    got: lodtensor::Result<T>,
    broken: Option<(usize, usize)>,
    arg: &str,
    level: usize,
    round: usize,
) -> Option<T> {
    match (got, broken) {
        (Ok(lent), None) => Some(lent),
        (Err(Error::InvalidArgument(m)), Some((i, at))) => {
            let want = format!("{arg}: sequence {i} of LoD level {level} (");
            assert!(m.starts_with(&want) && m.ends_with(&format!("is not UTF-8 at byte {at}")), "{m}");
            None
        }
        (got, want) => panic!("round {round}: {:?} for the first broken string {want:?}", got.err()),
    }
}

#[test]
fn text_is_lent_as_arrow_strings_zero_copy() {
    use lodtensor::interop::arrow::{to_arrow_strings, Encoding};
    let mut rng = Rng(17);
    let (mut lent, mut refused) = (0, 0);
    for round in 0..rounds(600) {
        let outer = rng.below(3);
        let x = random_text(&mut rng, outer, round % 3 == 2);
        let encoding = if round % 4 == 3 { Encoding::Binary } else { Encoding::Utf8 };
        let broken = first_broken_string(&x).filter(|_| encoding == Encoding::Utf8);
        let Some((schema, array)) = lent_unless_broken(to_arrow_strings(&x, encoding), broken, "t", outer, round)
        else {
            refused += 1;
            continue;
        };
        unsafe {
            let mut expected = vec!["+L".to_owned(); outer];
            expected.push(if encoding == Encoding::Utf8 { "U" } else { "Z" }.to_owned());
            assert_eq!(formats(&schema), expected);
            assert_eq!(read(&schema, &array), tensor_value(&x), "round {round}");
            let mut strings = &array;
            for _ in 0..outer {
                strings = &**strings.children;
            }
            assert_eq!((strings.n_buffers, strings.n_children), (3, 0));
            assert_eq!(*strings.buffers.add(1), x.lod().levels()[outer].as_ptr().cast(), "the LoD's offsets");
            assert_eq!(*strings.buffers.add(2), x.tensor().as_ptr().cast(), "zero copy");
            // Taken back, the same tensor.
            let (schema, mut array) = (schema, array);
            let y = from_arrow(&schema, &mut array).unwrap();
            assert_eq!((y.lod(), y.tensor().bytes().unwrap()), (x.lod(), x.tensor().bytes().unwrap()));
            drop(y);
            let mut schema = schema;
            (schema.release.unwrap())(&mut schema);
        }
        lent += 1;
    }
    assert!(lent > tally_floor(300) && refused > tally_floor(50), "{lent} lent, {refused} refused");
}

#[test]
fn every_documented_refusal_of_a_strings_export() {
    use lodtensor::interop::arrow::{to_arrow_device_strings, to_arrow_strings, Encoding, DEVICE_CPU};
    let message = |x: &LoDTensor, encoding| match to_arrow_strings(x, encoding) {
        Err(Error::InvalidArgument(m)) => m,
        other => panic!("{:?}", other.map(|_| ())),
    };
    let text = |bytes: &[u8], lod: Vec<Vec<usize>>| LoDTensor::from_slice(bytes, &[bytes.len()], lod).unwrap();
    let floats = LoDTensor::from_slice(&[1.0f32], &[1], vec![vec![0, 1]]).unwrap();
    assert!(message(&floats, Encoding::Binary).contains("t: float32; strings are uint8 bytes"));
    let rows = LoDTensor::from_slice(&[1u8, 2], &[1, 2], vec![vec![0, 1]]).unwrap();
    assert!(message(&rows, Encoding::Binary).contains("t: dims [1, 2]; strings are a 1-d tensor of bytes"));
    assert!(message(&text(b"ab", vec![]), Encoding::Binary).contains("t: has no LoD"));
    // A character split between two strings: each is whole bytes of UTF-8 only together.
    let split = text("ü".as_bytes(), vec![vec![0, 1, 2]]);
    assert_eq!(message(&split, Encoding::Utf8), "t: sequence 0 of LoD level 0 (bytes 0..1) is not UTF-8 at byte 0");
    assert!(to_arrow_strings(&split, Encoding::Binary).is_ok(), "binary takes any bytes");
    assert!(message(&split, Encoding::Values).starts_with("encoding: LODTENSOR_ARROW_VALUES lends no strings"));
    let bad = text(b"ok\xffno", vec![vec![0, 3], vec![0, 2, 2, 5]]);
    assert_eq!(message(&bad, Encoding::Utf8), "t: sequence 2 of LoD level 1 (bytes 2..5) is not UTF-8 at byte 2");
    // The device form of a host tensor: the host export on the CPU.
    let (mut schema, mut device) = to_arrow_device_strings(&split, Encoding::Binary).unwrap();
    assert_eq!((device.device_type, device.device_id), (DEVICE_CPU, -1));
    unsafe {
        assert_eq!(formats(&schema), ["Z"]);
        assert_eq!(*device.array.buffers.add(2), split.tensor().as_ptr().cast());
        (schema.release.unwrap())(&mut schema);
        (device.array.release.unwrap())(&mut device.array);
    }
    assert!(matches!(to_arrow_device_strings(&bad, Encoding::Utf8), Err(Error::InvalidArgument(_))));
}

#[test]
fn damaged_arrays_are_refused_or_taken_as_they_read() {
    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    let mut rng = Rng(5);
    let (mut taken, mut refused) = (0, 0);
    for round in 0..rounds(3000) {
        let spec = damaged_spec(&mut rng, round);
        let (mut schema, mut array) = make(spec.clone(), &RELEASED);
        unsafe {
            let before = RELEASED.load(Ordering::SeqCst);
            match from_arrow(&schema, &mut array) {
                Ok(x) => {
                    // Accepted, so valid: the reference reads the same from a second copy (a
                    // bool array was released by the import), and nulls would fail it.
                    let (mut schema2, mut again) = make(spec, &RELEASED);
                    assert_eq!(tensor_value(&x), read(&schema2, &again), "round {round}");
                    (schema2.release.unwrap())(&mut schema2);
                    (again.release.unwrap())(&mut again);
                    drop(x);
                    assert_eq!(RELEASED.load(Ordering::SeqCst), before + 2);
                    taken += 1;
                }
                Err(_) => {
                    assert!(array.release.is_some(), "round {round}: a refused array stays the caller's");
                    assert_eq!(RELEASED.load(Ordering::SeqCst), before);
                    (array.release.unwrap())(&mut array);
                    refused += 1;
                }
            }
            (schema.release.unwrap())(&mut schema);
        }
    }
    assert!(taken > tally_floor(300) && refused > tally_floor(300), "{taken} taken, {refused} refused");
}

#[test]
fn round_trips_keep_the_tensor() {
    let mut rng = Rng(3);
    for round in 0..rounds(200) {
        let (dtype, _) = DTYPES[round % DTYPES.len()];
        let x = random_tensor(&mut rng, dtype);
        let (mut schema, mut array) = to_arrow(&x).unwrap();
        unsafe {
            let y = from_arrow(&schema, &mut array).unwrap();
            (schema.release.unwrap())(&mut schema);
            assert_eq!(y.dims(), x.dims());
            assert_eq!(y.lod(), x.lod());
            assert_eq!(y.tensor().bytes().unwrap(), x.tensor().bytes().unwrap());
            if dtype != DType::Bool {
                assert!(y.tensor().numel() == 0 || y.tensor().as_ptr() == x.tensor().as_ptr(), "zero copy");
            }
        }
    }
}

// ---- refusals --------------------------------------------------------------------------------

/// Imports `spec` after `damage`, expecting a refusal with `code` whose message contains `words`,
/// and that nothing was taken.
fn refused(spec: Spec, damage: impl FnOnce(&mut ArrowSchema, &mut ArrowArray), code: &str, words: &str) {
    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    let (mut schema, mut array) = make(spec, &RELEASED);
    let (schema_release, array_release) = (schema.release, array.release);
    damage(&mut schema, &mut array);
    unsafe {
        let before = RELEASED.load(Ordering::SeqCst);
        let e: Error = from_arrow(&schema, &mut array).expect_err("refused");
        assert_eq!(kind(&e), code, "{e}");
        assert!(e.to_string().contains(words), "{e:?} does not say {words:?}");
        assert_eq!(RELEASED.load(Ordering::SeqCst), before, "nothing released");
        schema.release = schema_release;
        array.release = array_release;
        assert!(array.release.is_some());
        (schema.release.unwrap())(&mut schema);
        (array.release.unwrap())(&mut array);
    }
}

fn f32_values(n: usize) -> Spec {
    values_spec("f", bytes_of(&vec![1.5f32; n]), n as i64, 0)
}

fn a_list() -> Spec {
    list_spec(&[0, 1, 3], true, 0, f32_values(3))
}

#[test]
fn every_documented_refusal() {
    unsafe {
        let (schema, mut array) = make(a_list(), Box::leak(Box::new(AtomicUsize::new(0))));
        assert_eq!(from_arrow(std::ptr::null(), &mut array).err().map(|e| kind(&e)), Some("NullArgument"));
        assert_eq!(from_arrow(&schema, std::ptr::null_mut()).err().map(|e| kind(&e)), Some("NullArgument"));
        release(schema, array);
    }
    let none = |_: &mut ArrowSchema, _: &mut ArrowArray| {};
    refused(a_list(), |s, _| s.release = None, "InvalidArgument", "schema: has been released");
    refused(a_list(), |_, a| a.release = None, "InvalidArgument", "array: has been released");
    refused(a_list(), |s, _| s.format = std::ptr::null(), "NullArgument", "format is NULL");
    refused(a_list(), |s, _| s.n_children = 0, "InvalidArgument", "n_children is 0");
    refused(a_list(), |s, _| s.children = std::ptr::null_mut(), "NullArgument", "children is NULL");
    // A NULL child (the producer's release frees its children from its own list, not through
    // `children`).
    static mut NO_SCHEMA: *mut ArrowSchema = std::ptr::null_mut();
    static mut NO_ARRAY: *mut ArrowArray = std::ptr::null_mut();
    refused(a_list(), |s, _| s.children = &raw mut NO_SCHEMA, "NullArgument", "schema.children[0]: is NULL");
    refused(a_list(), |_, a| a.children = &raw mut NO_ARRAY, "NullArgument", "array: child 0 is NULL");
    refused(a_list(), |_, a| a.dictionary = a as *mut ArrowArray, "Unsupported", "array: has a dictionary");
    refused(a_list(), |_, a| a.n_buffers = 3, "InvalidArgument", "has 3 buffer(s)");
    refused(a_list(), |_, a| a.buffers = std::ptr::null_mut(), "NullArgument", "buffers is NULL");
    refused(
        a_list(),
        |_, a| unsafe { *a.buffers.add(1) = std::ptr::null() },
        "NullArgument",
        "array: buffers[1] is NULL",
    );
    refused(a_list(), |_, a| a.length = -1, "InvalidArgument", "length -1 is negative");
    refused(a_list(), |_, a| a.offset = -1, "InvalidArgument", "offset -1 is negative");
    refused(a_list(), |_, a| a.offset = i64::MAX, "InvalidArgument", "past any buffer");
    refused(a_list(), |_, a| a.null_count = -2, "InvalidArgument", "null_count -2");
    refused(a_list(), |_, a| a.null_count = 1, "InvalidArgument", "without a validity buffer");
    refused(a_list(), |_, a| unsafe { (**a.children).length = 2 }, "InvalidArgument", "length 2 is less than the 3");
    refused(list_spec(&[0, 2, 1], true, 0, f32_values(2)), none, "InvalidArgument", "must not decrease");
    refused(list_spec(&[-1, 1], true, 0, f32_values(2)), none, "InvalidArgument", "is negative");
    // A null, in a validity bitmap with null_count -1 (not counted).
    let mut with_null = f32_values(3);
    with_null.buffers[0] = Some(vec![0b101]);
    with_null.null_count = -1;
    refused(list_spec(&[0, 3], true, 0, with_null), none, "InvalidArgument", "entry 1 is null");
    // Formats.
    refused(values_spec("vu", vec![], 0, 0), none, "Unsupported", "format \"vu\" has no tensor form");
    refused(values_spec("I", vec![0; 4], 1, 0), none, "Unsupported", "format \"I\"");
    refused(
        Spec { format: "+s".into(), length: 1, offset: 0, null_count: 0, buffers: vec![None], child: None },
        none,
        "Unsupported",
        "lodtensor_from_arrow_record_batch",
    );
    refused(
        fixed_spec(2, 1, 0, f32_values(2)),
        |s, _| s.format = c"+w:x".as_ptr(),
        "InvalidArgument",
        "does not end in a size",
    );
    refused(
        a_list(),
        |s, a| {
            s.dictionary = s as *mut ArrowSchema;
            let _ = a;
        },
        "Unsupported",
        "dictionary",
    );
    refused(
        fixed_spec(1, 1, 0, list_spec(&[0, 1], true, 0, f32_values(1))),
        none,
        "Unsupported",
        "inside a fixed-size list",
    );
    // Binary and strings.
    let a_string = || bytes_spec("u", &[0, 2], b"ab", 0);
    refused(fixed_spec(1, 1, 0, a_string()), none, "Unsupported", "binary array inside a fixed-size list");
    refused(values_spec("w:x", vec![], 0, 0), none, "InvalidArgument", "fixed-size binary format \"w:x\"");
    refused(a_string(), |_, a| a.n_buffers = 2, "InvalidArgument", "has 2 buffer(s) and 0 child(ren); its type has 3");
    refused(
        a_string(),
        |_, a| unsafe { *a.buffers.add(2) = std::ptr::null() },
        "NullArgument",
        "array: buffers[2] is NULL",
    );
    refused(bytes_spec("Z", &[0, 2, 1], b"ab", 0), none, "InvalidArgument", "must not decrease");
    refused(
        bytes_spec("U", &[0, i64::MAX], b"", 0),
        none,
        "InvalidArgument",
        "offsets[1] = 9223372036854775807 is past any buffer",
    );
    refused(bytes_spec("z", &[0], b"", 0), none, "InvalidLod", "array: ");
    let huge_rows = |_: &mut ArrowSchema, a: &mut ArrowArray| a.length = 1 << 58;
    refused(values_spec("w:64", vec![0; 64], 1, 0), huge_rows, "OutOfMemory", "more than memory holds");
    let mut deep = f32_values(1);
    for _ in 0..9 {
        deep = fixed_spec(1, 1, 0, deep);
    }
    refused(deep, none, "Unsupported", "at most 9");
    let mut deeper = f32_values(1);
    for _ in 0..70 {
        deeper = list_spec(&[0, 1], true, 0, deeper);
    }
    refused(deeper, none, "Unsupported", "deeper than the 64");
    // The LoD: the top list needs an entry.
    refused(list_spec(&[0], true, 0, f32_values(0)), none, "InvalidLod", "array: ");
    // Misaligned elements.
    let mut misaligned = f32_values(2);
    misaligned.buffers[1] = Some(vec![0; 9]);
    refused(
        misaligned,
        |_, a| unsafe { *a.buffers.add(1) = (*a.buffers.add(1)).cast::<u8>().add(1).cast() },
        "InvalidArgument",
        "not aligned",
    );
    // A byte count that overflows.
    let huge = |_: &mut ArrowSchema, a: &mut ArrowArray| unsafe { (**a.children).length = i64::MAX };
    refused(fixed_spec(1 << 62, 4, 0, f32_values(0)), huge, "OutOfMemory", "more than memory holds");
    refused(fixed_spec(1 << 62, 1, 0, f32_values(0)), huge, "InvalidArgument", "past any buffer");
}

#[test]
fn bool_arrays_are_unpacked_and_released_at_once() {
    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    // Bits 1..10 of 0b1011_0110, 0b10: an offset of 1 within the byte.
    let spec = values_spec("b", vec![0b1011_0110, 0b10], 9, 1);
    let (mut schema, mut array) = make(spec, &RELEASED);
    unsafe {
        let x = from_arrow(&schema, &mut array).unwrap();
        assert_eq!(RELEASED.load(Ordering::SeqCst), 1, "copied, so released before the call returns");
        assert!(array.release.is_none());
        assert_eq!(x.tensor().bytes().unwrap(), [1, 1, 0, 1, 1, 0, 1, 0, 1]);
        (schema.release.unwrap())(&mut schema);
    }
}

/// A [3, 2] f32 tensor with a LoD over a buffer of its own, whose release counts in `freed`.
fn counted_tensor(freed: &'static AtomicUsize) -> LoDTensor {
    let data: &'static mut [f32] = Box::leak(vec![1.0f32; 6].into_boxed_slice());
    let release = Box::new(move || {
        freed.fetch_add(1, Ordering::SeqCst);
    });
    let dims = lodtensor::Dim::new(&[3, 2]).unwrap();
    let t = unsafe {
        Tensor::borrowed(lodtensor::place::Place::Cpu, DType::F32, dims, data.as_mut_ptr().cast(), 24, Some(release))
    };
    LoDTensor::new(t.unwrap(), Lod::from_offsets(vec![vec![0, 1, 3]]).unwrap()).unwrap()
}

#[test]
fn the_memory_goes_with_the_last_array_released() {
    static FREED: AtomicUsize = AtomicUsize::new(0);
    let (schema, array) = to_arrow(&counted_tensor(&FREED)).unwrap();
    assert_eq!(FREED.load(Ordering::SeqCst), 0, "the export holds the memory");
    unsafe { release(schema, array) };
    assert_eq!(FREED.load(Ordering::SeqCst), 1, "released with the array, children and all");

    // The elements' array moved out of its parent keeps the memory after the parent's release.
    let (mut schema, mut array) = to_arrow(&counted_tensor(&FREED)).unwrap();
    unsafe {
        let slot = *(**array.children).children;
        let mut elements = std::ptr::read(slot);
        (*slot).release = None;
        (array.release.unwrap())(&mut array);
        (schema.release.unwrap())(&mut schema);
        assert_eq!(FREED.load(Ordering::SeqCst), 1);
        (elements.release.unwrap())(&mut elements);
    }
    assert_eq!(FREED.load(Ordering::SeqCst), 2);
}

#[test]
fn the_device_export_of_a_host_tensor_is_the_host_export_on_the_cpu() {
    use lodtensor::interop::arrow::{to_arrow_device, DEVICE_CPU};
    let mut rng = Rng(13);
    for round in 0..rounds(50) {
        let (dtype, _) = DTYPES[round % DTYPES.len()];
        let x = random_tensor(&mut rng, dtype);
        let (schema, device) = to_arrow_device(&x).unwrap();
        assert_eq!((device.device_type, device.device_id), (DEVICE_CPU, -1));
        assert!(device.sync_event.is_null() && device.reserved == [0; 3]);
        unsafe {
            assert_eq!(read(&schema, &device.array), tensor_value(&x));
            release(schema, device.array);
        }
    }
}

/// A device array on the CPU around `array`.
fn on_cpu(array: ArrowArray) -> lodtensor::interop::arrow::ArrowDeviceArray {
    use lodtensor::interop::arrow::{ArrowDeviceArray, DEVICE_CPU};
    ArrowDeviceArray {
        array,
        device_id: 0,
        device_type: DEVICE_CPU,
        sync_event: std::ptr::null_mut(),
        reserved: [0; 3],
    }
}

#[test]
fn device_arrays_on_the_host_are_taken_as_arrays() {
    use lodtensor::interop::arrow::{from_arrow_device, to_arrow_device, DEVICE_CUDA, DEVICE_CUDA_HOST};
    let mut rng = Rng(17);
    for round in 0..rounds(50) {
        let (dtype, _) = DTYPES[round % DTYPES.len()];
        let x = random_tensor(&mut rng, dtype);
        let (mut schema, mut device) = to_arrow_device(&x).unwrap();
        if round % 2 == 1 {
            device.device_type = DEVICE_CUDA_HOST; // page-locked host memory reads as the host's
        }
        let y = unsafe { from_arrow_device(&schema, &mut device) }.unwrap();
        assert!(device.array.release.is_none(), "moved out");
        unsafe { (schema.release.unwrap())(&mut schema) };
        assert_eq!((y.dims(), y.lod()), (x.dims(), x.lod()));
        assert_eq!(y.tensor().bytes().unwrap(), x.tensor().bytes().unwrap());
    }

    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    let refused = |change: &dyn Fn(&mut lodtensor::interop::arrow::ArrowDeviceArray), code: &str, words: &str| {
        let (mut schema, array) = make(a_list(), &RELEASED);
        let mut device = on_cpu(array);
        let release = device.array.release;
        change(&mut device);
        let before = RELEASED.load(Ordering::SeqCst);
        let e = unsafe { from_arrow_device(&schema, &mut device) }.expect_err("refused");
        assert_eq!(kind(&e), code, "{e}");
        assert!(e.to_string().contains(words), "{e} does not say {words:?}");
        assert_eq!(RELEASED.load(Ordering::SeqCst), before);
        device.array.release = release;
        unsafe {
            (device.array.release.unwrap())(&mut device.array);
            (schema.release.unwrap())(&mut schema);
        }
    };
    let mut event = 0usize;
    let event_ptr = (&raw mut event).cast::<c_void>();
    refused(&|d| d.device_type = 7, "Unsupported", "array.device_type: 7");
    refused(&move |d| d.sync_event = event_ptr, "Unsupported", "the CPU has no events");
    refused(&|d| (d.device_type, d.device_id) = (DEVICE_CUDA, i64::MAX), "InvalidArgument", "array.device_id");
    refused(
        &move |d| (d.device_type, d.device_id, d.sync_event) = (DEVICE_CUDA_HOST, -1, event_ptr),
        "InvalidArgument",
        "names no device",
    );
    refused(&|d| d.array.release = None, "InvalidArgument", "array.array: has been released");
    refused(&|d| d.array.length = -1, "InvalidArgument", "array.array: length -1");
    if lodtensor::cuda_device_count().is_err() {
        refused(&|d| d.device_type = DEVICE_CUDA, "Unsupported", "cuda:0");
    }
    let (schema, array) = to_arrow_device(&LoDTensor::from_slice(&[1i32], &[1], vec![]).unwrap()).unwrap();
    assert_eq!(kind(&unsafe { from_arrow_device(&schema, std::ptr::null_mut()) }.unwrap_err()), "NullArgument");
    unsafe { release(schema, array.array) };
}

// ---- record batches --------------------------------------------------------------------------

use lodtensor::interop::arrow::{from_arrow_record_batch, to_arrow_record_batch, Column, Encoding::Values};

/// Up to three random columns of `entries` entries each, of random dtypes and LoD levels.
fn random_columns(rng: &mut Rng, entries: usize) -> Vec<LoDTensor> {
    (0..1 + rng.below(3))
        .map(|_| {
            let (dtype, _) = DTYPES[rng.below(DTYPES.len())];
            let levels = if entries == 0 { 0 } else { rng.below(3) };
            random_column(rng, dtype, levels, entries)
        })
        .collect()
}

#[test]
fn record_batches_lend_each_column_as_its_own_export() {
    let mut rng = Rng(19);
    for round in 0..rounds(200) {
        let entries = rng.below(5) + usize::from(round % 2 == 0);
        let columns = random_columns(&mut rng, entries);
        let names: Vec<String> = (0..columns.len()).map(|i| format!("col{i}")).collect();
        let named: Vec<Column> = columns.iter().zip(&names).map(|(c, n)| (c, n.as_str(), Values)).collect();
        let (schema, array) = to_arrow_record_batch(&named).unwrap();
        unsafe {
            assert_eq!(CStr::from_ptr(schema.format).to_str().unwrap(), "+s");
            assert_eq!(CStr::from_ptr(schema.name).to_str().unwrap(), "");
            assert_eq!((schema.n_children, array.n_children), (columns.len() as i64, columns.len() as i64));
            assert_eq!((array.length, array.offset, array.null_count, array.n_buffers), (entries as i64, 0, 0, 1));
            assert!((*array.buffers).is_null(), "no validity buffer");
            for (i, x) in columns.iter().enumerate() {
                let (s, a) = column(&schema, &array, i);
                assert_eq!(CStr::from_ptr(s.name).to_str().unwrap(), names[i]);
                let (alone, alone_array) = to_arrow(x).unwrap();
                assert_eq!(formats(s), formats(&alone), "round {round}, column {i}");
                assert_eq!(a.length, entries as i64);
                assert_eq!(read(s, a), tensor_value(x), "round {round}, column {i}");
                release(alone, alone_array);
            }
            release(schema, array);
        }
    }
}

#[test]
fn record_batches_round_trip_zero_copy() {
    let mut rng = Rng(23);
    for _ in 0..rounds(200) {
        let entries = 1 + rng.below(4);
        let columns = random_columns(&mut rng, entries);
        let named: Vec<Column> = columns.iter().map(|c| (c, "x", Values)).collect();
        let (mut schema, mut array) = to_arrow_record_batch(&named).unwrap();
        unsafe {
            let back = from_arrow_record_batch(&schema, &mut array).unwrap();
            assert!(array.release.is_none(), "moved out");
            (schema.release.unwrap())(&mut schema);
            assert_eq!(back.len(), columns.len());
            for (x, y) in columns.iter().zip(&back) {
                assert_eq!((y.dims(), y.lod()), (x.dims(), x.lod()));
                assert_eq!(y.tensor().bytes().unwrap(), x.tensor().bytes().unwrap());
                if x.tensor().dtype() != DType::Bool && x.tensor().numel() > 0 {
                    assert_eq!(y.tensor().as_ptr(), x.tensor().as_ptr(), "zero copy");
                }
            }
        }
    }
}

#[test]
fn a_sliced_record_batch_is_taken_as_its_rows_and_released_by_the_last_column() {
    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    let mut rng = Rng(29);
    for round in 0..rounds(300) {
        // Rows [offset, offset + length) of the struct; each column an array with its own offset
        // and room after the rows.
        let (offset, length) = (rng.below(3), rng.below(4) + usize::from(round % 3 != 0));
        let columns: Vec<Spec> = (0..1 + rng.below(3))
            .map(|_| {
                let (_, format) = DTYPES[rng.below(DTYPES.len())];
                let levels = if length == 0 { 0 } else { rng.below(3) };
                let fixed: Vec<usize> = (0..rng.below(2)).map(|_| 1 + rng.below(3)).collect();
                let spare = rng.below(2);
                random_spec(&mut rng, format, levels, &fixed, offset + length + spare)
            })
            .collect();
        let n = columns.len();
        let (mut schema, mut array) = make_batch(columns, length as i64, offset as i64, None, &RELEASED);
        unsafe {
            let expected: Vec<Vec<Value>> = (0..n)
                .map(|i| {
                    let (s, a) = column(&schema, &array, i);
                    read_range(s, a, offset, length)
                })
                .collect();
            let before = RELEASED.load(Ordering::SeqCst);
            let mut taken =
                from_arrow_record_batch(&schema, &mut array).unwrap_or_else(|e| panic!("round {round}: {e}"));
            assert!(array.release.is_none());
            (schema.release.unwrap())(&mut schema);
            assert_eq!(taken.len(), n);
            for (i, x) in taken.iter().enumerate() {
                assert_eq!(tensor_value(x), expected[i], "round {round}, column {i}");
            }
            // Released once, with the last column that holds memory (at once if none does).
            let holding = taken.iter().filter(|x| x.tensor().dtype() != DType::Bool).count();
            while taken.len() > 1 {
                drop(taken.remove(0));
            }
            let left = usize::from(holding > 0 && taken[0].tensor().dtype() != DType::Bool);
            assert_eq!(RELEASED.load(Ordering::SeqCst), before + 1 - left, "round {round}");
            drop(taken);
            assert_eq!(RELEASED.load(Ordering::SeqCst), before + 1, "round {round}");
        }
    }
}

/// Imports the record batch of `columns` (a struct of 2 rows) after `damage`, expecting a
/// refusal with `code` whose message contains `words`, and that nothing was taken or released.
fn batch_refused(columns: Vec<Spec>, damage: impl FnOnce(&mut ArrowSchema, &mut ArrowArray), code: &str, words: &str) {
    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    let (mut schema, mut array) = make_batch(columns, 2, 0, None, &RELEASED);
    let (saved_schema, saved_array) = unsafe { (std::ptr::read(&schema), std::ptr::read(&array)) };
    damage(&mut schema, &mut array);
    let releasable = array.release.is_some();
    unsafe {
        let before = RELEASED.load(Ordering::SeqCst);
        let e = from_arrow_record_batch(&schema, &mut array).expect_err("refused");
        assert_eq!(kind(&e), code, "{e}");
        assert!(e.to_string().contains(words), "{e} does not say {words:?}");
        assert_eq!(RELEASED.load(Ordering::SeqCst), before, "nothing released");
        assert_eq!(array.release.is_some(), releasable, "the array stays the caller's");
        let (mut schema, mut array) = (saved_schema, saved_array);
        (schema.release.unwrap())(&mut schema);
        (array.release.unwrap())(&mut array);
    }
}

/// Two f32 rows, then a list of two int32 entries, then two int64 rows: a batch of 2 rows.
fn two_row_columns() -> Vec<Spec> {
    vec![
        f32_values(2),
        list_spec(&[0, 1, 3], true, 0, values_spec("i", bytes_of(&[1i32, 2, 3]), 3, 0)),
        values_spec("l", bytes_of(&[7i64, 8]), 2, 0),
    ]
}

#[test]
fn every_documented_refusal_of_a_record_batch() {
    unsafe {
        let (schema, mut array) = make_batch(two_row_columns(), 2, 0, None, Box::leak(Box::new(AtomicUsize::new(0))));
        let code = |r: lodtensor::Result<Vec<LoDTensor>>| r.err().map(|e| kind(&e));
        assert_eq!(code(from_arrow_record_batch(std::ptr::null(), &mut array)), Some("NullArgument"));
        assert_eq!(code(from_arrow_record_batch(&schema, std::ptr::null_mut())), Some("NullArgument"));
        release(schema, array);
    }
    let none = |_: &mut ArrowSchema, _: &mut ArrowArray| {};
    static mut NO_SCHEMA: [*mut ArrowSchema; 3] = [std::ptr::null_mut(); 3];
    static mut NO_ARRAY: [*mut ArrowArray; 3] = [std::ptr::null_mut(); 3];
    batch_refused(two_row_columns(), |s, _| s.release = None, "InvalidArgument", "schema: has been released");
    batch_refused(two_row_columns(), |_, a| a.release = None, "InvalidArgument", "array: has been released");
    batch_refused(two_row_columns(), |s, _| s.format = c"+L".as_ptr(), "InvalidArgument", "is not a struct (+s)");
    batch_refused(two_row_columns(), |s, _| s.format = std::ptr::null(), "NullArgument", "schema: format is NULL");
    batch_refused(two_row_columns(), |s, _| s.n_children = 0, "InvalidArgument", "a struct of no columns");
    batch_refused(two_row_columns(), |s, _| s.n_children = -1, "InvalidArgument", "n_children -1");
    batch_refused(
        two_row_columns(),
        |s, _| s.children = std::ptr::null_mut(),
        "NullArgument",
        "schema: children is NULL",
    );
    batch_refused(
        two_row_columns(),
        |s, _| s.children = (&raw mut NO_SCHEMA).cast(),
        "NullArgument",
        "schema.children[0]: is NULL",
    );
    batch_refused(
        two_row_columns(),
        |s, _| s.dictionary = s as *mut ArrowSchema,
        "Unsupported",
        "schema: is dictionary-encoded",
    );
    batch_refused(
        two_row_columns(),
        |_, a| a.n_children = 2,
        "InvalidArgument",
        "array: has 1 buffer(s) and 2 child(ren)",
    );
    batch_refused(two_row_columns(), |_, a| a.n_buffers = 0, "InvalidArgument", "its type has 1 and 3");
    batch_refused(
        two_row_columns(),
        |_, a| a.children = std::ptr::null_mut(),
        "NullArgument",
        "array: children is NULL",
    );
    batch_refused(
        two_row_columns(),
        |_, a| a.children = (&raw mut NO_ARRAY).cast(),
        "NullArgument",
        "array: child 0 is NULL",
    );
    batch_refused(two_row_columns(), |_, a| a.length = -1, "InvalidArgument", "array: length -1 is negative");
    batch_refused(two_row_columns(), |_, a| a.offset = i64::MAX, "InvalidArgument", "past any buffer");
    batch_refused(
        two_row_columns(),
        |_, a| a.length = 3,
        "InvalidArgument",
        "array.children[0]: length 2 is less than the 3 rows",
    );
    batch_refused(
        two_row_columns(),
        |_, a| a.offset = 1,
        "InvalidArgument",
        "array.children[0]: length 2 is less than the 3",
    );
    // A null row: the struct's validity has bit 1 clear.
    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    let (schema, mut array) = make_batch(two_row_columns(), 2, 0, Some((vec![0b01], 1)), &RELEASED);
    unsafe {
        let e = from_arrow_record_batch(&schema, &mut array).expect_err("a null row");
        assert!(matches!(&e, Error::InvalidArgument(m) if m.contains("array: entry 1 is null")), "{e}");
        assert!(array.release.is_some());
        release(schema, array);
    }
    // A column's own refusals name it, and the columns before it, already read, are not taken.
    let mut bad = two_row_columns();
    bad[2] = values_spec("vu", vec![], 2, 0);
    batch_refused(bad, none, "Unsupported", "schema.children[2]: format \"vu\"");
    let mut bad = two_row_columns();
    bad[2].null_count = 1;
    batch_refused(bad, none, "InvalidArgument", "array.children[2]: null_count is 1 without a validity buffer");
    let mut bad = two_row_columns();
    bad[2].buffers[1] = Some(vec![0; 17]);
    batch_refused(
        bad,
        |_, a| unsafe {
            let values = &mut **a.children.add(2);
            *values.buffers.add(1) = (*values.buffers.add(1)).cast::<u8>().add(1).cast();
        },
        "InvalidArgument",
        "array.children[2]: data: address",
    );
    let mut bad = two_row_columns();
    bad[1] = list_spec(&[0, 2, 1], true, 0, f32_values(2));
    batch_refused(bad, none, "InvalidArgument", "array.children[1]: offsets[2] = 1");
}

#[test]
fn a_record_batch_of_bool_columns_is_released_at_once() {
    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    let columns = vec![values_spec("b", vec![0b110], 3, 0), values_spec("b", vec![0b011], 3, 0)];
    let (mut schema, mut array) = make_batch(columns, 2, 1, None, &RELEASED);
    unsafe {
        let taken = from_arrow_record_batch(&schema, &mut array).unwrap();
        assert_eq!(RELEASED.load(Ordering::SeqCst), 1, "copies, so released before the call returns");
        assert_eq!(taken[0].tensor().bytes().unwrap(), [1, 1]);
        assert_eq!(taken[1].tensor().bytes().unwrap(), [1, 0]);
        (schema.release.unwrap())(&mut schema);
    }
}

#[test]
fn every_documented_refusal_of_a_record_batch_export() {
    let code = |columns: &[Column]| match to_arrow_record_batch(columns) {
        Ok(_) => panic!("refused"),
        Err(e) => (kind(&e), e.to_string()),
    };
    let three = LoDTensor::from_slice(&[1.0f32, 2.0, 3.0], &[3], vec![]).unwrap();
    let two_sequences = LoDTensor::from_slice(&[1i64, 2, 3], &[3], vec![vec![0, 1, 3]]).unwrap();
    let (k, m) = code(&[]);
    assert!(k == "InvalidArgument" && m.contains("num_columns: 0"), "{m}");
    let (k, m) = code(&[(&three, "a", Values), (&two_sequences, "b", Values)]);
    assert!(k == "InvalidArgument" && m.contains("columns[1]: 2 entries, columns[0] 3"), "{m}");
    let scalar = LoDTensor::dense(Tensor::zeros(DType::F32, lodtensor::Dim::new(&[]).unwrap()).unwrap());
    let (k, m) = code(&[(&three, "a", Values), (&scalar, "b", Values)]);
    assert!(k == "InvalidArgument" && m.contains("columns[1]: a 0-d tensor"), "{m}");
    let (k, m) = code(&[(&three, "a\0b", Values)]);
    assert!(k == "InvalidArgument" && m.contains("names[0]: holds a NUL"), "{m}");

    // A column refused after the one before it was exported: that export is given back.
    static FREED: AtomicUsize = AtomicUsize::new(0);
    let counted = counted_tensor(&FREED);
    let bf = LoDTensor::new(
        Tensor::zeros(DType::BF16, lodtensor::Dim::new(&[3]).unwrap()).unwrap(),
        Lod::from_offsets(vec![vec![0, 1, 3]]).unwrap(),
    )
    .unwrap();
    let (k, m) = code(&[(&counted, "a", Values), (&bf, "b", Values)]);
    assert!(k == "Unsupported" && m.contains("columns[1]: bfloat16"), "{m}");
    drop(counted);
    assert_eq!(FREED.load(Ordering::SeqCst), 1, "the first column's export was released");
}

/// Record batches with a text column among others: the text lent as `large_utf8` or
/// `large_binary` under its outer levels' lists (its offsets and bytes in place, read back as the
/// tensor), the other columns as values, and the whole taken back; broken UTF-8 refused, naming the
/// column, nothing kept; a text form for a column that is no text refused.
#[test]
fn record_batches_hold_text_columns() {
    use lodtensor::interop::arrow::Encoding::{Binary, Utf8};
    let mut rng = Rng(41);
    let (mut lent, mut refused) = (0, 0);
    for round in 0..rounds(300) {
        let outer = rng.below(3);
        let text = random_text(&mut rng, outer, round % 3 == 2);
        let encoding = if round % 4 == 3 { Binary } else { Utf8 };
        let entries = text.lod().levels()[0].len() - 1;
        let others = random_columns(&mut rng, entries);
        let at = rng.below(others.len() + 1);
        let mut named: Vec<Column> = others.iter().map(|c| (c, "x", Values)).collect();
        named.insert(at, (&text, "text", encoding));
        let broken = first_broken_string(&text).filter(|_| encoding == Utf8);
        let arg = format!("columns[{at}]");
        let Some((mut schema, mut array)) =
            lent_unless_broken(to_arrow_record_batch(&named), broken, &arg, outer, round)
        else {
            refused += 1;
            continue;
        };
        unsafe {
            for (i, &(x, _, e)) in named.iter().enumerate() {
                let (s, a) = column(&schema, &array, i);
                assert_eq!(read(s, a), tensor_value(x), "round {round}, column {i}");
                if e != Values {
                    let mut want = vec!["+L".to_owned(); outer];
                    want.push(if e == Utf8 { "U" } else { "Z" }.to_owned());
                    assert_eq!(formats(s), want);
                    let mut strings = a;
                    for _ in 0..outer {
                        strings = &**strings.children;
                    }
                    assert_eq!(*strings.buffers.add(1), x.lod().levels()[outer].as_ptr().cast(), "the LoD's offsets");
                    assert_eq!(*strings.buffers.add(2), x.tensor().as_ptr().cast(), "zero copy");
                }
            }
            let back = from_arrow_record_batch(&schema, &mut array).unwrap();
            (schema.release.unwrap())(&mut schema);
            for (&(x, _, _), y) in named.iter().zip(&back) {
                assert_eq!((y.dims(), y.lod()), (x.dims(), x.lod()));
                assert_eq!(y.tensor().bytes().unwrap(), x.tensor().bytes().unwrap());
            }
        }
        lent += 1;
    }
    assert!(lent > tally_floor(150) && refused > tally_floor(30), "{lent} lent, {refused} refused");

    // Broken text after another column: refused, nothing of either kept.
    static FREED: AtomicUsize = AtomicUsize::new(0);
    let counted = counted_tensor(&FREED);
    let split = LoDTensor::from_slice("ü".as_bytes(), &[2], vec![vec![0, 1, 2]]).unwrap();
    let e = to_arrow_record_batch(&[(&counted, "a", Values), (&split, "b", Utf8)]).err().unwrap();
    let want = "columns[1]: sequence 0 of LoD level 0 (bytes 0..1) is not UTF-8 at byte 0";
    assert!(matches!(&e, Error::InvalidArgument(m) if m == want), "{e}");
    drop(counted);
    assert_eq!(FREED.load(Ordering::SeqCst), 1, "nothing of the first column kept");
    let floats = LoDTensor::from_slice(&[1.0f32, 2.0], &[2], vec![vec![0, 1, 2]]).unwrap();
    let e = to_arrow_record_batch(&[(&split, "a", Binary), (&floats, "b", Utf8)]).err().unwrap();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("columns[1]: float32; strings are uint8 bytes")),
        "{e}"
    );
}

#[test]
fn record_batches_through_the_device_interface_on_the_host() {
    use lodtensor::interop::arrow::{from_arrow_device_record_batch, to_arrow_device_record_batch, DEVICE_CPU};
    let mut rng = Rng(31);
    for _ in 0..rounds(50) {
        let entries = 1 + rng.below(4);
        let columns = random_columns(&mut rng, entries);
        let named: Vec<Column> = columns.iter().map(|c| (c, "x", Values)).collect();
        let (mut schema, mut device) = to_arrow_device_record_batch(&named).unwrap();
        assert_eq!((device.device_type, device.device_id), (DEVICE_CPU, -1));
        assert!(device.sync_event.is_null() && device.reserved == [0; 3]);
        unsafe {
            for (i, x) in columns.iter().enumerate() {
                let (s, a) = column(&schema, &device.array, i);
                assert_eq!(read(s, a), tensor_value(x));
            }
            let back = from_arrow_device_record_batch(&schema, &mut device).unwrap();
            assert!(device.array.release.is_none(), "moved out");
            (schema.release.unwrap())(&mut schema);
            for (x, y) in columns.iter().zip(&back) {
                assert_eq!((y.dims(), y.lod()), (x.dims(), x.lod()));
                assert_eq!(y.tensor().bytes().unwrap(), x.tensor().bytes().unwrap());
            }
        }
    }
    let x = LoDTensor::from_slice(&[1i32], &[1], vec![]).unwrap();
    let (schema, mut device) = to_arrow_device_record_batch(&[(&x, "x", Values)]).unwrap();
    device.device_type = 7;
    let e = unsafe { from_arrow_device_record_batch(&schema, &mut device) }.unwrap_err();
    assert!(matches!(&e, Error::Unsupported(m) if m.contains("array.device_type: 7")), "{e}");
    assert!(device.array.release.is_some(), "refused, left alone");
    unsafe { release(schema, device.array) };
}

#[test]
fn damaged_record_batches_are_refused_whole_or_taken_as_they_read() {
    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    let mut rng = Rng(37);
    let (mut taken, mut refused) = (0, 0);
    for round in 0..rounds(1500) {
        let (columns, struct_length, struct_offset) = damaged_batch(&mut rng);
        let (mut schema, mut array) = make_batch(columns.clone(), struct_length, struct_offset, None, &RELEASED);
        unsafe {
            let before = RELEASED.load(Ordering::SeqCst);
            match from_arrow_record_batch(&schema, &mut array) {
                Ok(got) => {
                    // Accepted, so valid: a second copy reads the same (nulls would fail it).
                    let (mut schema2, mut again) = make_batch(columns, struct_length, struct_offset, None, &RELEASED);
                    for (i, x) in got.iter().enumerate() {
                        let (s, a) = column(&schema2, &again, i);
                        let want = read_range(s, a, struct_offset as usize, struct_length as usize);
                        assert_eq!(tensor_value(x), want, "round {round}, column {i}");
                    }
                    (schema2.release.unwrap())(&mut schema2);
                    (again.release.unwrap())(&mut again);
                    drop(got);
                    assert_eq!(RELEASED.load(Ordering::SeqCst), before + 2, "round {round}");
                    taken += 1;
                }
                Err(_) => {
                    assert!(array.release.is_some(), "round {round}: a refused batch stays the caller's");
                    assert_eq!(RELEASED.load(Ordering::SeqCst), before, "round {round}");
                    (array.release.unwrap())(&mut array);
                    refused += 1;
                }
            }
            (schema.release.unwrap())(&mut schema);
        }
    }
    assert!(taken > tally_floor(150) && refused > tally_floor(150), "{taken} taken, {refused} refused");
}

#[test]
fn the_columns_of_a_record_batch_may_go_on_other_threads() {
    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    for round in 0..rounds(200) {
        let columns = vec![f32_values(64), values_spec("l", bytes_of(&[5i64; 64]), 64, 0), f32_values(64)];
        let (mut schema, mut array) = make_batch(columns, 64, 0, None, &RELEASED);
        let before = RELEASED.load(Ordering::SeqCst);
        let taken = unsafe { from_arrow_record_batch(&schema, &mut array) }.unwrap();
        unsafe { (schema.release.unwrap())(&mut schema) };
        let barrier = std::sync::Barrier::new(taken.len());
        std::thread::scope(|s| {
            for x in taken {
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    drop(x);
                });
            }
        });
        assert_eq!(RELEASED.load(Ordering::SeqCst), before + 1, "round {round}: released once");
    }
}
