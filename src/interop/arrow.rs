//! The Arrow C data interface: LoD tensors lent to and taken from Arrow (pyarrow, Arrow C++, Go,
//! Java, Polars, DuckDB) as `ArrowSchema` + `ArrowArray`, without copying the elements.
//!
//! A LoD tensor is a chain of nested arrays, outermost first: one `large_list` (`+L`, 64-bit
//! offsets) per LoD level, whose offsets are that level's; then one `fixed_size_list` (`+w:n`) per
//! dim after the first, so a row of shape `[3, 4]` is `+w:3` of `+w:4`; then the elements as a
//! primitive array. A tensor without LoD starts at the fixed-size lists (or the elements, for a
//! 1-d tensor). So a 2-level LoD over `[N, D]` f32 rows is `large_list<large_list<
//! fixed_size_list<float, D>>>`, and a 1-level LoD over a 1-d int64 tensor is `large_list<int64>`.
//!
//! Arrow's binary and string arrays are taken as bytes: `binary`, `utf8` and their large forms
//! (`z`, `u`, `Z`, `U`) as a LoD level (the offsets) over uint8 elements, `fixed_size_binary`
//! (`w:n`) as a last dim of n, so a column of sentences is a one-level LoD tensor of their UTF-8
//! bytes and a `list<utf8>` two levels. [`to_arrow_strings`] lends such a tensor back as strings
//! (`to_arrow` lends uint8 as `uint8`), and a record batch's column may be lent so too.
//!
//! Arrow packs booleans 8 to a byte, so bool tensors are the one dtype copied, both ways (on a CUDA
//! device, by a kernel there); bfloat16 has no Arrow type. The structs below have the layout of Arrow's `abi.h`; the C header defines
//! them under Arrow's own guard, `ARROW_C_DATA_INTERFACE`.

use super::host_reads::{HostReads, Plan};
use super::utf8::check_texts;
use crate::dim::{Dim, MAX_DIMS};
use crate::dtype::DType;
use crate::error::{ensure, err, Result};
use crate::lod::Lod;
use crate::lod_tensor::{check_lod_for_dims, LoDTensor};
use crate::memory::{lists, Allocation};
use crate::place::Place;
use crate::tensor::Tensor;
use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[repr(C)]
pub struct ArrowSchema {
    pub format: *const c_char,
    pub name: *const c_char,
    pub metadata: *const c_char,
    pub flags: i64,
    pub n_children: i64,
    pub children: *mut *mut ArrowSchema,
    pub dictionary: *mut ArrowSchema,
    pub release: Option<unsafe extern "C" fn(*mut ArrowSchema)>,
    pub private_data: *mut c_void,
}

#[repr(C)]
pub struct ArrowArray {
    pub length: i64,
    pub null_count: i64,
    pub offset: i64,
    pub n_buffers: i64,
    pub n_children: i64,
    pub buffers: *mut *const c_void,
    pub children: *mut *mut ArrowArray,
    pub dictionary: *mut ArrowArray,
    pub release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
    pub private_data: *mut c_void,
}

/// The C device data interface's array: an array and the device its buffers are on.
#[repr(C)]
pub struct ArrowDeviceArray {
    pub array: ArrowArray,
    pub device_id: i64,
    pub device_type: i32,
    pub sync_event: *mut c_void,
    pub reserved: [i64; 3],
}

/// `ARROW_DEVICE_CPU`, `ARROW_DEVICE_CUDA` and `ARROW_DEVICE_CUDA_HOST` (the same numbers as
/// DLPack's device types).
pub const DEVICE_CPU: i32 = 1;
pub const DEVICE_CUDA: i32 = 2;
pub const DEVICE_CUDA_HOST: i32 = 3;

// LoD offsets are lent to Arrow as its int64 offsets, in place.
const _: () = assert!(std::mem::size_of::<usize>() == std::mem::size_of::<i64>());

/// A LoD tensor at most this many arrays deep is taken: enough for any LoD, and a bound on the
/// walk down a chain of children that a broken producer might have made circular.
const MAX_DEPTH: usize = 64;

/// Entries at or past this (in any array) are past any buffer: no buffer of 8-byte entries this
/// long fits in an address space, and pointer offsets beyond it would wrap.
const PAST_ANY_BUFFER: usize = isize::MAX as usize / 8;

/// One array of the chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layer {
    /// A variable-size list: a LoD level. `wide` for 64-bit offsets (`+L`), else 32-bit (`+l`).
    List {
        wide: bool,
    },
    /// A fixed-size list of this many items: a dim after the first.
    Fixed(usize),
    Values(DType),
    /// Variable-size binary or, `utf8`, strings (`z`, `u`; `Z`, `U` for 64-bit offsets): a LoD
    /// level and its uint8 elements in one array, the offsets in buffer 1 and the bytes in buffer 2.
    Bytes {
        wide: bool,
        utf8: bool,
    },
    /// Fixed-size binary of this many bytes (`w:n`): a dim of uint8 elements.
    FixedBytes(usize),
}

impl Layer {
    /// The Arrow format string.
    fn format(self) -> String {
        match self {
            Layer::List { wide } => if wide { "+L" } else { "+l" }.to_owned(),
            Layer::Fixed(n) => format!("+w:{n}"),
            Layer::Values(dtype) => primitive_format(dtype).expect("checked by the exporter").to_owned(),
            Layer::Bytes { wide, utf8 } => match (wide, utf8) {
                (false, false) => "z",
                (false, true) => "u",
                (true, false) => "Z",
                (true, true) => "U",
            }
            .to_owned(),
            Layer::FixedBytes(n) => format!("w:{n}"),
        }
    }

    fn parse(format: &str) -> Result<Layer> {
        for (prefix, what) in [("+w:", "fixed-size list"), ("w:", "fixed-size binary")] {
            if let Some(n) = format.strip_prefix(prefix) {
                let n = n
                    .parse::<usize>()
                    .map_err(|_| err!(InvalidArgument, "the {what} format {format:?} does not end in a size"))?;
                return Ok(if prefix == "w:" { Layer::FixedBytes(n) } else { Layer::Fixed(n) });
            }
        }
        match format {
            "+L" => return Ok(Layer::List { wide: true }),
            "+l" => return Ok(Layer::List { wide: false }),
            "z" | "u" | "Z" | "U" => {
                return Ok(Layer::Bytes { wide: format == "Z" || format == "U", utf8: format == "u" || format == "U" })
            }
            _ => {}
        }
        if let Some(&dtype) = DType::ALL.iter().find(|&&d| primitive_format(d) == Some(format)) {
            return Ok(Layer::Values(dtype));
        }
        ensure!(
            format != "+s",
            Unsupported,
            "format \"+s\" is a struct, which has no tensor form; a record batch (a struct of columns) is taken with \
             lodtensor_from_arrow_record_batch, a tensor a column"
        );
        Err(err!(
            Unsupported,
            "format {format:?} has no tensor form; a LoD tensor is lists (+l, +L), fixed-size lists (+w:n) and \
             elements of b, C, c, s, i, l, e, f or g, or of bytes: binary and strings (z, Z, u, U) and \
             fixed-size binary (w:n)"
        ))
    }

    /// `(buffers, children)` of an array of this layer.
    fn shape(self) -> (i64, i64) {
        match self {
            Layer::List { .. } => (2, 1),
            Layer::Fixed(_) => (1, 1),
            Layer::Values(_) | Layer::FixedBytes(_) => (2, 0),
            Layer::Bytes { .. } => (3, 0),
        }
    }

    /// Whether the layer is a LoD level (a list, or binary's offsets).
    fn is_level(self) -> bool {
        matches!(self, Layer::List { .. } | Layer::Bytes { .. })
    }
}

/// The Arrow format of a dtype's elements; bfloat16 has none.
fn primitive_format(dtype: DType) -> Option<&'static str> {
    Some(match dtype {
        DType::Bool => "b",
        DType::U8 => "C",
        DType::I8 => "c",
        DType::I16 => "s",
        DType::I32 => "i",
        DType::I64 => "l",
        DType::F16 => "e",
        DType::F32 => "f",
        DType::F64 => "g",
        DType::BF16 => return None,
    })
}

