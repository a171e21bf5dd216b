//! Paddle's tensor file format (§1.10 of the semantics spec): the spec's worked example byte for
//! byte, records of random tensors against a reference writer kept here, reading back, the
//! forms of TensorDesc a protobuf writer may produce, and every documented error.

mod common;

use common::{nested_lengths, Rng};
use lodtensor::{
    deserialize, deserialize_slice, serialize, serialized_size, DType, Dim, Error, LoDTensor, Lod, Tensor,
};
use proptest::prelude::*;

/// The spec's worked example: float32 [5, 1] with LoD [[0, 2, 5]], elements 1.5, -2, 3, 0.25, 8.
fn example() -> (LoDTensor, Vec<u8>) {
    let values = [1.5f32, -2.0, 3.0, 0.25, 8.0];
    let x =
        LoDTensor::new(Tensor::from_slice(&values, &[5, 1]).unwrap(), Lod::from_offsets(vec![vec![0, 2, 5]]).unwrap())
            .unwrap();
    let mut bytes = vec![0, 0, 0, 0]; // LoDTensor version 0
    bytes.extend([1, 0, 0, 0, 0, 0, 0, 0]); // 1 LoD level
    bytes.extend([0x18, 0, 0, 0, 0, 0, 0, 0]); // of 24 bytes
    for offset in [0u8, 2, 5] {
        bytes.extend([offset, 0, 0, 0, 0, 0, 0, 0]);
    }
    bytes.extend([0, 0, 0, 0]); // tensor version 0
    bytes.extend([6, 0, 0, 0]); // a desc of 6 bytes
    bytes.extend([0x08, 0x05, 0x10, 0x05, 0x10, 0x01]); // data_type FP32, dims 5, 1
    for v in values {
        bytes.extend(v.to_le_bytes());
    }
    (x, bytes)
}

/// The record's parts in the order of the format, for the tests that change one of them.
struct Parts {
    version: u32,
    levels: Vec<Vec<u8>>, // each level's byte size field and offsets, as written
    num_levels: u64,
    tensor_version: u32,
    desc_size: i32,
    desc: Vec<u8>,
    data: Vec<u8>,
}

impl Parts {
    /// The parts of a record of float32 [rows, 1] (all zeros) with one LoD level `offsets`.
    fn new(rows: usize, offsets: &[u64]) -> Parts {
        let mut level = (8 * offsets.len() as u64).to_le_bytes().to_vec();
        offsets.iter().for_each(|o| level.extend(o.to_le_bytes()));
        let desc = vec![0x08, 0x05, 0x10, rows as u8, 0x10, 0x01];
        Parts {
            version: 0,
            levels: vec![level],
            num_levels: 1,
            tensor_version: 0,
            desc_size: desc.len() as i32,
            desc,
            data: vec![0; rows * 4],
        }
    }

    fn with_desc(mut self, desc: &[u8]) -> Parts {
        self.desc = desc.to_vec();
        self.desc_size = desc.len() as i32;
        self
    }

    fn bytes(&self) -> Vec<u8> {
        let mut b = self.version.to_le_bytes().to_vec();
        b.extend(self.num_levels.to_le_bytes());
        self.levels.iter().for_each(|l| b.extend(l));
        b.extend(self.tensor_version.to_le_bytes());
        b.extend(self.desc_size.to_le_bytes());
        b.extend(&self.desc);
        b.extend(&self.data);
        b
    }
}

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let low = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(low);
            return out;
        }
        out.push(low | 0x80);
    }
}

