//! The Arrow C data interface: lending a LoD tensor to Arrow, and taking Arrow's arrays, without
//! copying the elements.

use super::args::{self, Out};
use super::boundary;
use super::tensor::{into_handle, lodtensor_t, new_handle, tensors_of};
use super::types::lodtensor_status_t;
use crate::error::{ensure, err, Result};
use crate::interop::arrow::{self, from_arrow, from_arrow_device, to_arrow, to_arrow_device};
use crate::lod_tensor::LoDTensor;
use crate::memory::lists;
use std::ffi::{c_char, CStr};
use std::ptr::null;

/// Arrow's schema struct, opaque here; the header defines it under Arrow's own guard
/// (`ARROW_C_DATA_INTERFACE`, cbindgen.toml).
pub struct ArrowSchema {
    _opaque: [u8; 0],
}

/// Arrow's array struct, as `ArrowSchema`.
pub struct ArrowArray {
    _opaque: [u8; 0],
}

/// The C device data interface's array struct, as `ArrowSchema` (under
/// `ARROW_C_DEVICE_DATA_INTERFACE`).
pub struct ArrowDeviceArray {
    _opaque: [u8; 0],
}

/// Fills `*out_schema` and `*out_array` (structs the caller provides, as the interface has it)
/// with `t` as an Arrow array that shares its memory, zero copy: one `large_list` (`+L`) per LoD
/// level, outermost first, whose int64 offsets are the level's; then one `fixed_size_list`
/// (`+w:n`) per dim after the first; then the elements (`b`, `C`, `c`, `s`, `i`, `l`, `e`, `f`
/// or `g`). So one LoD level over `[N, D]` float rows is `large_list<fixed_size_list<float, D>>`
/// of one entry per sequence; a tensor without LoD is an array of its rows. Bool elements are
/// packed into Arrow's bits (a copy); every other dtype's elements are `t`'s memory, written
/// through it and every handle sharing it. Nothing is nullable and there are no nulls (validity
/// buffers NULL); the root is named "" and the children "item". The caller releases each struct
/// once, with its `release` callback, from any thread (moving children out as the interface
/// allows); the memory stays until the array is released, also after `t` is destroyed.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`t`, `out_schema`, `out_array`), LODTENSOR_UNSUPPORTED (a
/// CUDA tensor, whose memory the interface cannot carry: lend it with
/// `lodtensor_to_arrow_device`, or copy it with `lodtensor_to_place` first; bfloat16, which has
/// no Arrow type), LODTENSOR_INVALID_ARGUMENT (a 0-d tensor, which has no rows),
/// LODTENSOR_OUT_OF_MEMORY (no memory for the bits of bool elements). On failure neither struct is
/// written.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_to_arrow(
    t: *const lodtensor_t,
    out_schema: *mut ArrowSchema,
    out_array: *mut ArrowArray,
) -> lodtensor_status_t {
    lend(t, out_schema, out_array.cast::<arrow::ArrowArray>(), to_arrow)
}

/// Fills `*out_schema` and `*out_array` with `t` as an Arrow device array (the C device data
/// interface) that shares its memory, zero copy, in the form `lodtensor_to_arrow` makes. A host
/// tensor is lent as `lodtensor_to_arrow` lends it, with `device_type` ARROW_DEVICE_CPU and
/// `device_id` -1 (no device, as Arrow's own CPU exports say). A tensor on CUDA device n is lent
/// with `device_type` ARROW_DEVICE_CUDA and `device_id` n: its elements and its LoD offsets (the
/// int64 copies the LoD keeps on the device, uploaded at their first use there) are device
/// memory (bool elements are packed into Arrow's bits there, a copy), and the call waits for the
/// work queued on the device, so `sync_event` is NULL and the buffers can be read at once.
/// `reserved` is zeroed. The caller releases the schema and `out_array->array` once each, as for
/// `lodtensor_to_arrow`; the memory stays until the array is released.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`t`, `out_schema`, `out_array`), LODTENSOR_UNSUPPORTED
/// (bfloat16, which has no Arrow type), LODTENSOR_INVALID_ARGUMENT (a 0-d tensor),
/// LODTENSOR_OUT_OF_MEMORY (no host or device memory for the bits of bool elements),
/// LODTENSOR_INTERNAL (a CUDA driver failure, named in the message). On failure neither struct is
/// written.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_to_arrow_device(
    t: *const lodtensor_t,
    out_schema: *mut ArrowSchema,
    out_array: *mut ArrowDeviceArray,
) -> lodtensor_status_t {
    lend(t, out_schema, out_array.cast::<arrow::ArrowDeviceArray>(), to_arrow_device)
}