// ---- export ----------------------------------------------------------------------------------

/// What every array of an export keeps alive: the tensor and LoD it lends, a host bool tensor's
/// packed bits, and what a device export lends of its own ([`DeviceParts`]).
struct Lent {
    _tensor: Tensor,
    _lod: Lod,
    _bits: Vec<u8>,
    _device: DeviceParts,
}

/// What a device export of a tensor on a CUDA device lends besides the tensor: the copies of its
/// LoD offsets that the LoD keeps on the device (one allocation a level), and for bool elements
/// their bits, packed there. None of it for a host tensor, whose LoD and bits are the host's.
#[derive(Default)]
struct DeviceParts {
    levels: Vec<Arc<Allocation>>,
    bits: Option<Tensor>,
}

/// An exported array's own part: its buffer list and its children (a record batch's struct lends
/// nothing of its own).
struct ArrayPart {
    buffers: [*const c_void; 3],
    children: Children<ArrowArray>,
    _lent: Option<Arc<Lent>>,
}

/// An exported schema's own part: its strings and its children.
struct SchemaPart {
    _format: CString,
    _name: CString,
    children: Children<ArrowSchema>,
}

/// The two structs of the interface, as exported here: released by [`release_exported`], which
/// frees their part.
trait Exported: Sized {
    type Part;
    fn release_slot(&mut self) -> &mut Option<unsafe extern "C" fn(*mut Self)>;
    fn private_data(&self) -> *mut c_void;
}

impl Exported for ArrowArray {
    type Part = ArrayPart;
    fn release_slot(&mut self) -> &mut Option<unsafe extern "C" fn(*mut Self)> {
        &mut self.release
    }
    fn private_data(&self) -> *mut c_void {
        self.private_data
    }
}

impl Exported for ArrowSchema {
    type Part = SchemaPart;
    fn release_slot(&mut self) -> &mut Option<unsafe extern "C" fn(*mut Self)> {
        &mut self.release
    }
    fn private_data(&self) -> *mut c_void {
        self.private_data
    }
}

/// A parent's child structs (the `children` list the parent points to). Dropping it releases each
/// child, unless the consumer moved it out (the interface's move leaves `release` NULL here), then
/// frees the structs. A child moved out keeps its own part, and with it the memory, until its own
/// release.
struct Children<T: Exported>(Vec<*mut T>);

impl<T: Exported> Children<T> {
    /// Room for `n` children, asked for before any is made, so that none is lost when it fails.
    fn with_capacity(n: usize, what: &str) -> Result<Children<T>> {
        Ok(Children(lists::with_capacity(n, what)?))
    }

    /// The one child of a chain's array (none for the elements).
    fn one(child: Option<T>) -> Children<T> {
        let mut children = Children(Vec::with_capacity(1));
        if let Some(child) = child {
            children.push(child);
        }
        children
    }

    /// Adds a child within the room asked for.
    fn push(&mut self, child: T) {
        debug_assert!(self.0.len() < self.0.capacity(), "room is asked for first");
        self.0.push(Box::into_raw(Box::new(child)));
    }

    fn len(&self) -> i64 {
        self.0.len() as i64
    }

    /// The list a parent's `children` points to: NULL for none.
    fn list(&mut self) -> *mut *mut T {
        if self.0.is_empty() {
            std::ptr::null_mut()
        } else {
            self.0.as_mut_ptr()
        }
    }
}

impl<T: Exported> Drop for Children<T> {
    fn drop(&mut self) {
        for &child in &self.0 {
            // SAFETY: each struct is a box `push` made, not yet freed.
            unsafe {
                if let Some(release) = *(*child).release_slot() {
                    release(child);
                }
                drop(Box::from_raw(child));
            }
        }
    }
}

/// A record batch's column: a tensor, its field name and the form it is lent in.
pub type Column<'a> = (&'a LoDTensor, &'a str, Encoding);

/// `x` as an Arrow schema and array that share its memory (the elements and the LoD offsets; bool
/// elements are packed into bits of their own). Each struct is released by its `release`
/// callback, once, from any thread; the memory stays until the array is released, also after `x`
/// has gone. The arrays are not nullable and have no nulls (validity buffers NULL).
///
/// Errors: `Unsupported` (a CUDA tensor: the C data interface is host memory, see
/// [`to_arrow_device`]; bfloat16); `InvalidArgument` (a 0-d tensor, which has no rows);
/// `OutOfMemory` (no memory for the bits of bool elements).
pub fn to_arrow(x: &LoDTensor) -> Result<(ArrowSchema, ArrowArray)> {
    ensure_on_host(x, "t", "lodtensor_to_arrow_device")?;
    export(x, DeviceParts::default(), Encoding::Values, "", "t")
}

/// `columns` (each a tensor, its field name and its form) as an Arrow record batch that shares
/// their memory: a struct array (`+s`, named "") whose children are the columns, each named by
/// its name, as [`to_arrow`] makes them (`Encoding::Values`) or as [`to_arrow_strings`] does
/// (`Binary`, `Utf8`: text). Every column has one entry per row of the batch: its sequences at LoD
/// level 0, or its rows when it has no LoD. Released as [`to_arrow`]'s structs; a column moved
/// out of the struct keeps its memory until its own release.
///
/// Errors: as [`to_arrow`] or [`to_arrow_strings`] for each column, named `columns[i]`;
/// `InvalidArgument` for no columns, or a column whose entries are not as many as the first
/// column's.
pub fn to_arrow_record_batch(columns: &[Column]) -> Result<(ArrowSchema, ArrowArray)> {
    for (i, (x, _, _)) in columns.iter().enumerate() {
        ensure_on_host(x, &format!("columns[{i}]"), "lodtensor_to_arrow_device_record_batch")?;
    }
    check_batch(columns)?;
    export_batch(columns, Vec::new())
}

/// Refuses a tensor that is not on the host, which the C data interface cannot carry; the message
/// points to `device_call`, which lends it through the C device data interface.
fn ensure_on_host(x: &LoDTensor, arg: &str, device_call: &str) -> Result<()> {
    let place = x.tensor().place();
    ensure!(
        place == Place::Cpu,
        Unsupported,
        "{arg}: on {place}; Arrow's C data interface carries host memory: lend it with {device_call}, or copy it \
         to the CPU first (lodtensor_to_place)"
    );
    Ok(())
}

/// `x` as an Arrow schema and device array (the C device data interface) that share its memory:
/// on the CPU as [`to_arrow`] (device type CPU, id -1); on CUDA device n (type CUDA, id n) the
/// elements and the LoD offsets are device memory (the offsets are the copies the LoD keeps on the
/// device, uploaded at their first use there; bool elements are packed into Arrow's bits there, a
/// copy), and the work queued on the device has finished when this returns, so `sync_event` is
/// NULL.
///
/// Errors: as [`to_arrow`], but for CUDA tensors: `OutOfMemory` for no device memory for bool
/// elements' bits; `Internal` for a CUDA driver failure.
pub fn to_arrow_device(x: &LoDTensor) -> Result<(ArrowSchema, ArrowDeviceArray)> {
    let place = x.tensor().place();
    let parts = device_parts(x, "t")?;
    synchronize(place)?;
    let (schema, array) = export(x, parts, Encoding::Values, "", "t")?;
    Ok((schema, on_device(array, place)))
}

/// [`to_arrow_record_batch`] through the C device data interface, as [`to_arrow_device`] lends one
/// tensor: every column on one place, the CPU or a CUDA device.
///
/// Errors: as [`to_arrow_record_batch`], [`to_arrow_device`] and [`to_arrow_device_strings`], and
/// `InvalidArgument` for a column on another place than the first column's, naming both.
pub fn to_arrow_device_record_batch(columns: &[Column]) -> Result<(ArrowSchema, ArrowDeviceArray)> {
    let place = columns.first().map_or(Place::Cpu, |(x, _, _)| x.tensor().place());
    let mut parts = lists::with_capacity(columns.len(), "columns")?;
    for (i, (x, _, _)) in columns.iter().enumerate() {
        let at = x.tensor().place();
        ensure!(
            at == place,
            InvalidArgument,
            "columns[{i}]: on {at}, columns[0] on {place}; a device array's columns are on one place"
        );
        parts.push(device_parts(x, &format!("columns[{i}]"))?);
    }
    // A text column's check, queued after every column's parts, is the call's one wait.
    let waited = check_batch(columns)?;
    synchronize_unless(waited, place)?;
    let (schema, array) = export_batch(columns, parts)?;
    Ok((schema, on_device(array, place)))
}