/// A record written from the spec's layout alone, independently of the library's writer.
fn reference_record(dtype_number: u64, dims: &[usize], lod: &[Vec<usize>], data: &[u8]) -> Vec<u8> {
    let mut b = 0u32.to_le_bytes().to_vec();
    b.extend((lod.len() as u64).to_le_bytes());
    for level in lod {
        b.extend((level.len() as u64 * 8).to_le_bytes());
        level.iter().for_each(|&o| b.extend((o as u64).to_le_bytes()));
    }
    b.extend(0u32.to_le_bytes());
    let mut desc = vec![0x08];
    desc.extend(varint(dtype_number));
    for &d in dims {
        desc.push(0x10);
        desc.extend(varint(d as u64));
    }
    b.extend((desc.len() as i32).to_le_bytes());
    b.extend(desc);
    b.extend(data);
    b
}

/// The spec's table of `VarType.Type` numbers.
fn spec_number(dtype: DType) -> u64 {
    match dtype {
        DType::Bool => 0,
        DType::I16 => 1,
        DType::I32 => 2,
        DType::I64 => 3,
        DType::F16 => 4,
        DType::F32 => 5,
        DType::F64 => 6,
        DType::U8 => 20,
        DType::I8 => 21,
        DType::BF16 => 22,
    }
}

fn same(a: &LoDTensor, b: &LoDTensor) -> bool {
    a.tensor().dtype() == b.tensor().dtype()
        && a.dims() == b.dims()
        && a.lod().levels() == b.lod().levels()
        && a.tensor().bytes().unwrap() == b.tensor().bytes().unwrap()
}

/// The error of reading `bytes`, which must fail.
fn error_of(bytes: &[u8]) -> Error {
    match deserialize(bytes) {
        Ok((x, n)) => panic!("read a {:?} tensor of {n} bytes from a bad record", x.dims().as_slice()),
        Err(e) => e,
    }
}

fn assert_error(e: Error, kind: fn(String) -> Error, words: &[&str]) {
    let text = e.to_string();
    assert_eq!(std::mem::discriminant(&e), std::mem::discriminant(&kind(String::new())), "{text}");
    assert!(text.starts_with("buf: "), "{text}");
    for w in words {
        assert!(text.contains(w), "{text:?} does not say {w:?}");
    }
}

#[test]
fn the_spec_example_is_written_byte_for_byte() {
    let (x, bytes) = example();
    assert_eq!(serialize(&x).unwrap(), bytes);
    assert_eq!(serialized_size(&x), bytes.len());
}

#[test]
fn the_spec_example_reads_back() {
    let (x, bytes) = example();
    let (y, consumed) = deserialize(&bytes).unwrap();
    assert_eq!(consumed, bytes.len());
    assert!(same(&x, &y));
    assert_eq!(y.tensor().as_slice::<f32>().unwrap(), &[1.5, -2.0, 3.0, 0.25, 8.0]);
}

#[test]
fn a_save_combine_file_reads_record_by_record() {
    let (x, first) = example();
    let plain = LoDTensor::dense(Tensor::from_slice(&[7i64, -1, 9], &[3]).unwrap());
    let mut file = first.clone();
    file.extend(serialize(&plain).unwrap());
    let (a, n) = deserialize(&file).unwrap();
    assert_eq!(n, first.len());
    assert!(same(&a, &x));
    let (b, m) = deserialize(&file[n..]).unwrap();
    assert_eq!(n + m, file.len());
    assert!(same(&b, &plain));
    assert_eq!(b.lod().num_levels(), 0);
}

#[test]
fn a_0_d_tensor_has_no_dims_entries() {
    let x = LoDTensor::dense(Tensor::from_slice(&[2.5f64], &[]).unwrap());
    let want = reference_record(6, &[], &[], &2.5f64.to_le_bytes());
    assert_eq!(serialize(&x).unwrap(), want);
    assert_eq!(&want[12..20], &[0, 0, 0, 0, 2, 0, 0, 0], "tensor version, then a desc of 2 bytes");
    let (y, _) = deserialize(&want).unwrap();
    assert_eq!(y.dims().ndim(), 0);
    assert!(same(&x, &y));
}