/// `lodtensor_to_arrow_strings` and a record batch's text column: any bytes, as `large_binary`.
pub const LODTENSOR_ARROW_BINARY: i32 = 0;
/// `lodtensor_to_arrow_strings` and a record batch's text column: UTF-8 text, as `large_utf8`,
/// each string checked.
pub const LODTENSOR_ARROW_UTF8: i32 = 1;
/// A record batch's column as `lodtensor_to_arrow` lends a tensor (uint8 as `uint8`); no strings.
pub const LODTENSOR_ARROW_VALUES: i32 = 2;

/// The encoding `encoding` (a LODTENSOR_ARROW_* constant); errors name it `arg`.
fn encoding_of(encoding: i32, arg: &str) -> Result<arrow::Encoding> {
    match encoding {
        LODTENSOR_ARROW_BINARY => Ok(arrow::Encoding::Binary),
        LODTENSOR_ARROW_UTF8 => Ok(arrow::Encoding::Utf8),
        LODTENSOR_ARROW_VALUES => Ok(arrow::Encoding::Values),
        other => Err(err!(
            InvalidArgument,
            "{arg}: {other} is not LODTENSOR_ARROW_BINARY (0), LODTENSOR_ARROW_UTF8 (1) or LODTENSOR_ARROW_VALUES (2)"
        )),
    }
}

/// Fills `*out_schema` and `*out_array` with `t`, a 1-d uint8 tensor with a LoD (bytes, such as
/// text that `lodtensor_from_arrow` took from Arrow strings), as Arrow strings that share its
/// memory, zero copy: its last LoD level's sequences are the strings, one `large_utf8` (`U`,
/// `encoding` LODTENSOR_ARROW_UTF8) or `large_binary` (`Z`, LODTENSOR_ARROW_BINARY) array whose
/// int64 offsets are that level's and whose bytes are `t`'s elements; the levels above it are
/// `large_list`s as `lodtensor_to_arrow` makes them. So one level of sentences is a `large_utf8`
/// of one string a sentence. UTF-8 is checked string by string, as Arrow's strings must be; binary
/// takes any bytes. Released as `lodtensor_to_arrow`'s structs.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`t`, `out_schema`, `out_array`), LODTENSOR_UNSUPPORTED (a
/// CUDA tensor: lend it with `lodtensor_to_arrow_device_strings`), LODTENSOR_INVALID_ARGUMENT (an
/// `encoding` other than the two, LODTENSOR_ARROW_VALUES among them; a dtype other than uint8; a
/// tensor that is not 1-d or has no LoD; for UTF-8, a string that is not UTF-8, the message naming
/// its sequence and the byte where it breaks). On failure neither struct is written.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_to_arrow_strings(
    t: *const lodtensor_t,
    encoding: i32,
    out_schema: *mut ArrowSchema,
    out_array: *mut ArrowArray,
) -> lodtensor_status_t {
    lend(t, out_schema, out_array.cast::<arrow::ArrowArray>(), |t| {
        arrow::to_arrow_strings(t, encoding_of(encoding, "encoding")?)
    })
}

/// `lodtensor_to_arrow_strings` through the C device data interface, as
/// `lodtensor_to_arrow_device` lends a tensor: a host tensor on ARROW_DEVICE_CPU; on CUDA device n
/// the offsets and bytes are device memory and the call waits for the device's work, so
/// `sync_event` is NULL. UTF-8 on a device is checked there, by a kernel; only text that is not
/// UTF-8 is copied to the host, to name the string that breaks.
///
/// Returns as `lodtensor_to_arrow_strings` (but for CUDA tensors), and on a device
/// LODTENSOR_OUT_OF_MEMORY (no device memory for the check, or no host memory for the bytes of
/// text that is not UTF-8) and LODTENSOR_INTERNAL (a CUDA driver failure).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_to_arrow_device_strings(
    t: *const lodtensor_t,
    encoding: i32,
    out_schema: *mut ArrowSchema,
    out_array: *mut ArrowDeviceArray,
) -> lodtensor_status_t {
    lend(t, out_schema, out_array.cast::<arrow::ArrowDeviceArray>(), |t| {
        arrow::to_arrow_device_strings(t, encoding_of(encoding, "encoding")?)
    })
}