/// How a tensor is lent: [`to_arrow_strings`] lends its sequences of bytes as `Binary` or `Utf8`
/// strings; a record batch's column may be any of the three.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// Any bytes, as `large_binary` (`Z`).
    Binary,
    /// UTF-8 text, as `large_utf8` (`U`): every string is checked to be UTF-8, as Arrow's strings
    /// must be.
    Utf8,
    /// The elements as values of their dtype's Arrow type under a large list a LoD level, as
    /// [`to_arrow`] makes them (uint8 as `uint8`). No strings: [`to_arrow_strings`] refuses it.
    Values,
}

/// `x`, a 1-d uint8 tensor with a LoD, as Arrow strings or binary that share its memory: its last
/// LoD level's sequences are the strings (the level's offsets, as int64, and the elements their
/// bytes, one `large_utf8` or `large_binary` array), the levels above it `large_list`s as
/// [`to_arrow`] makes them. So one level of sentences' bytes is a `large_utf8` of one string a
/// sentence, and two levels `large_list<large_utf8>`. Released as [`to_arrow`]'s structs.
///
/// Errors: `Unsupported` (a CUDA tensor, see [`to_arrow_device_strings`]); `InvalidArgument` (a
/// dtype other than uint8, a tensor that is not 1-d or has no LoD, or for `Utf8` a string that is
/// not UTF-8, named by its sequence and the byte where it breaks).
pub fn to_arrow_strings(x: &LoDTensor, encoding: Encoding) -> Result<(ArrowSchema, ArrowArray)> {
    ensure_on_host(x, "t", "lodtensor_to_arrow_device_strings")?;
    strings_form(x, encoding, "t")?;
    if encoding == Encoding::Utf8 {
        check_texts(&[(x, "t".into())])?;
    }
    export(x, DeviceParts::default(), encoding, "", "t")
}

/// [`to_arrow_strings`] through the C device data interface, as [`to_arrow_device`] lends a
/// tensor: on a CUDA device the bytes and offsets are device memory and the device's work has
/// finished. `Utf8` on a device checks the bytes there, with a kernel; only text that is not UTF-8
/// is copied to the host, to name the string that breaks.
///
/// Errors: as [`to_arrow_strings`] (but for CUDA tensors), and on a device `OutOfMemory` (no
/// device memory for the check, or no host memory for the bytes of text that is not UTF-8) and
/// `Internal` (a CUDA driver failure).
pub fn to_arrow_device_strings(x: &LoDTensor, encoding: Encoding) -> Result<(ArrowSchema, ArrowDeviceArray)> {
    let place = x.tensor().place();
    strings_form(x, encoding, "t")?;
    let parts = device_parts(x, "t")?;
    // The check's count, read back after the parts are queued, is the call's one wait.
    let waited = encoding == Encoding::Utf8 && check_texts(&[(x, "t".into())])?;
    synchronize_unless(waited, place)?;
    let (schema, array) = export(x, parts, encoding, "", "t")?;
    Ok((schema, on_device(array, place)))
}

/// Checks that `x` has the form of strings: a 1-d uint8 tensor under a LoD, whose last level's
/// sequences are the strings. `Values` is no form of strings. Whether they are UTF-8 is
/// [`check_texts`]'s to say, once a call has everything else in hand.
fn strings_form(x: &LoDTensor, encoding: Encoding, arg: &str) -> Result<()> {
    ensure!(
        encoding != Encoding::Values,
        InvalidArgument,
        "encoding: LODTENSOR_ARROW_VALUES lends no strings; lodtensor_to_arrow lends a tensor in that form"
    );
    let t = x.tensor();
    ensure!(t.dtype() == DType::U8, InvalidArgument, "{arg}: {}; strings are uint8 bytes", t.dtype());
    ensure!(
        t.dims().as_slice().len() == 1,
        InvalidArgument,
        "{arg}: dims {:?}; strings are a 1-d tensor of bytes",
        t.dims().as_slice()
    );
    ensure!(
        x.lod().num_levels() > 0,
        InvalidArgument,
        "{arg}: has no LoD; the strings are its last LoD level's sequences"
    );
    Ok(())
}

/// Waits for the work queued on `place` (nothing on the CPU), so that what a device export lends
/// can be read at once, unless the call has `waited` since it queued its last work.
fn synchronize_unless(waited: bool, place: Place) -> Result<()> {
    if waited {
        return Ok(());
    }
    synchronize(place)
}

/// What a device export of `x` lends of its own (see [`DeviceParts`]), queued on its device:
/// none of it on the CPU. Errors name `x` `arg`.
fn device_parts(x: &LoDTensor, arg: &str) -> Result<DeviceParts> {
    let t = x.tensor();
    let Place::Cuda(n) = t.place() else { return Ok(DeviceParts::default()) };
    ensure!(primitive_format(t.dtype()).is_some(), Unsupported, "{arg}: {} has no Arrow type", t.dtype());
    let levels = crate::backend::cuda::lod_levels_on(n, x.lod())?;
    let bits = if t.dtype() == DType::Bool {
        Some(crate::backend::cuda::pack_bits(t).map_err(|e| e.context(&format!("{arg}: bool elements as bits: ")))?)
    } else {
        None
    };
    Ok(DeviceParts { levels, bits })
}

/// Waits for the work queued on `place` (nothing on the CPU), so that what a device export lends
/// can be read at once.
fn synchronize(place: Place) -> Result<()> {
    match place {
        Place::Cpu => Ok(()),
        Place::Cuda(n) => crate::backend::cuda::synchronize(n),
    }
}

/// `array` as a device array on `place`, ready to read (no event).
fn on_device(array: ArrowArray, place: Place) -> ArrowDeviceArray {
    let (device_type, device_id) = match place {
        // -1: no device id, as Arrow's own CPU exports say.
        Place::Cpu => (DEVICE_CPU, -1),
        Place::Cuda(n) => (DEVICE_CUDA, i64::from(n)),
    };
    ArrowDeviceArray { array, device_id, device_type, sync_event: std::ptr::null_mut(), reserved: [0; 3] }
}

/// Checks that `columns` make a record batch: at least one column, each with as many entries as
/// the first, a name without NUL, and text in its form (every text column's UTF-8 checked at
/// once). Returns whether the check waited for the columns' device (see [`check_texts`]).
fn check_batch(columns: &[Column]) -> Result<bool> {
    let Some((first, _, _)) = columns.first() else {
        return Err(err!(InvalidArgument, "num_columns: 0; a record batch has at least one column"));
    };
    let entries = top_entries(first, "columns[0]")?;
    let mut texts = Vec::new();
    for (i, &(x, name, encoding)) in columns.iter().enumerate() {
        let arg = format!("columns[{i}]");
        let n = top_entries(x, &arg)?;
        ensure!(
            n == entries,
            InvalidArgument,
            "{arg}: {n} entries, columns[0] {entries}; every column of a record batch has one entry per row \
             (its sequences at LoD level 0, or its rows)"
        );
        ensure!(!name.contains('\0'), InvalidArgument, "names[{i}]: holds a NUL; a field name is a C string");
        if encoding != Encoding::Values {
            strings_form(x, encoding, &arg)?;
        }
        if encoding == Encoding::Utf8 {
            lists::reserve(&mut texts, 1, "text columns")?;
            texts.push((x, arg));
        }
    }
    check_texts(&texts)
}

