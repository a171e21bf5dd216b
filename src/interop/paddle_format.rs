//! Paddle's LoDTensor record (`SerializeToStream` / `DeserializeFromStream`): the bytes of the
//! tensor in a file of Paddle's `save` op, and of each tensor in a `save_combine` file, which holds
//! the records back to back in the order of its variable list.
//!
//! A record, integers little-endian: u32 version (0); u64 LoD level count; each level as a u64
//! byte size and its u64 offsets (relative-offset form, as a `Lod` holds them); u32 tensor version
//! (0); i32 byte size of a `TensorDesc` protobuf message (field 1: the `VarType.Type` number of the
//! dtype; field 2, repeated: the dims); the message; the elements, row-major, in host byte order.

use crate::backend::cuda;
use crate::dim::{Dim, MAX_DIMS};
use crate::dtype::DType;
use crate::error::{ensure, err, Result};
use crate::lod::Lod;
use crate::lod_tensor::LoDTensor;
use crate::memory::lists;
use crate::tensor::Tensor;

/// The `VarType.Type` number of each dtype (framework.proto).
const TYPE_NUMBERS: [(DType, u64); 10] = [
    (DType::Bool, 0),
    (DType::I16, 1),
    (DType::I32, 2),
    (DType::I64, 3),
    (DType::F16, 4),
    (DType::F32, 5),
    (DType::F64, 6),
    (DType::U8, 20),
    (DType::I8, 21),
    (DType::BF16, 22),
];

/// Element types of Paddle's that the library has no dtype for, named in the error for a record
/// that holds one.
const OTHER_ELEMENT_TYPES: [(u64, &str); 3] = [(19, "SIZE_T"), (23, "COMPLEX64"), (24, "COMPLEX128")];

/// The only version of either header that Paddle writes or reads.
const VERSION: u32 = 0;

/// Protobuf keys of the `TensorDesc` fields as Paddle writes them: field 1 and field 2, each a
/// varint (dims are not packed in proto2).
const KEY_DATA_TYPE: u8 = 1 << 3;
const KEY_DIM: u8 = 2 << 3;

fn type_number(dtype: DType) -> u64 {
    TYPE_NUMBERS.iter().find(|(d, _)| *d == dtype).expect("every dtype has a number").1
}

fn push_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The `TensorDesc` message of a tensor, fields in number order, as protobuf writes it.
fn tensor_desc(dtype: DType, dims: &Dim) -> Vec<u8> {
    let mut desc = vec![KEY_DATA_TYPE];
    push_varint(&mut desc, type_number(dtype));
    for &size in dims.as_slice() {
        desc.push(KEY_DIM);
        push_varint(&mut desc, size as u64);
    }
    desc
}

/// The length of `x`'s record.
pub fn serialized_size(x: &LoDTensor) -> usize {
    record_size(x, tensor_desc(x.tensor().dtype(), x.dims()).len())
}

/// The length of `x`'s record with a desc of `desc_len` bytes.
fn record_size(x: &LoDTensor, desc_len: usize) -> usize {
    let lod: usize = x.lod().levels().iter().map(|level| 8 + 8 * level.len()).sum();
    4 + 8 + lod + 4 + 4 + desc_len + x.tensor().nbytes()
}