/// `export` of `t` written into the caller's structs, only when it succeeds.
unsafe fn lend<A>(
    t: *const lodtensor_t,
    out_schema: *mut ArrowSchema,
    out_array: *mut A,
    export: impl FnOnce(&LoDTensor) -> crate::Result<(arrow::ArrowSchema, A)>,
) -> lodtensor_status_t {
    boundary(|| {
        let t = &args::get(t, "t")?.inner;
        let out_schema = Out::new(out_schema.cast::<arrow::ArrowSchema>(), "out_schema")?;
        let out_array = Out::new(out_array, "out_array")?;
        let (schema, array) = export(t)?;
        out_schema.write(schema);
        out_array.write(array);
        Ok(())
    })
}

/// Takes the Arrow array `*array` of type `*schema` as a new LoD tensor, zero copy: the form
/// `lodtensor_to_arrow` makes, with `list` (`+l`, int32 offsets) accepted as well as
/// `large_list`. The lists, outermost first, become the LoD (each level re-based to start at 0,
/// as Arrow's offsets need not), the fixed-size lists the dims after the first, and the
/// elements, from the array offsets and lengths given (slices of Arrow arrays are taken as they
/// are), the tensor's. Bool elements are unpacked into a tensor of their own (a copy). Binary and
/// strings (`binary`, `utf8` and their large forms: `z`, `u`, `Z`, `U`) may stand in place of the
/// elements, as a last LoD level over their bytes (uint8, zero copy, not checked to be UTF-8), and
/// fixed-size binary (`w:n`) as a last dim of n bytes: a column of sentences is a one-level
/// uint8 tensor of their bytes.
///
/// On success the library owns the array: `array->release` is set to NULL (the array is moved
/// out, as the interface says), and its release callback runs exactly once, when the last handle
/// over the memory (this one, its shares, slices and split pieces) is destroyed, on the thread
/// that destroys it (for bool, before this call returns). `*schema` is only read and stays the
/// caller's to release. On failure nothing is taken: `*array` is untouched and `*out` not
/// written.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`schema`, `array`, `out`; a NULL format, children, child or
/// buffer that the type needs), LODTENSOR_INVALID_ARGUMENT (a released schema or array; a
/// negative length, offset or null count, or an offset past any buffer; a child count, buffer
/// count or length that does not fit the type; offsets that decrease or run past their child,
/// or binary offsets past any buffer; a null among the entries taken; a fixed-size list or binary
/// format without a size; elements not aligned to their size), LODTENSOR_UNSUPPORTED (a format
/// with no tensor form, such as a struct, string view or unsigned 16-64 bit type; a dictionary; a
/// list or binary array inside a fixed-size list; more than
/// `LODTENSOR_MAX_DIMS` dims; a chain over 64 arrays deep), LODTENSOR_INVALID_LOD (the lists
/// break a LoD rule: the outermost needs at least one entry), LODTENSOR_OUT_OF_MEMORY (sizes that
/// overflow, or no memory for the LoD or bool elements).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_from_arrow(
    schema: *const ArrowSchema,
    array: *mut ArrowArray,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let out = Out::new(out, "out")?;
        let t = from_arrow(schema.cast::<arrow::ArrowSchema>(), array.cast::<arrow::ArrowArray>())?;
        new_handle(out, t);
        Ok(())
    })
}