/// The record batch of `columns` (which [`check_batch`] took), column i lending `parts[i]` (see
/// [`export`]; none of its own for a column past the end of `parts`).
fn export_batch(columns: &[Column], mut parts: Vec<DeviceParts>) -> Result<(ArrowSchema, ArrowArray)> {
    let entries = top_entries(columns[0].0, "columns[0]")?;
    let mut schemas = Children::with_capacity(columns.len(), "columns")?;
    let mut arrays = Children::with_capacity(columns.len(), "columns")?;
    for (i, &(x, name, encoding)) in columns.iter().enumerate() {
        let lent = parts.get_mut(i).map(std::mem::take).unwrap_or_default();
        let (schema, array) = export(x, lent, encoding, name, &format!("columns[{i}]"))?;
        schemas.push(schema);
        arrays.push(array);
    }
    Ok((export_schema("+s", "", schemas), export_array(entries, 1, [std::ptr::null(); 2], arrays, None)))
}

/// The entries `x` makes as a record batch's column: its sequences at LoD level 0, or its rows.
fn top_entries(x: &LoDTensor, arg: &str) -> Result<usize> {
    match x.lod().levels().first() {
        Some(level) => Ok(level.len() - 1),
        None => x
            .tensor()
            .rows()
            .map_err(|_| err!(InvalidArgument, "{arg}: a 0-d tensor has no rows to make an Arrow array of")),
    }
}

/// The export of `x`, lending `device`'s LoD offsets (one allocation a level) and bits where it
/// has them, else the LoD's own and bits packed here; in the form of `encoding`: for strings (an
/// `x` that [`strings_form`] took), its last LoD level and its bytes as one binary array. Its
/// root is named `name`, and errors name it `arg`.
fn export(
    x: &LoDTensor,
    device: DeviceParts,
    encoding: Encoding,
    name: &str,
    arg: &str,
) -> Result<(ArrowSchema, ArrowArray)> {
    let tensor = x.tensor();
    let dtype = tensor.dtype();
    ensure!(primitive_format(dtype).is_some(), Unsupported, "{arg}: {dtype} has no Arrow type");
    let dims = tensor.dims().as_slice();
    ensure!(!dims.is_empty(), InvalidArgument, "{arg}: a 0-d tensor has no rows to make an Arrow array of");
    let bits =
        if dtype == DType::Bool && device.bits.is_none() { pack_bits(tensor.bytes()?, arg)? } else { Vec::new() };
    let values = match &device.bits {
        Some(on_device) => on_device.as_ptr(),
        None if dtype == DType::Bool => bits.as_ptr(),
        None => tensor.as_ptr(),
    };

    // The chain, outermost first, with each array's length and buffers after the validity.
    let lod = x.lod();
    let null = std::ptr::null();
    let mut chain: Vec<(Layer, usize, [*const c_void; 2])> = lod
        .levels()
        .iter()
        .enumerate()
        .map(|(k, level)| {
            let offsets = device.levels.get(k).map_or(level.as_ptr().cast(), |a| a.as_ptr().cast());
            (Layer::List { wide: true }, level.len() - 1, [offsets, null])
        })
        .collect();
    if encoding != Encoding::Values {
        // The last level's list and its bytes are one binary array.
        let (_, strings, [offsets, _]) = chain.pop().expect("strings have a LoD");
        let utf8 = encoding == Encoding::Utf8;
        chain.push((Layer::Bytes { wide: true, utf8 }, strings, [offsets, values.cast()]));
    } else {
        let mut length = dims[0];
        for &d in &dims[1..] {
            chain.push((Layer::Fixed(d), length, [null, null]));
            length *= d;
        }
        chain.push((Layer::Values(dtype), length, [values.cast(), null]));
    }

    let lent = Arc::new(Lent { _tensor: tensor.clone(), _lod: lod.clone(), _bits: bits, _device: device });
    let mut array = None;
    let mut schema = None;
    for (i, &(layer, length, buffers)) in chain.iter().enumerate().rev() {
        let n_buffers = layer.shape().0;
        array = Some(export_array(length, n_buffers, buffers, Children::one(array.take()), Some(&lent)));
        let format = layer.format();
        schema = Some(export_schema(&format, if i == 0 { name } else { "item" }, Children::one(schema.take())));
    }
    Ok((schema.expect("the chain ends in the elements"), array.expect("the chain ends in the elements")))
}

/// Bytes of 0 and 1 as Arrow's bits, least significant first.
fn pack_bits(bytes: &[u8], arg: &str) -> Result<Vec<u8>> {
    let bits = bytes.chunks(8).map(|c| c.iter().enumerate().fold(0u8, |b, (i, &v)| b | (u8::from(v != 0) << i)));
    lists::collect(bits, &format!("{arg}: bool elements as bits"))
}

/// An exported array of `length` entries with `n_buffers` buffers (a validity buffer, always
/// NULL, then as many of `data` as it has room for) and `children`, keeping `lent` alive.
fn export_array(
    length: usize,
    n_buffers: i64,
    [first, second]: [*const c_void; 2],
    children: Children<ArrowArray>,
    lent: Option<&Arc<Lent>>,
) -> ArrowArray {
    let n_children = children.len();
    let buffers = [std::ptr::null(), first, second];
    let part = Box::into_raw(Box::new(ArrayPart { buffers, children, _lent: lent.cloned() }));
    ArrowArray {
        length: length as i64,
        null_count: 0,
        offset: 0,
        n_buffers,
        n_children,
        // SAFETY: `part` is the live box just made; its fields stay where they are until freed.
        buffers: unsafe { (*part).buffers.as_mut_ptr() },
        children: unsafe { (*part).children.list() },
        dictionary: std::ptr::null_mut(),
        release: Some(release_exported::<ArrowArray>),
        private_data: part.cast(),
    }
}

/// An exported schema of `format`, named `name` (no NUL), with `children`.
fn export_schema(format: &str, name: &str, children: Children<ArrowSchema>) -> ArrowSchema {
    let n_children = children.len();
    let format = CString::new(format).expect("formats have no NUL");
    let name = CString::new(name).expect("names are checked to have no NUL");
    let (format_ptr, name_ptr) = (format.as_ptr(), name.as_ptr());
    let part = Box::into_raw(Box::new(SchemaPart { _format: format, _name: name, children }));
    ArrowSchema {
        format: format_ptr,
        name: name_ptr,
        metadata: std::ptr::null(),
        flags: 0,
        n_children,
        // SAFETY: as in `export_array`.
        children: unsafe { (*part).children.list() },
        dictionary: std::ptr::null_mut(),
        release: Some(release_exported::<ArrowSchema>),
        private_data: part.cast(),
    }
}

/// Releases an exported struct: marks it released and frees its part, which releases its child
/// (see [`Child`]). A panic (none is expected) is not let out into the consumer's frames.
unsafe extern "C" fn release_exported<T: Exported>(s: *mut T) {
    let Some(s) = s.as_mut() else { return };
    *s.release_slot() = None;
    let part = s.private_data().cast::<T::Part>();
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(Box::from_raw(part))));
}

// ---- import ----------------------------------------------------------------------------------

/// Takes the Arrow array `array` of type `schema` as a LoD tensor, without copying its elements
/// (bool elements are unpacked into a tensor of their own). The chain must have the form
/// [`to_arrow`] makes, with `+l` (32-bit) lists allowed too: its lists become the LoD, each
/// level re-based to 0 (Arrow lets offsets start anywhere), its fixed-size lists the dims after
/// the first. Binary and strings (`z`, `Z`, `u`, `U`) may end the chain in place of the elements,
/// as a last LoD level over their bytes (uint8), and fixed-size binary (`w:n`) as a last dim of n
/// bytes; the bytes are not checked to be UTF-8. Offsets, lengths and array offsets are honoured,
/// so slices of Arrow arrays are taken as they are.
///
/// On success the tensor owns `array`: the caller's struct is marked released (moved, as the
/// interface says), and the array's release callback runs exactly once, when the last tensor over
/// the memory goes, on the thread that drops it (at once for bool). `schema` is only read: it stays
/// the caller's. On failure nothing is taken and `array` is untouched.
///
/// Errors: `NullArgument` (`schema`, `array`; a NULL format, child or buffer that is needed);
/// `InvalidArgument` (a released struct; a negative length, offset or null count; a child count,
/// buffer count or length that does not fit its type; offsets that decrease or leave their
/// child, or binary's offsets past any buffer; a null among the entries taken; misaligned
/// elements); `Unsupported` (a format with no tensor form, a dictionary, a list or binary array
/// inside a fixed-size list, more than `MAX_DIMS` dims or `MAX_DEPTH` arrays);
/// `InvalidLod` (the lists break a LoD rule: the top list needs at least one entry);
/// `OutOfMemory` (sizes that overflow).
///
/// # Safety
/// `schema` and `array` are NULL or valid Arrow C data interface structs of the same type, whose
/// buffers hold what their type and lengths say until the array is released.
pub unsafe fn from_arrow(schema: *const ArrowSchema, array: *mut ArrowArray) -> Result<LoDTensor> {
    take(schema, array, Place::Cpu, "array")
}