/// Writes `x`'s record at the start of `out` (at least `serialized_size(x)` bytes) and returns its
/// length. A device tensor's elements are copied straight into `out`, after the work queued on
/// its device; if that copy fails, `out`'s bytes are unspecified.
pub fn write_record(x: &LoDTensor, out: &mut [u8]) -> Result<usize> {
    let desc = tensor_desc(x.tensor().dtype(), x.dims());
    let size = record_size(x, desc.len());
    ensure!(out.len() >= size, BufferTooSmall, "buf: holds {} bytes, the record needs {size}", out.len());
    let (head, data) = out[..size].split_at_mut(size - x.tensor().nbytes());
    cuda::copy_bytes_to_host(x.tensor(), data)?;
    let mut at = 0;
    let mut put = |bytes: &[u8]| {
        head[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    };
    put(&VERSION.to_le_bytes());
    put(&(x.lod().num_levels() as u64).to_le_bytes());
    for level in x.lod().levels() {
        put(&(8 * level.len() as u64).to_le_bytes());
        for &offset in level {
            put(&(offset as u64).to_le_bytes());
        }
    }
    put(&VERSION.to_le_bytes());
    put(&(desc.len() as i32).to_le_bytes());
    put(&desc);
    debug_assert_eq!(at, head.len());
    Ok(size)
}

/// `x`'s record as a new buffer.
pub fn serialize(x: &LoDTensor) -> Result<Vec<u8>> {
    let mut out = vec![0; serialized_size(x)];
    write_record(x, &mut out)?;
    Ok(out)
}

/// Reads the record at the start of `bytes`: a host tensor holding a copy of its elements, and the
/// record's length (where the next record of a `save_combine` file starts). The LoD is validated
/// as every LoD is (Paddle's loader does not): a record whose LoD breaks a rule or does not end
/// at the tensor's row count is refused.
///
/// Errors (each message starts with `buf: ` and names the part of the record): `InvalidArgument`
/// for bytes that end inside the record, a version other than 0, a LoD level whose byte size is
/// not a multiple of 8, a negative desc size, a desc that is not a protobuf message or has no
/// data_type, a negative dim; `Unsupported` for a data_type the library has no dtype for and for
/// more than `MAX_DIMS` dims; `InvalidLod` for the LoD; `OutOfMemory` for dims whose element
/// count overflows and when the copy cannot be allocated.
pub fn deserialize(bytes: &[u8]) -> Result<(LoDTensor, usize)> {
    let record = Record::read(bytes)?;
    let lod = Lod::from_offsets(record.levels).map_err(|e| e.context("buf: "))?;
    let x = Tensor::from_bytes(record.dtype, record.dims, record.data)?;
    let x = LoDTensor::new(x, lod).map_err(|e| e.context("buf: "))?;
    Ok((x, record.len))
}

/// Paddle's partial load (the `load` op's `seek` and `shape`): from the record at the start of
/// `bytes`, which must have no LoD, a host tensor of dims `dims` holding a copy of the
/// `dims.numel()` elements that start at element `seek` of the record's row-major elements; and
/// the record's length, as `deserialize` gives it. The whole record is read and checked as
/// `deserialize` reads it; only the slice is copied.
///
/// Paddle's partial load reads the LoD level count but not the levels, so on a record with LoD it
/// reads the levels as the tensor's header. A slice of elements has no LoD of its own, so a
/// record with LoD is refused here.
///
/// Errors: those of `deserialize` (but for `InvalidLod`, as no LoD is read), and
/// `InvalidArgument` for a record with LoD levels, and for a slice that ends past the record's
/// elements (named `seek` and `dims`).
pub fn deserialize_slice(bytes: &[u8], seek: usize, dims: Dim) -> Result<(LoDTensor, usize)> {
    let record = Record::read(bytes)?;
    ensure!(
        record.levels.is_empty(),
        InvalidArgument,
        "buf: the record has {} LoD level(s); a slice is read from a record without LoD (read it whole and \
         slice it)",
        record.levels.len()
    );
    let (numel, count) = (record.dims.numel(), dims.numel());
    ensure!(
        seek <= numel && count <= numel - seek,
        InvalidArgument,
        "seek, dims: the slice of {count} element(s) from element {seek} ends past the record's {numel} \
         (dims {:?})",
        record.dims.as_slice()
    );
    let size = record.dtype.size();
    let data = &record.data[seek * size..(seek + count) * size];
    let x = Tensor::from_bytes(record.dtype, dims, data)?;
    Ok((LoDTensor::new(x, Lod::empty())?, record.len))
}

/// A record's parts, read and checked but for the LoD's rules: the LoD levels as written, the
/// dtype and dims, the elements' bytes, and the record's length.
struct Record<'a> {
    levels: Vec<Vec<usize>>,
    dtype: DType,
    dims: Dim,
    data: &'a [u8],
    len: usize,
}