#[test]
fn large_sizes_are_multi_byte_varints() {
    // 300 rows: a dim of two varint bytes (0xac 0x02).
    let x = LoDTensor::dense(Tensor::zeros(DType::U8, Dim::new(&[300, 1]).unwrap()).unwrap());
    let bytes = serialize(&x).unwrap();
    assert_eq!(&bytes[20..27], &[0x08, 20, 0x10, 0xac, 0x02, 0x10, 0x01]);
    assert!(same(&deserialize(&bytes).unwrap().0, &x));
}

#[test]
fn packed_dims_and_unknown_fields_are_read() {
    // Dims packed (field 2, wire type 2), and fields 3-6 of every wire type a reader skips.
    let desc = [
        0x08, 0x05, // data_type FP32
        0x18, 0x96, 0x01, // field 3, varint 150
        0x12, 0x02, 0x03, 0x01, // dims packed: 3, 1
        0x22, 0x03, 0xaa, 0xbb, 0xcc, // field 4, 3 bytes
        0x2d, 1, 2, 3, 4, // field 5, fixed32
        0x31, 1, 2, 3, 4, 5, 6, 7, 8, // field 6, fixed64
    ];
    let mut parts = Parts::new(3, &[0, 1, 3]).with_desc(&desc);
    parts.data = [1.0f32, 2.0, 3.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let (y, n) = deserialize(&parts.bytes()).unwrap();
    assert_eq!(n, parts.bytes().len());
    assert_eq!(y.dims().as_slice(), &[3, 1]);
    assert_eq!(y.lod().levels(), &[vec![0, 1, 3]]);
    assert_eq!(y.tensor().as_slice::<f32>().unwrap(), &[1.0, 2.0, 3.0]);
}

#[test]
fn bytes_after_the_record_are_left_alone() {
    let (x, mut bytes) = example();
    let len = bytes.len();
    bytes.extend([0xde, 0xad]);
    let (y, n) = deserialize(&bytes).unwrap();
    assert_eq!(n, len);
    assert!(same(&x, &y));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(common::rounds(64) as u32))]

    /// Every dtype, 1-3 dims (zero-sized ones included) and LoDs of 1-4 levels with empty
    /// sequences: the record is the reference writer's, and reads back to the same tensor.
    #[test]
    fn random_tensors_match_the_reference_and_read_back(lengths in nested_lengths(6, 3), seed in any::<u64>()) {
        let mut rng = Rng(seed | 1);
        let dtype = DType::ALL[rng.below(DType::ALL.len())];
        let lod = if rng.below(4) == 0 { Lod::empty() } else { Lod::from_lengths(&lengths).unwrap() };
        let rows = lod.rows().unwrap_or(rng.below(5));
        let mut dims = vec![rows];
        dims.extend((0..rng.below(3)).map(|_| rng.below(4)));
        let dim = Dim::new(&dims).unwrap();
        let data: Vec<u8> = (0..dim.numel() * dtype.size()).map(|_| rng.next() as u8).collect();
        let x = LoDTensor::new(Tensor::from_bytes(dtype, dim, &data).unwrap(), lod.clone()).unwrap();
        let bytes = serialize(&x).unwrap();
        prop_assert_eq!(&bytes, &reference_record(spec_number(dtype), &dims, lod.levels(), &data));
        prop_assert_eq!(serialized_size(&x), bytes.len());
        let (y, n) = deserialize(&bytes).unwrap();
        prop_assert_eq!(n, bytes.len());
        prop_assert!(same(&x, &y));
    }

    /// Bytes of a valid record changed at random places, or cut short, read as a tensor or as an
    /// error, never a panic (whole or a slice of it); a tensor read is always a valid one.
    #[test]
    fn damaged_records_never_panic(seed in any::<u64>()) {
        let mut rng = Rng(seed | 1);
        let (_, mut bytes) = example();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(bytes.len());
            bytes[at] = rng.next() as u8;
        }
        bytes.truncate(bytes.len() - rng.below(3));
        if let Ok((y, n)) = deserialize(&bytes) {
            prop_assert!(n <= bytes.len());
            prop_assert!(LoDTensor::new(y.tensor().clone(), Lod::from_offsets(y.lod().levels().to_vec()).unwrap()).is_ok());
        }
        // A partial load of the same bytes, at any place: a slice that fits, or an error.
        let (seek, count) = (rng.below(8), rng.below(8));
        if let Ok((y, n)) = deserialize_slice(&bytes, seek, Dim::new(&[count]).unwrap()) {
            prop_assert!(n <= bytes.len());
            prop_assert_eq!(y.tensor().numel(), count);
        }
    }

    /// Partial loads of records of the reference writer without LoD (every dtype, 0-3 dims): the
    /// slice of any dims that fits is the record's element bytes from `seek` on, and the length
    /// read is the whole record's.
    #[test]
    fn slices_are_the_record_elements_from_seek_on(seed in any::<u64>()) {
        let mut rng = Rng(seed | 1);
        let dtype = DType::ALL[rng.below(DType::ALL.len())];
        let dims: Vec<usize> = (0..rng.below(4)).map(|_| rng.below(5)).collect();
        let numel: usize = dims.iter().product();
        let data: Vec<u8> = (0..numel * dtype.size()).map(|_| rng.next() as u8).collect();
        let bytes = reference_record(spec_number(dtype), &dims, &[], &data);
        let seek = rng.below(numel + 1);
        let count = rng.below(numel - seek + 1);
        // The slice's dims: `count` as one dim, or split into two, or none when it is 1.
        let slice_dims = match rng.below(3) {
            0 if count == 1 => vec![],
            1 if count > 0 && count.is_multiple_of(2) => vec![2, count / 2],
            2 if count == 0 => vec![3, 0],
            _ => vec![count],
        };
        let (y, n) = deserialize_slice(&bytes, seek, Dim::new(&slice_dims).unwrap()).unwrap();
        prop_assert_eq!(n, bytes.len());
        prop_assert_eq!(y.tensor().dtype(), dtype);
        prop_assert_eq!(y.dims().as_slice(), &slice_dims[..]);
        prop_assert_eq!(y.lod().num_levels(), 0);
        prop_assert_eq!(y.tensor().bytes().unwrap(), &data[seek * dtype.size()..(seek + count) * dtype.size()]);
    }
}