/// Takes the Arrow device array `device` (the C device data interface) of type `schema` as a
/// LoD tensor, as [`from_arrow`] takes an array: on the CPU for `ARROW_DEVICE_CPU` and
/// `ARROW_DEVICE_CUDA_HOST` (page-locked host memory), on CUDA device n for `ARROW_DEVICE_CUDA`
/// with id n, where the elements stay on the device (zero copy; bool elements are unpacked from
/// Arrow's bits there, a copy, which the call waits for) and the LoD offsets and validity bits are
/// read from it, in one copy down after one wait where they come to 64 KiB or less (in a record
/// batch, those of every column together; a list below the first is copied whole). Each LoD
/// level is also kept on the device, made there from the producer's offsets by a kernel, so the
/// ops there upload none of it (for bool elements, which do not hold the array, the call waits
/// for those kernels too). A
/// `sync_event` (a `CUevent*` for CUDA and CUDA host memory) is waited for first: by the device's
/// stream, before anything of the library reads the buffers there, and for CUDA host memory by
/// the host too. On success `device.array` is moved out, as
/// [`from_arrow`] moves an array.
///
/// Errors: as [`from_arrow`], with `device` for `array`; `Unsupported` for another device type,
/// a CUDA device in a build without it, or an event on the CPU;
/// `InvalidArgument` for a CUDA device id that is negative or beyond the count (the id is not read
/// on the CPU, nor for CUDA host memory without an event) or buffers the device cannot use;
/// `OutOfMemory` also for no device memory for bool elements, the LoD offsets' copy down or the
/// LoD's copy kept on the device; `Internal` for a CUDA driver failure.
///
/// # Safety
/// As [`from_arrow`]; a `sync_event` points to a live `CUevent` of the device's primary context.
pub unsafe fn from_arrow_device(schema: *const ArrowSchema, device: *mut ArrowDeviceArray) -> Result<LoDTensor> {
    let place = device_place(device)?;
    take(schema, &mut (*device).array, place, "array.array")
}

/// Takes the Arrow record batch `array` (a struct array, `+s`, whose children are the columns)
/// of type `schema` as one LoD tensor a column, each as [`from_arrow`] takes an array: rows
/// `[offset, offset + length)` of the struct are the entries of each column (its sequences at LoD
/// level 0, or its rows). The columns share `array`, which is moved out on success and released
/// once, when the last tensor over its memory goes. On failure nothing is taken.
///
/// Errors: as [`from_arrow`] for each column, named `schema.children[i]` and `array.children[i]`;
/// `InvalidArgument` for a schema that is not a struct, a struct of no columns, a null row, or a
/// column shorter than the struct's rows.
///
/// # Safety
/// As [`from_arrow`].
pub unsafe fn from_arrow_record_batch(schema: *const ArrowSchema, array: *mut ArrowArray) -> Result<Vec<LoDTensor>> {
    take_batch(schema, array, Place::Cpu, "array")
}

/// [`from_arrow_record_batch`] of a device array, on the place and after the event that
/// [`from_arrow_device`] takes an array on and waits for. Bool columns are unpacked on the
/// device, and the call waits for the device once for them all, before it returns (also when it
/// fails: the producer may then release its bits at once).
///
/// # Safety
/// As [`from_arrow_device`].
pub unsafe fn from_arrow_device_record_batch(
    schema: *const ArrowSchema,
    device: *mut ArrowDeviceArray,
) -> Result<Vec<LoDTensor>> {
    let place = device_place(device)?;
    take_batch(schema, &mut (*device).array, place, "array.array")
}

/// The place of a device array's buffers, once its `sync_event` (if any) has been waited for.
unsafe fn device_place(device: *mut ArrowDeviceArray) -> Result<Place> {
    let d = device.as_mut().ok_or_else(|| err!(NullArgument, "array: must not be NULL"))?;
    ensure!(d.array.release.is_some(), InvalidArgument, "array.array: has been released (its release is NULL)");
    // The id names a CUDA device, which the CPU has none of (Arrow's CPU exports say -1).
    let device_id = || {
        i32::try_from(d.device_id)
            .map_err(|_| err!(InvalidArgument, "array.device_id: {} is not a device id", d.device_id))
    };
    let (place, events_on) = match d.device_type {
        DEVICE_CPU => (Place::Cpu, None),
        DEVICE_CUDA_HOST => (Place::Cpu, Some(d.device_id)),
        DEVICE_CUDA => {
            let place = Place::from_dlpack(DEVICE_CUDA, device_id()?).map_err(|e| e.context("array: "))?;
            (place, Some(d.device_id))
        }
        other => {
            return Err(err!(
                Unsupported,
                "array.device_type: {other} is not supported (ARROW_DEVICE_CPU 1, ARROW_DEVICE_CUDA 2 and \
                 ARROW_DEVICE_CUDA_HOST 3 are)"
            ))
        }
    };
    if !d.sync_event.is_null() {
        let ordinal =
            events_on.ok_or_else(|| err!(Unsupported, "array.sync_event: the CPU has no events; it must be NULL"))?;
        let ordinal = u32::try_from(ordinal)
            .map_err(|_| err!(InvalidArgument, "array.device_id: {ordinal} names no device to wait on"))?;
        crate::backend::cuda::wait_event(ordinal, *d.sync_event.cast::<*mut c_void>())
            .map_err(|e| e.context("array.sync_event: "))?;
        if place == Place::Cpu {
            // The host reads page-locked memory itself: it waits, not only the stream.
            crate::backend::cuda::synchronize(ordinal)?;
        }
    }
    Ok(place)
}

/// [`from_arrow`] of `array`, whose buffers are on `place`, named `name` in errors.
unsafe fn take(schema: *const ArrowSchema, array: *mut ArrowArray, place: Place, name: &str) -> Result<LoDTensor> {
    let (schema, root) = roots(schema, array, name)?;
    let layers = read_schema(schema, "schema")?;
    let owner = Owner::new(array);
    let queued = ReadsWaited(&owner);
    let len = count(root.length, name, "length")?;
    let mut plan = Plan::default();
    plan_reads(&layers, root, 0, len, &mut plan);
    let reads = HostReads::new(place, plan)?;
    let (t, on_device) = read_column(&layers, root, 0, len, &reads, name, &owner)?;
    keep_device_levels(&t, &on_device)?;
    queued.wait()?;
    owner.take(array);
    Ok(t)
}