/// Takes the Arrow device array `*array` (the C device data interface) of type `*schema` as a
/// new LoD tensor, zero copy, as `lodtensor_from_arrow` takes an array: on the CPU for
/// ARROW_DEVICE_CPU and ARROW_DEVICE_CUDA_HOST (page-locked host memory); on CUDA device n for
/// ARROW_DEVICE_CUDA with `device_id` n, where the elements stay in the producer's device memory
/// (bool elements are unpacked from Arrow's bits on the device, a copy the call waits for) and
/// the LoD offsets (and any validity bits) are read from the device, in one copy down after one
/// wait where they come to 64 KiB or less (in a record batch, those of every column together;
/// a list below the first is copied whole), and each LoD level is kept on the device too, made
/// there from the producer's offsets by a kernel, so that ops there upload none of it. A non-NULL
/// `sync_event` (a `cudaEvent_t*`, of the device's primary context) is waited for before anything
/// reads the buffers: the device's stream waits for it (and, for CUDA host memory, the host too). On
/// success `array->array` is moved out (its `release` becomes NULL) and released once, when the
/// last handle over the memory goes (for a CUDA tensor, after the work queued on the device);
/// `*schema` stays the caller's. On failure nothing is taken and `*out` is not written.
///
/// Returns what `lodtensor_from_arrow` returns, naming `array.array` for the array, and
/// LODTENSOR_UNSUPPORTED (another device type; a CUDA device in a build without CUDA; a
/// `sync_event` on ARROW_DEVICE_CPU), LODTENSOR_INVALID_ARGUMENT (on ARROW_DEVICE_CUDA, or with a
/// `sync_event` on ARROW_DEVICE_CUDA_HOST, a `device_id` that is negative or beyond the device
/// count; device buffers the device cannot use; on the CPU the id is not read),
/// LODTENSOR_OUT_OF_MEMORY (no device memory for bool elements, for the LoD offsets' copy down or
/// for the LoD's copy kept on the device), LODTENSOR_INTERNAL (a CUDA driver failure, such as an
/// event it does not know).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_from_arrow_device(
    schema: *const ArrowSchema,
    array: *mut ArrowDeviceArray,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let out = Out::new(out, "out")?;
        let t = from_arrow_device(schema.cast::<arrow::ArrowSchema>(), array.cast::<arrow::ArrowDeviceArray>())?;
        new_handle(out, t);
        Ok(())
    })
}

/// Fills `*out_schema` and `*out_array` with `num_columns` tensors as one Arrow record batch that
/// shares their memory, zero copy: a struct array (`+s`, named "", no nulls) whose child i is
/// `columns[i]` in the form `lodtensor_to_arrow` makes, named `names[i]` (UTF-8). Each column has
/// one entry per row of the batch: its sequences at LoD level 0, or its rows when it has no LoD;
/// so a decoder's `out_ids` and `out_scores` make a batch of one row per source. pyarrow takes it
/// with `pyarrow.RecordBatch._import_from_c`. The caller releases each struct once, as for
/// `lodtensor_to_arrow`; a column moved out of the struct keeps its memory until its own release.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`columns`, `names`, a column or a name, `out_schema`,
/// `out_array`), LODTENSOR_INVALID_ARGUMENT (`num_columns` 0; a 0-d column; a column whose entries
/// are not as many as `columns[0]`'s; a name that is not UTF-8), LODTENSOR_UNSUPPORTED (a CUDA
/// column: lend the batch with `lodtensor_to_arrow_device_record_batch`; bfloat16),
/// LODTENSOR_OUT_OF_MEMORY (no memory for the list of columns or a column's bool bits). Errors
/// name the column (`columns[i]`). On failure neither struct is written.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_to_arrow_record_batch(
    columns: *const *const lodtensor_t,
    names: *const *const c_char,
    num_columns: usize,
    out_schema: *mut ArrowSchema,
    out_array: *mut ArrowArray,
) -> lodtensor_status_t {
    lend_batch(columns, names, null(), num_columns, out_schema, out_array.cast(), arrow::to_arrow_record_batch)
}

/// `lodtensor_to_arrow_record_batch` with a form for each column, so that a batch can hold text:
/// `encodings[i]` LODTENSOR_ARROW_VALUES lends `columns[i]` as `lodtensor_to_arrow` lends a
/// tensor, LODTENSOR_ARROW_UTF8 and LODTENSOR_ARROW_BINARY as `lodtensor_to_arrow_strings` does
/// (a 1-d uint8 column with a LoD; its last level's sequences are the strings, UTF-8 checked
/// string by string). `encodings` NULL lends every column as values, as
/// `lodtensor_to_arrow_record_batch`. A decoder's output text (one level: a string a source) and
/// its scores make one batch of a row per source.
///
/// Returns what `lodtensor_to_arrow_record_batch` returns, and LODTENSOR_INVALID_ARGUMENT for an
/// `encodings[i]` that is none of the three or a text column that `lodtensor_to_arrow_strings`
/// refuses (the message naming `columns[i]`). On failure neither struct is written.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_to_arrow_record_batch_encoded(
    columns: *const *const lodtensor_t,
    names: *const *const c_char,
    encodings: *const i32,
    num_columns: usize,
    out_schema: *mut ArrowSchema,
    out_array: *mut ArrowArray,
) -> lodtensor_status_t {
    lend_batch(columns, names, encodings, num_columns, out_schema, out_array.cast(), arrow::to_arrow_record_batch)
}