#[test]
fn every_cut_of_a_record_is_refused_naming_where_it_ends() {
    let (_, bytes) = example();
    for len in 0..bytes.len() {
        let e = error_of(&bytes[..len]);
        assert_error(e, Error::InvalidArgument, &["the bytes end inside the record's"]);
    }
    assert_error(error_of(&bytes[..3]), Error::InvalidArgument, &["version"]);
    assert_error(error_of(&bytes[..30]), Error::InvalidArgument, &["LoD level 0"]);
    assert_error(error_of(&bytes[..bytes.len() - 1]), Error::InvalidArgument, &["elements", "float32"]);
}

#[test]
fn versions_other_than_0_are_refused() {
    let mut parts = Parts::new(2, &[0, 2]);
    parts.version = 1;
    assert_error(error_of(&parts.bytes()), Error::InvalidArgument, &["LoDTensor version 1"]);
    let mut parts = Parts::new(2, &[0, 2]);
    parts.tensor_version = 7;
    assert_error(error_of(&parts.bytes()), Error::InvalidArgument, &["tensor version 7"]);
}

#[test]
fn a_lod_level_of_partial_offsets_is_refused() {
    let mut parts = Parts::new(2, &[0, 2]);
    parts.levels[0][0] = 12; // 12 bytes: one offset and a half
    assert_error(error_of(&parts.bytes()), Error::InvalidArgument, &["LoD level 0", "byte size of 12"]);
}