/// [`from_arrow_record_batch`] of `array`, as [`take`] takes one column.
unsafe fn take_batch(
    schema: *const ArrowSchema,
    array: *mut ArrowArray,
    place: Place,
    name: &str,
) -> Result<Vec<LoDTensor>> {
    let (schema, root) = roots(schema, array, name)?;
    let layers = read_batch_schema(schema)?;
    let n = layers.len();
    // The struct's rows, [at, at + len) of each column.
    let len = count(root.length, name, "length")?;
    let at = window(root, 0, len, name)?;
    let mut plan = Plan::default();
    plan_node(root, 1, None, at, len, &mut plan);
    for (i, layers) in layers.iter().enumerate() {
        if let Some(child) = plan_child(root, i) {
            plan_reads(layers, child, at, len, &mut plan);
        }
    }
    let reads = HostReads::new(place, plan)?;
    check_array(root, (1, n as i64), false, &reads, name, at, len)?;
    let owner = Owner::new(array);
    let queued = ReadsWaited(&owner);
    let (mut columns, mut on_device) = (lists::with_capacity(n, "columns")?, lists::with_capacity(n, "columns")?);
    for (i, layers) in layers.iter().enumerate() {
        let path = format!("{name}.children[{i}]");
        let child = &**root.children.add(i);
        let child_len = count(child.length, &path, "length")?;
        ensure!(
            at + len <= child_len,
            InvalidArgument,
            "{path}: length {child_len} is less than the {} rows that its struct's offset and length need",
            at + len
        );
        let (t, levels) = read_column(layers, child, at, len, &reads, &path, &owner)?;
        columns.push(t);
        on_device.push(levels);
    }
    for (t, levels) in columns.iter().zip(&on_device) {
        keep_device_levels(t, levels)?;
    }
    queued.wait()?;
    owner.take(array);
    Ok(columns)
}

/// The number of columns of the record batch type `schema` (a struct of columns that
/// [`from_arrow_record_batch`] takes), read as that call reads it: what a caller sizes its list
/// of tensors by before the array is taken.
///
/// Errors: as [`from_arrow_record_batch`] for the schema.
///
/// # Safety
/// `schema` is NULL or a valid Arrow C data interface schema.
pub unsafe fn record_batch_columns(schema: *const ArrowSchema) -> Result<usize> {
    let schema = schema.as_ref().ok_or_else(|| err!(NullArgument, "schema: must not be NULL"))?;
    ensure!(schema.release.is_some(), InvalidArgument, "schema: has been released (its release is NULL)");
    Ok(read_batch_schema(schema)?.len())
}

/// The chains of a record batch type's columns: `schema` is a struct with at least one child.
unsafe fn read_batch_schema(schema: &ArrowSchema) -> Result<Vec<Vec<Layer>>> {
    ensure!(!schema.format.is_null(), NullArgument, "schema: format is NULL");
    let format = CStr::from_ptr(schema.format).to_string_lossy();
    ensure!(
        format == "+s",
        InvalidArgument,
        "schema: format {format:?} is not a struct (+s); a record batch is a struct of columns (lodtensor_from_arrow \
         takes one column)"
    );
    ensure!(schema.dictionary.is_null(), Unsupported, "schema: is dictionary-encoded; a tensor holds its values");
    let n = count(schema.n_children, "schema", "n_children")?;
    ensure!(n > 0, InvalidArgument, "schema: a struct of no columns; a record batch has at least one");
    ensure!(!schema.children.is_null(), NullArgument, "schema: children is NULL");
    let mut layers = lists::with_capacity(n, "schema.children")?;
    for i in 0..n {
        let path = format!("schema.children[{i}]");
        let child = (*schema.children.add(i)).as_ref().ok_or_else(|| err!(NullArgument, "{path}: is NULL"))?;
        layers.push(read_schema(child, &path)?);
    }
    Ok(layers)
}

/// `schema` and `array` as the structs they point to, refused when NULL or released.
unsafe fn roots<'a>(
    schema: *const ArrowSchema,
    array: *mut ArrowArray,
    name: &str,
) -> Result<(&'a ArrowSchema, &'a ArrowArray)> {
    let schema = schema.as_ref().ok_or_else(|| err!(NullArgument, "schema: must not be NULL"))?;
    let root = array.as_ref().ok_or_else(|| err!(NullArgument, "{name}: must not be NULL"))?;
    ensure!(schema.release.is_some(), InvalidArgument, "schema: has been released (its release is NULL)");
    ensure!(root.release.is_some(), InvalidArgument, "{name}: has been released (its release is NULL)");
    Ok((schema, root))
}

/// Where entries `[start, start + len)` of `node` (counted from its parent's window) are in its
/// buffers: `start` plus its own offset, checked to be within any buffer.
fn window(node: &ArrowArray, start: usize, len: usize, path: &str) -> Result<usize> {
    start
        .checked_add(count(node.offset, path, "offset")?)
        .filter(|at| at.checked_add(len).is_some_and(|end| end <= PAST_ANY_BUFFER))
        .ok_or_else(|| {
            err!(InvalidArgument, "{path}: entries {start}..+{len} after offset {} are past any buffer", node.offset)
        })
}

/// Adds to `plan` what [`read_column`] of the same arguments reads on the host: each array's
/// validity bits where it may have nulls, and each list's offsets. The arrays below the first are
/// planned whole, which holds any window of them that the lists above can take. The plan ends where
/// the chain breaks a rule that the reading will name.
unsafe fn plan_reads(layers: &[Layer], node: &ArrowArray, start: usize, len: usize, plan: &mut Plan) {
    let (mut node, mut start, mut len) = (node, start, len);
    for &layer in layers {
        let Ok(at) = window(node, start, len, "") else { return };
        let offsets = match layer {
            Layer::List { wide } | Layer::Bytes { wide, .. } => Some(offset_width(wide)),
            _ => None,
        };
        plan_node(node, layer.shape().0, offsets, at, len, plan);
        let Some(child) = plan_child(node, 0).filter(|_| matches!(layer, Layer::List { .. } | Layer::Fixed(_))) else {
            return;
        };
        let Ok(child_len) = usize::try_from(child.length) else { return };
        (node, start, len) = (child, 0, child_len);
    }
}

/// Adds to `plan` the validity bits of entries `[at, at + len)` of `node` if it may have nulls,
/// and with `offsets` (their width) the offsets of those entries; nothing unless `node` has the
/// `buffers` of its type.
unsafe fn plan_node(node: &ArrowArray, buffers: i64, offsets: Option<usize>, at: usize, len: usize, plan: &mut Plan) {
    if node.buffers.is_null() || node.n_buffers != buffers {
        return;
    }
    let buffer = |i: usize| if i < buffers as usize { *node.buffers.add(i) } else { std::ptr::null() };
    if node.null_count != 0 && len > 0 && !buffer(0).is_null() {
        plan.add(buffer(0), at / 8, (at + len).div_ceil(8) - at / 8);
    }
    if let Some(width) = offsets.filter(|_| !buffer(1).is_null()) {
        plan.add(buffer(1), at * width, (len + 1) * width);
    }
}

/// Child `i` of `node`, where it has one.
unsafe fn plan_child(node: &ArrowArray, i: usize) -> Option<&ArrowArray> {
    if node.children.is_null() || i as i64 >= node.n_children {
        return None;
    }
    (*node.children.add(i)).as_ref()
}