impl<'a> Record<'a> {
    fn read(bytes: &'a [u8]) -> Result<Record<'a>> {
        let mut r = Reader { bytes, at: 0 };
        let version = r.u32("version")?;
        ensure!(version == VERSION, InvalidArgument, "buf: LoDTensor version {version} is not supported (only 0 is)");
        let num_levels = r.u64("LoD level count")?;
        // Each level takes at least its size field: a count the bytes cannot hold is refused
        // before anything is allocated for it.
        ensure!(
            num_levels <= (r.left() / 8) as u64,
            InvalidArgument,
            "buf: the bytes end inside the record's LoD: {num_levels} levels take at least {} bytes from byte {}, \
             {} are left",
            num_levels.saturating_mul(8),
            r.at,
            r.left()
        );
        let mut levels = lists::with_capacity(num_levels as usize, "buf: LoD levels")?;
        for k in 0..num_levels {
            let size = r.u64(&format!("LoD level {k}'s byte size"))?;
            ensure!(
                size % 8 == 0,
                InvalidArgument,
                "buf: LoD level {k} has a byte size of {size}, which is not a whole number of 8-byte offsets"
            );
            let what = format!("LoD level {k}");
            let level = r.take(usize::try_from(size).unwrap_or(usize::MAX), &what)?;
            let offsets = level.chunks_exact(8).map(|o| u64::from_le_bytes(o.try_into().unwrap()) as usize);
            levels.push(lists::collect(offsets, &what)?);
        }
        let tensor_version = r.u32("tensor version")?;
        ensure!(
            tensor_version == VERSION,
            InvalidArgument,
            "buf: tensor version {tensor_version} is not supported (only 0 is)"
        );
        let desc_size = r.i32("tensor desc size")?;
        ensure!(desc_size >= 0, InvalidArgument, "buf: the tensor desc size {desc_size} is negative");
        let (dtype, dims) = parse_desc(r.take(desc_size as usize, "tensor desc")?)?;
        let nbytes = dims.numel().saturating_mul(dtype.size());
        let data = r.take(nbytes, &format!("elements ({dtype}, dims {:?})", dims.as_slice()))?;
        Ok(Record { levels, dtype, dims, data, len: r.at })
    }
}

/// A cursor over a record's bytes whose every read names what it reads when the bytes end first.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn left(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        ensure!(
            n <= self.left(),
            InvalidArgument,
            "buf: the bytes end inside the record's {what}: {n} bytes from byte {}, {} are left",
            self.at,
            self.left()
        );
        self.at += n;
        Ok(&self.bytes[self.at - n..self.at])
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().unwrap()))
    }

    fn i32(&mut self, what: &str) -> Result<i32> {
        Ok(i32::from_le_bytes(self.take(4, what)?.try_into().unwrap()))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().unwrap()))
    }

    /// A protobuf varint: 7 bits a byte, low first, at most 10 bytes.
    fn varint(&mut self, what: &str) -> Result<u64> {
        let mut v = 0u64;
        for i in 0..10 {
            let byte = self.take(1, what)?[0];
            v |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                return Ok(v);
            }
        }
        Err(err!(InvalidArgument, "buf: the tensor desc's {what} is a varint of more than 10 bytes"))
    }

    fn done(&self) -> bool {
        self.left() == 0
    }
}

/// The dtype and dims of a `TensorDesc` message. Dims are read packed or not (protobuf parsers
/// accept both); fields the library does not know are skipped, as protobuf parsers do.
fn parse_desc(desc: &[u8]) -> Result<(DType, Dim)> {
    let mut r = Reader { bytes: desc, at: 0 };
    let mut data_type = None;
    let mut dims = Vec::new();
    while !r.done() {
        let key = r.varint("field key")?;
        let (field, wire) = (key >> 3, key & 7);
        match (field, wire) {
            (0, _) => return Err(err!(InvalidArgument, "buf: the tensor desc has a field numbered 0")),
            (1, 0) => data_type = Some(r.varint("data_type")?),
            (2, 0) => dims.push(r.varint("dims")?),
            (2, 2) => {
                let len = r.varint("packed dims' length")?;
                let mut packed =
                    Reader { bytes: r.take(usize::try_from(len).unwrap_or(usize::MAX), "packed dims")?, at: 0 };
                while !packed.done() && dims.len() <= MAX_DIMS {
                    dims.push(packed.varint("dims")?);
                }
            }
            (_, 0) => _ = r.varint(&format!("field {field}"))?,
            (_, 1) => _ = r.take(8, &format!("field {field}"))?,
            (_, 2) => {
                let len = r.varint(&format!("field {field}'s length"))?;
                r.take(usize::try_from(len).unwrap_or(usize::MAX), &format!("field {field}"))?;
            }
            (_, 5) => _ = r.take(4, &format!("field {field}"))?,
            _ => {
                return Err(err!(
                    InvalidArgument,
                    "buf: the tensor desc's field {field} has wire type {wire}, which a TensorDesc cannot hold"
                ))
            }
        }
        // A bound on what a hostile desc can make the parser keep.
        ensure!(
            dims.len() <= MAX_DIMS,
            Unsupported,
            "buf: the tensor has more than {MAX_DIMS} dims, the most a tensor of the library has"
        );
    }
    let number = data_type
        .ok_or_else(|| err!(InvalidArgument, "buf: cannot parse the tensor desc: it has no data_type (field 1)"))?;
    let dtype = TYPE_NUMBERS.iter().find(|(_, n)| *n == number).map(|(d, _)| *d).ok_or_else(|| {
        match OTHER_ELEMENT_TYPES.iter().find(|(n, _)| *n == number) {
            Some((_, name)) => err!(Unsupported, "buf: data_type {number} ({name}) has no dtype in the library"),
            None => err!(Unsupported, "buf: data_type {number} is not an element type the library knows"),
        }
    })?;
    // Dims are int64, negative ones written as 10-byte varints of their two's complement.
    let dims: Vec<i64> = dims.into_iter().map(|d| d as i64).collect();
    let dims = Dim::from_i64(&dims).map_err(|e| e.context("buf: the tensor desc's "))?;
    Ok((dtype, dims))
}