#[test]
fn a_level_count_the_bytes_cannot_hold_is_refused_before_allocating() {
    let mut parts = Parts::new(2, &[0, 2]);
    parts.num_levels = u64::MAX;
    assert_error(
        error_of(&parts.bytes()),
        Error::InvalidArgument,
        &["the bytes end inside the record's LoD", "18446744073709551615 levels"],
    );
    let mut parts = Parts::new(2, &[0, 2]);
    parts.levels[0][..8].copy_from_slice(&(u64::MAX - 7).to_le_bytes());
    assert_error(error_of(&parts.bytes()), Error::InvalidArgument, &["the bytes end inside", "LoD level 0"]);
}

#[test]
fn bad_tensor_descs_are_refused() {
    let parts = Parts::new(2, &[0, 2]);
    let mut negative = Parts::new(2, &[0, 2]);
    negative.desc_size = -1;
    assert_error(error_of(&negative.bytes()), Error::InvalidArgument, &["desc size -1"]);
    let cases: [(&[u8], &[&str]); 6] = [
        (&[0x10, 0x02, 0x10, 0x01], &["no data_type"]),
        (&[0x08, 0x05, 0x10], &["the bytes end inside", "dims"]),
        (&[0x08, 0x05, 0x00, 0x01], &["field numbered 0"]),
        (&[0x08, 0x05, 0x1b], &["field 3", "wire type 3"]),
        (&[0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], &["more than 10 bytes"]),
        (
            &[0x08, 0x05, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            &["dims[0] = -1", "negative"],
        ),
    ];
    for (desc, words) in cases {
        let p = Parts { data: parts.data.clone(), ..Parts::new(2, &[0, 2]) }.with_desc(desc);
        assert_error(error_of(&p.bytes()), Error::InvalidArgument, words);
    }
}

#[test]
fn element_types_without_a_dtype_are_unsupported() {
    for (number, words) in [
        (19u8, ["19", "SIZE_T"]),
        (23, ["23", "COMPLEX64"]),
        (24, ["24", "COMPLEX128"]),
        (7, ["7", "not an element type"]),
    ] {
        let p = Parts::new(2, &[0, 2]).with_desc(&[0x08, number, 0x10, 0x02, 0x10, 0x01]);
        assert_error(error_of(&p.bytes()), Error::Unsupported, &words);
    }
}

#[test]
fn more_dims_than_a_tensor_holds_are_unsupported() {
    let mut desc = vec![0x08, 0x05];
    for _ in 0..10 {
        desc.extend([0x10, 0x01]);
    }
    let mut p = Parts::new(1, &[0, 1]).with_desc(&desc);
    assert_error(error_of(&p.bytes()), Error::Unsupported, &["more than 9 dims"]);
    // Packed, too.
    let mut packed = vec![0x08, 0x05, 0x12, 10];
    packed.extend([1u8; 10]);
    p = p.with_desc(&packed);
    assert_error(error_of(&p.bytes()), Error::Unsupported, &["more than 9 dims"]);
}

#[test]
fn sizes_beyond_any_buffer_are_refused() {
    // Dims whose element count overflows, and dims of 2^40 floats that the bytes do not hold.
    let mut huge = vec![0x08, 0x05];
    for _ in 0..2 {
        huge.push(0x10);
        huge.extend(varint(1 << 40));
    }
    let p = Parts { levels: vec![], num_levels: 0, ..Parts::new(1, &[0, 1]) }.with_desc(&huge);
    assert_error(error_of(&p.bytes()), Error::OutOfMemory, &["overflows"]);
    let mut big = vec![0x08, 0x05, 0x10];
    big.extend(varint(1 << 40));
    let p = Parts { levels: vec![], num_levels: 0, ..Parts::new(1, &[0, 1]) }.with_desc(&big);
    assert_error(error_of(&p.bytes()), Error::InvalidArgument, &["the bytes end inside", "elements"]);
}

#[test]
fn bad_lods_are_refused() {
    // Offsets that go down, and a LoD that ends before the last row.
    assert_error(error_of(&Parts::new(3, &[0, 3, 2]).bytes()), Error::InvalidLod, &["LoD level 0"]);
    assert_error(error_of(&Parts::new(3, &[0, 1, 2]).bytes()), Error::InvalidLod, &["3 rows"]);
}

/// Float32 [rows] elements 0, 1, .., rows - 1, as a record without LoD.
fn counting_record(rows: usize) -> Vec<u8> {
    let data: Vec<u8> = (0..rows).flat_map(|i| (i as f32).to_le_bytes()).collect();
    reference_record(5, &[rows], &[], &data)
}

fn slice_error(bytes: &[u8], seek: usize, dims: &[usize]) -> Error {
    match deserialize_slice(bytes, seek, Dim::new(dims).unwrap()) {
        Ok((x, _)) => panic!("read a {:?} slice from element {seek} of a record it does not fit", x.dims().as_slice()),
        Err(e) => e,
    }
}

#[test]
fn a_slice_of_a_save_combine_record_leaves_the_next_record_where_it_is() {
    let (x, second) = example();
    let mut file = counting_record(10);
    let first = file.len();
    file.extend(&second);
    let (a, n) = deserialize_slice(&file, 4, Dim::new(&[3, 2]).unwrap()).unwrap();
    assert_eq!(n, first);
    assert_eq!(a.dims().as_slice(), &[3, 2]);
    assert_eq!(a.tensor().as_slice::<f32>().unwrap(), &[4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
    let (b, m) = deserialize(&file[n..]).unwrap();
    assert_eq!(m, second.len());
    assert!(same(&b, &x));
}

#[test]
fn slices_that_end_past_the_elements_are_refused() {
    let bytes = counting_record(10);
    // Empty slices at either end, and one element as a 0-d tensor, are read.
    assert_eq!(deserialize_slice(&bytes, 10, Dim::new(&[0]).unwrap()).unwrap().0.tensor().numel(), 0);
    assert_eq!(deserialize_slice(&bytes, 0, Dim::new(&[0, 4]).unwrap()).unwrap().0.tensor().numel(), 0);
    assert_eq!(
        deserialize_slice(&bytes, 9, Dim::new(&[]).unwrap()).unwrap().0.tensor().as_slice::<f32>().unwrap(),
        &[9.0]
    );
    for (seek, dims) in
        [(0, vec![11]), (1, vec![10]), (10, vec![1]), (11, vec![0]), (usize::MAX, vec![1]), (3, vec![4, 2])]
    {
        let e = slice_error(&bytes, seek, &dims);
        let text = e.to_string();
        assert!(matches!(e, Error::InvalidArgument(_)), "{text}");
        assert!(text.starts_with("seek, dims: ") && text.contains("ends past the record's 10"), "{text}");
    }
}

#[test]
fn a_slice_of_a_record_with_lod_is_refused() {
    let (_, bytes) = example();
    assert_error(slice_error(&bytes, 0, &[1]), Error::InvalidArgument, &["1 LoD level(s)", "without LoD"]);
    // A record with a LoD that breaks the rules is refused the same way: its levels are not read
    // as a LoD.
    assert_error(slice_error(&Parts::new(3, &[0, 3, 2]).bytes(), 0, &[1]), Error::InvalidArgument, &["LoD level"]);
}

#[test]
fn a_slice_reads_the_whole_record_as_deserialize_does() {
    // Every cut, and a record with a bad version, fails as a whole read does.
    let bytes = counting_record(4);
    for len in 0..bytes.len() {
        let (e, whole) = (slice_error(&bytes[..len], 0, &[1]), error_of(&bytes[..len]));
        assert_eq!(e.to_string(), whole.to_string());
    }
    let mut bad = bytes.clone();
    bad[0] = 1;
    assert_error(slice_error(&bad, 0, &[1]), Error::InvalidArgument, &["LoDTensor version 1"]);
}