/// Entries `[start, start + len)` of `node` (whose length holds them), the chain `layers`, as a
/// LoD tensor whose memory `owner` releases (bool elements are copied); its buffers are on
/// `reads`' place, where the host reads them. Errors name `path`. With the tensor, the levels
/// whose offsets lie on a device, outermost first.
unsafe fn read_column(
    layers: &[Layer],
    node: &ArrowArray,
    start: usize,
    len: usize,
    reads: &HostReads,
    path: &str,
    owner: &Arc<Owner>,
) -> Result<(LoDTensor, Vec<DeviceLevel>)> {
    // Walk down the arrays with the window of each that the one above uses: entries
    // [start, start + len) of it, counted from its own offset.
    let (mut levels, mut dims, mut on_device) = (Vec::new(), Vec::new(), Vec::new());
    let (mut node, mut at_path) = (node, String::from(path));
    let (mut start, mut len) = (start, len);
    for (depth, &layer) in layers.iter().enumerate() {
        let at = window(node, start, len, &at_path)?;
        check_array(node, layer.shape(), layer.is_level(), reads, &at_path, at, len)?;
        if dims.is_empty() && !layer.is_level() {
            dims.push(len); // the rows
        }
        let times = |n: usize| {
            let too_big = || err!(OutOfMemory, "{at_path}: {len} entries of {n} items are more than memory holds");
            Ok::<_, crate::error::Error>((
                at.checked_mul(n).ok_or_else(too_big)?,
                len.checked_mul(n).ok_or_else(too_big)?,
            ))
        };
        // The elements, where this array holds them: (buffer, dtype, first, count).
        let elements = match layer {
            Layer::List { wide } => {
                let (first, last, level) = read_offsets(node, wide, reads, at, len, &at_path)?;
                on_device.extend(DeviceLevel::of(node, wide, reads.place(), at, len, first));
                levels.push(level);
                (start, len) = (first, last - first);
                None
            }
            Layer::Fixed(n) => {
                dims.push(n);
                (start, len) = times(n)?;
                None
            }
            Layer::Values(dtype) => Some((1, dtype, at, len)),
            Layer::Bytes { wide, .. } => {
                let (first, last, level) = read_offsets(node, wide, reads, at, len, &at_path)?;
                on_device.extend(DeviceLevel::of(node, wide, reads.place(), at, len, first));
                ensure!(
                    last <= PAST_ANY_BUFFER,
                    InvalidArgument,
                    "{at_path}: offsets[{}] = {last} is past any buffer",
                    at + len
                );
                levels.push(level);
                dims.push(last - first);
                Some((2, DType::U8, first, last - first))
            }
            Layer::FixedBytes(n) => {
                dims.push(n);
                let (first, numel) = times(n)?;
                Some((1, DType::U8, first, numel))
            }
        };
        if let Some((buffer, dtype, first, numel)) = elements {
            ensure!(
                dims.len() <= MAX_DIMS,
                Unsupported,
                "schema: {} dims; a tensor of the library has at most {MAX_DIMS}",
                dims.len()
            );
            let dims = Dim::new(&dims)?;
            let in_array = |e: crate::error::Error| e.context(&format!("{path}: "));
            let lod = if levels.is_empty() { Lod::empty() } else { Lod::from_offsets(levels).map_err(in_array)? };
            check_lod_for_dims(&dims, &lod).map_err(in_array)?;
            let t = read_values(node, buffer, reads.place(), dtype, first, numel, &at_path, dims, lod, owner)?;
            return Ok((t, on_device));
        }
        let child = &**node.children;
        at_path = format!("{at_path}.children[0]");
        let child_len = count(child.length, &at_path, "length")?;
        ensure!(
            start.checked_add(len).is_some_and(|end| end <= child_len),
            InvalidArgument,
            "{at_path}: length {child_len} is less than the {} entries that its parent's {} need",
            start.saturating_add(len),
            if layer.is_level() { "offsets" } else { "lists" }
        );
        debug_assert!(depth + 1 < layers.len());
        node = child;
    }
    unreachable!("read_schema ends the chain in elements")
}

/// A LoD level of an import whose offsets lie on a CUDA device: `count` offsets at `offsets`,
/// `width` bytes each, the first of them `first`.
struct DeviceLevel {
    offsets: *const u8,
    width: usize,
    count: usize,
    first: usize,
}

impl DeviceLevel {
    /// The level that entries `[at, at + len]` of `node`'s offsets make (the first of them
    /// `first`), if they lie on a device.
    unsafe fn of(node: &ArrowArray, wide: bool, place: Place, at: usize, len: usize, first: usize) -> Option<Self> {
        let data = (*node.buffers.add(1)).cast::<u8>();
        let width = offset_width(wide);
        (place != Place::Cpu && !data.is_null()).then(|| DeviceLevel {
            offsets: data.add(at * width),
            width,
            count: len + 1,
            first,
        })
    }
}

/// Keeps each of `levels` (`x`'s, outermost first) as its LoD level's copy on the device, made
/// there by a kernel from the producer's offsets, so that the ops there upload none of them.
/// Called after every fallible step of an import but its wait for the device's reads
/// ([`ReadsWaited`]). The kernels read the producer's offsets: a tensor over the producer's memory
/// holds its array until they have run, but a bool tensor (a copy) does not; its bits' unpacking
/// noted the device's reads ([`read_values`]), so the import's wait, after this, covers these
/// kernels too. When a copy cannot be made (no device memory for it), the call waits for the
/// kernels queued before it and fails: the array is then the caller's again.
fn keep_device_levels(x: &LoDTensor, levels: &[DeviceLevel]) -> Result<()> {
    let Place::Cuda(ordinal) = x.tensor().place() else { return Ok(()) };
    if levels.len() != x.lod().num_levels() {
        return Ok(());
    }
    let keep = |k: usize, level: &DeviceLevel| {
        // SAFETY: the producer's offsets, which the import has read: none less than the first.
        let copy = unsafe {
            crate::backend::cuda::rebase_offsets(ordinal, level.offsets, level.width, level.count, level.first)?
        };
        x.lod().lod_level(k)?.keep_copy(x.tensor().place(), copy);
        Ok(())
    };
    levels.iter().enumerate().try_for_each(|(k, level)| keep(k, level)).inspect_err(|_| {
        let _ = crate::backend::cuda::synchronize(ordinal);
    })
}

/// The end of [`read_column`]: elements `[at, at + numel)` of buffer `buffer` of `node` as the
/// tensor's, of `dims` under `lod` (checked against each other), its memory released by `owner`.
#[allow(clippy::too_many_arguments)]
unsafe fn read_values(
    node: &ArrowArray,
    buffer: usize,
    place: Place,
    dtype: DType,
    at: usize,
    numel: usize,
    path: &str,
    dims: Dim,
    lod: Lod,
    owner: &Arc<Owner>,
) -> Result<LoDTensor> {
    let data = *node.buffers.add(buffer);
    ensure!(numel == 0 || !data.is_null(), NullArgument, "{path}: buffers[{buffer}] is NULL");
    if let (DType::Bool, Place::Cuda(n)) = (dtype, place) {
        // Unpacked on the device, a copy: the producer's bits are released when the import ends
        // (unless another column holds the array), or are the caller's again when it fails, so
        // the import waits for the device's reads before it returns (once for every bool column).
        let first = at / 8;
        if numel > 0 {
            crate::backend::cuda::check_device_buffer(
                n,
                data.cast::<u8>().add(first),
                (at + numel).div_ceil(8) - first,
            )
            .map_err(|e| e.context(&format!("{path}: ")))?;
        }
        let t = crate::backend::cuda::unpack_bits(n, data.cast(), at, dims)?;
        owner.read_queued_on(n);
        return LoDTensor::new(t, lod);
    }
    if dtype == DType::Bool {
        let mut t = Tensor::zeros(dtype, dims)?;
        let bits = data.cast::<u8>();
        for (i, b) in t.bytes_mut()?.iter_mut().enumerate() {
            *b = (*bits.add((at + i) / 8) >> ((at + i) % 8)) & 1;
        }
        return LoDTensor::new(t, lod);
    }
    // At most PAST_ANY_BUFFER entries of at most 8 bytes: no overflow.
    let len = numel * dtype.size();
    // No elements: no address to check or use (producers give any, often unaligned ones).
    let data = if len == 0 { std::ptr::null_mut() } else { data.cast::<u8>().cast_mut().add(at * dtype.size()) };
    let owner = owner.clone();
    let release = Box::new(move || drop(owner)) as crate::memory::Release;
    let tensor =
        Tensor::borrowed(place, dtype, dims, data, len, Some(release)).map_err(|e| e.context(&format!("{path}: ")))?;
    Ok(LoDTensor::new(tensor, lod).expect("the LoD was checked against the dims"))
}

/// The caller's array, copied out at the start of an import and moved out (the caller's
/// `release` set to NULL) only when the import has succeeded. Every tensor over its memory holds
/// it; once moved, it is released when the last of them goes, on the thread that drops it (at
/// once when none does: bool columns are copies). An import that fails drops it without
/// releasing, which leaves the caller's struct as it was.
struct Owner {
    array: Box<ArrowArray>,
    taken: AtomicBool,
    /// The CUDA device that has reads of the array's buffers queued that no one waits for (bool
    /// bits being unpacked), if any: the import waits for them, through [`ReadsWaited`].
    queued_reads: std::sync::Mutex<Option<u32>>,
}

// SAFETY: the interface lets a moved array's owner release it from any thread.
unsafe impl Send for Owner {}
unsafe impl Sync for Owner {}