/// `lodtensor_to_arrow_record_batch` through the C device data interface, as
/// `lodtensor_to_arrow_device` lends one tensor: every column on one place. On the CPU the
/// batch is the host batch, with `device_type` ARROW_DEVICE_CPU and `device_id` -1; on CUDA device
/// n, ARROW_DEVICE_CUDA and n, every column's elements and LoD offsets device memory, and the call
/// waits for the work queued on the device (`sync_event` NULL). pyarrow takes it with
/// `pyarrow.RecordBatch._import_from_c_device`, cuDF with its device interface.
///
/// Returns what `lodtensor_to_arrow_record_batch` returns, but for CUDA columns:
/// LODTENSOR_INVALID_ARGUMENT also for a column on another place than `columns[0]` (naming both),
/// LODTENSOR_OUT_OF_MEMORY also for no device memory for a bool column's bits,
/// LODTENSOR_INTERNAL for a CUDA driver failure.
/// On failure neither struct is written.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_to_arrow_device_record_batch(
    columns: *const *const lodtensor_t,
    names: *const *const c_char,
    num_columns: usize,
    out_schema: *mut ArrowSchema,
    out_array: *mut ArrowDeviceArray,
) -> lodtensor_status_t {
    lend_batch(columns, names, null(), num_columns, out_schema, out_array.cast(), arrow::to_arrow_device_record_batch)
}

/// `lodtensor_to_arrow_device_record_batch` with a form for each column, as
/// `lodtensor_to_arrow_record_batch_encoded` takes them: text columns on a CUDA device are lent as
/// `lodtensor_to_arrow_device_strings` lends them (UTF-8 checked on the device).
///
/// Returns what `lodtensor_to_arrow_device_record_batch` and
/// `lodtensor_to_arrow_record_batch_encoded` return, and for a CUDA text column what
/// `lodtensor_to_arrow_device_strings` returns. On failure neither struct is written.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_to_arrow_device_record_batch_encoded(
    columns: *const *const lodtensor_t,
    names: *const *const c_char,
    encodings: *const i32,
    num_columns: usize,
    out_schema: *mut ArrowSchema,
    out_array: *mut ArrowDeviceArray,
) -> lodtensor_status_t {
    let export = arrow::to_arrow_device_record_batch;
    lend_batch(columns, names, encodings, num_columns, out_schema, out_array.cast(), export)
}

/// `export` of the caller's columns, names and encodings (NULL: every column as values), written
/// into the caller's structs only when it succeeds.
unsafe fn lend_batch<A>(
    columns: *const *const lodtensor_t,
    names: *const *const c_char,
    encodings: *const i32,
    num_columns: usize,
    out_schema: *mut ArrowSchema,
    out_array: *mut A,
    export: fn(&[arrow::Column]) -> Result<(arrow::ArrowSchema, A)>,
) -> lodtensor_status_t {
    boundary(|| {
        let tensors = tensors_of(args::slice(columns, num_columns, "columns")?, "columns")?;
        let names = args::slice(names, num_columns, "names")?;
        let encodings = if encodings.is_null() { &[][..] } else { args::slice(encodings, num_columns, "encodings")? };
        let out_schema = Out::new(out_schema.cast::<arrow::ArrowSchema>(), "out_schema")?;
        let out_array = Out::new(out_array, "out_array")?;
        let mut named = lists::with_capacity(num_columns, "columns")?;
        for (i, (&x, &name)) in tensors.iter().zip(names).enumerate() {
            ensure!(!name.is_null(), NullArgument, "names[{i}]: must not be NULL");
            let name = CStr::from_ptr(name)
                .to_str()
                .map_err(|_| err!(InvalidArgument, "names[{i}]: is not UTF-8; Arrow's field names are"))?;
            let encoding = match encodings.get(i) {
                Some(&e) => encoding_of(e, &format!("encodings[{i}]"))?,
                None => arrow::Encoding::Values,
            };
            named.push((x, name, encoding));
        }
        let (schema, array) = export(&named)?;
        out_schema.write(schema);
        out_array.write(array);
        Ok(())
    })
}