impl Owner {
    /// # Safety
    /// `array` is a live, unreleased array.
    unsafe fn new(array: *const ArrowArray) -> Arc<Owner> {
        Arc::new(Owner {
            array: Box::new(std::ptr::read(array)),
            taken: AtomicBool::new(false),
            queued_reads: std::sync::Mutex::new(None),
        })
    }

    /// Notes that CUDA device `ordinal` has reads of the array's buffers queued.
    fn read_queued_on(&self, ordinal: u32) {
        *self.queued_reads.lock().unwrap_or_else(|e| e.into_inner()) = Some(ordinal);
    }

    /// Moves the array out of the caller's struct, `array`.
    unsafe fn take(self: Arc<Owner>, array: *mut ArrowArray) {
        self.taken.store(true, Ordering::Relaxed);
        (*array).release = None;
    }
}

/// The import's wait for the device reads of an [`Owner`]'s array that it queued: once, before the
/// import returns, on every path. On success it is [`ReadsWaited::wait`], before the array is moved
/// out; when the import fails, the drop, since the caller may release its array as soon as it has
/// the status (a failed wait then has nothing left to do but return).
struct ReadsWaited<'a>(&'a Owner);

impl ReadsWaited<'_> {
    /// Waits for the queued reads, if any.
    fn wait(self) -> Result<()> {
        self.wait_queued()
    }

    fn wait_queued(&self) -> Result<()> {
        let queued = self.0.queued_reads.lock().unwrap_or_else(|e| e.into_inner()).take();
        match queued {
            Some(ordinal) => crate::backend::cuda::synchronize(ordinal),
            None => Ok(()),
        }
    }
}

impl Drop for ReadsWaited<'_> {
    fn drop(&mut self) {
        let _ = self.wait_queued();
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        if *self.taken.get_mut() {
            if let Some(release) = self.array.release {
                // SAFETY: the array was moved here and is released once, here.
                unsafe { release(&mut *self.array) };
            }
        }
    }
}

/// The layers of `schema`'s chain, checked to make a LoD tensor: lists, then fixed-size lists,
/// then elements, no dictionaries.
unsafe fn read_schema(schema: &ArrowSchema, path: &str) -> Result<Vec<Layer>> {
    let mut layers = Vec::new();
    let (mut node, mut path) = (schema, String::from(path));
    loop {
        ensure!(!node.format.is_null(), NullArgument, "{path}: format is NULL");
        let format = CStr::from_ptr(node.format).to_string_lossy();
        let layer = Layer::parse(&format).map_err(|e| e.context(&format!("{path}: ")))?;
        ensure!(node.dictionary.is_null(), Unsupported, "{path}: is dictionary-encoded; a tensor holds its values");
        if let (true, Some(Layer::Fixed(n))) = (layer.is_level(), layers.last()) {
            return Err(err!(
                Unsupported,
                "{path}: a list or binary array inside a fixed-size list (+w:{n}) has no tensor form; a LoD \
                 tensor's lists are outermost"
            ));
        }
        layers.push(layer);
        ensure!(
            layers.len() <= MAX_DEPTH,
            Unsupported,
            "{path}: the chain is deeper than the {MAX_DEPTH} arrays a tensor can be"
        );
        let want = layer.shape().1;
        ensure!(
            node.n_children == want,
            InvalidArgument,
            "{path}: format {format:?} has {want} child(ren), n_children is {}",
            node.n_children
        );
        if want == 0 {
            return Ok(layers);
        }
        ensure!(!node.children.is_null(), NullArgument, "{path}: children is NULL");
        path = format!("{path}.children[0]");
        node = (*node.children).as_ref().ok_or_else(|| err!(NullArgument, "{path}: is NULL"))?;
    }
}

/// A non-negative int64 field as a count.
fn count(value: i64, path: &str, field: &str) -> Result<usize> {
    usize::try_from(value).map_err(|_| err!(InvalidArgument, "{path}: {field} {value} is negative"))
}

/// Checks `node`'s counts against `(buffers, children)` of its type, its buffers (`offsets`: it has
/// offsets, needed for any entry) and children, and that entries `[at, at + len)` of its
/// buffers (its offset included) have no nulls.
unsafe fn check_array(
    node: &ArrowArray,
    (buffers, children): (i64, i64),
    offsets: bool,
    reads: &HostReads,
    path: &str,
    at: usize,
    len: usize,
) -> Result<()> {
    ensure!(
        node.n_buffers == buffers && node.n_children == children,
        InvalidArgument,
        "{path}: has {} buffer(s) and {} child(ren); its type has {buffers} and {children}",
        node.n_buffers,
        node.n_children
    );
    ensure!(!node.buffers.is_null(), NullArgument, "{path}: buffers is NULL");
    ensure!(node.dictionary.is_null(), Unsupported, "{path}: has a dictionary; a tensor holds its values");
    if children > 0 {
        ensure!(!node.children.is_null(), NullArgument, "{path}: children is NULL");
        if let Some(i) = (0..children as usize).find(|&i| (*node.children.add(i)).is_null()) {
            return Err(err!(NullArgument, "{path}: child {i} is NULL"));
        }
    }
    ensure!(node.null_count >= -1, InvalidArgument, "{path}: null_count {} is negative", node.null_count);
    let validity = (*node.buffers).cast::<u8>();
    if node.null_count != 0 {
        // -1 (not counted) and a validity buffer: read the bits of the entries used.
        ensure!(
            !validity.is_null() || node.null_count == -1,
            InvalidArgument,
            "{path}: null_count is {} without a validity buffer",
            node.null_count
        );
        if !validity.is_null() && len > 0 {
            let first = at / 8;
            let bits = reads.read(validity.cast(), first, (at + len).div_ceil(8) - first, path)?;
            if let Some(i) = (at..at + len).find(|&i| bits[i / 8 - first] >> (i % 8) & 1 == 0) {
                return Err(err!(
                    InvalidArgument,
                    "{path}: entry {} is null; a tensor has no nulls",
                    i - node.offset as usize
                ));
            }
        }
    }
    ensure!(!offsets || len == 0 || !(*node.buffers.add(1)).is_null(), NullArgument, "{path}: buffers[1] is NULL");
    Ok(())
}

/// The bytes of one offset of a list or binary array: 8 for 64-bit (`wide`) offsets, else 4.
fn offset_width(wide: bool) -> usize {
    if wide {
        8
    } else {
        4
    }
}

/// Entries `[at, at + len]` of a list's offsets: `(first, last, level)`, the level re-based to 0.
/// A list of no entries may have no offsets buffer.
unsafe fn read_offsets(
    node: &ArrowArray,
    wide: bool,
    reads: &HostReads,
    at: usize,
    len: usize,
    path: &str,
) -> Result<(usize, usize, Vec<usize>)> {
    let data = *node.buffers.add(1);
    if data.is_null() {
        return Ok((0, 0, vec![0])); // no entries (check_array allows NULL only then)
    }
    let width = offset_width(wide);
    let bytes = reads.read(data, at * width, (len + 1) * width, path)?;
    let read = |i: usize| -> i64 {
        let b = &bytes[i * width..(i + 1) * width];
        if wide {
            i64::from_ne_bytes(b.try_into().expect("8 bytes"))
        } else {
            i64::from(i32::from_ne_bytes(b.try_into().expect("4 bytes")))
        }
    };
    let mut level = Vec::new();
    level
        .try_reserve_exact(len + 1)
        .map_err(|_| err!(OutOfMemory, "{path}: {len} offsets are more than memory holds"))?;
    let first = read(0);
    ensure!(first >= 0, InvalidArgument, "{path}: offsets[{at}] = {first} is negative");
    let mut last = first;
    for i in 0..=len {
        let o = read(i);
        ensure!(
            o >= last,
            InvalidArgument,
            "{path}: offsets[{}] = {o} is less than offsets[{}] = {last}; offsets must not decrease",
            at + i,
            at + i - 1
        );
        level.push((o - first) as usize);
        last = o;
    }
    Ok((first as usize, last as usize, level))
}