/// Takes the Arrow record batch `*array` (a struct array, `+s`, of type `*schema`) as one new
/// LoD tensor a column, zero copy, each column as `lodtensor_from_arrow` takes an array: the
/// struct's rows (from its offset, `length` of them) are the entries of every column, its
/// sequences at LoD level 0 or, without a list, its rows. This is what
/// `pyarrow.RecordBatch._export_to_c` and Arrow C++'s `ExportRecordBatch` give.
/// `out_columns` must hold a handle a column (`schema->n_children`); the columns are written
/// there in the struct's order, and their count into `*out_count`. The columns share the array:
/// on success `array->release` is set to NULL (moved out) and the array is released once, when
/// the last handle over any column's memory is destroyed (at once when every column is bool,
/// which is copied). `*schema` stays the caller's. On failure nothing is taken: `*array` is
/// untouched and no output is written.
///
/// Returns what `lodtensor_from_arrow` returns for a column (naming `schema.children[i]` and
/// `array.children[i]`), LODTENSOR_NULL_ARGUMENT (`out_count`; `out_columns` when
/// `out_columns_len` is not 0; NULL children of the struct), LODTENSOR_INVALID_ARGUMENT (a schema
/// that is not a struct; a struct of no columns; a struct whose buffer or child count is not its
/// type's; a null row; a column shorter than the struct's offset and length),
/// LODTENSOR_BUFFER_TOO_SMALL (`out_columns_len` less than the columns, which are counted from the
/// schema before the array is read).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_from_arrow_record_batch(
    schema: *const ArrowSchema,
    array: *mut ArrowArray,
    out_columns: *mut *mut lodtensor_t,
    out_columns_len: usize,
    out_count: *mut usize,
) -> lodtensor_status_t {
    take_batch(schema, array.cast(), out_columns, out_columns_len, out_count, |s, a| unsafe {
        arrow::from_arrow_record_batch(s, a)
    })
}

/// Takes the Arrow device record batch `*array` (the C device data interface) as
/// `lodtensor_from_arrow_record_batch` takes a record batch, on the place and after the
/// `sync_event` that `lodtensor_from_arrow_device` takes an array on and waits for: every
/// column's elements stay where the producer's are (on CUDA device n for ARROW_DEVICE_CUDA with
/// `device_id` n); bool columns are unpacked there, and the call waits for the device once for
/// them all, before it returns (also when it fails). On success `array->array` is moved out; on
/// failure nothing is taken.
///
/// Returns what `lodtensor_from_arrow_record_batch` and `lodtensor_from_arrow_device` return.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_from_arrow_device_record_batch(
    schema: *const ArrowSchema,
    array: *mut ArrowDeviceArray,
    out_columns: *mut *mut lodtensor_t,
    out_columns_len: usize,
    out_count: *mut usize,
) -> lodtensor_status_t {
    take_batch(schema, array.cast(), out_columns, out_columns_len, out_count, |s, a| unsafe {
        arrow::from_arrow_device_record_batch(s, a)
    })
}

/// `import` of the caller's record batch, its columns written into `out_columns` only when it
/// succeeds, after the schema's column count was checked against the room there.
unsafe fn take_batch<A>(
    schema: *const ArrowSchema,
    array: *mut A,
    out_columns: *mut *mut lodtensor_t,
    out_columns_len: usize,
    out_count: *mut usize,
    import: impl FnOnce(*const arrow::ArrowSchema, *mut A) -> Result<Vec<LoDTensor>>,
) -> lodtensor_status_t {
    boundary(|| {
        let schema = schema.cast::<arrow::ArrowSchema>();
        ensure!(
            !out_columns.is_null() || out_columns_len == 0,
            NullArgument,
            "out_columns: must not be NULL when out_columns_len is {out_columns_len}"
        );
        let out_count = Out::new(out_count, "out_count")?;
        let n = arrow::record_batch_columns(schema)?;
        ensure!(
            out_columns_len >= n,
            BufferTooSmall,
            "out_columns: holds {out_columns_len} handle(s), the record batch has {n} columns"
        );
        let slots = args::out_array(out_columns, n, "out_columns")?;
        let columns = import(schema, array)?;
        for (slot, column) in slots.iter_mut().zip(columns) {
            *slot = into_handle(column);
        }
        out_count.write(n);
        Ok(())
    })
}
