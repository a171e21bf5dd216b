"""arrow_pyarrow: the library's Arrow C data interface against an independent implementation, pyarrow's.

    python3 arrow_pyarrow.py path/to/liblodtensor.so

Through ctypes and pyarrow's C data interface entry points (Array._import_from_c, _export_to_c):
tensors of every dtype with an Arrow type, with LoDs of 0, 1 and 2 levels, lent to pyarrow (the
nesting the header documents, the same values, the same memory, kept alive after the handle goes
and released exactly once when both are gone); pyarrow's lists, large lists, fixed-size lists,
primitive arrays and slices of them taken by lodtensor_from_arrow (dims, LoD and elements as
pyarrow reads them, the same memory, pyarrow's memory released when the last handle goes and not
before); pyarrow's strings, binary and fixed-size binary taken as their bytes (uint8, a LoD level
for the strings' offsets, zero copy), and text lent as pyarrow's large strings and large binary
(lodtensor_to_arrow_strings); and arrays with no tensor form refused with nothing taken. The same through the C device
data interface on the CPU (lodtensor_to_arrow_device into Array._import_from_c_device, for a few of
the export cases; _export_to_c_device into lodtensor_from_arrow_device, for every import case):
the device fields lodtensor_to_arrow_device writes (ARROW_DEVICE_CPU, device -1, no sync event,
reserved zeroed), and a device type the library does not take refused with nothing taken. Record
batches both ways, plainly and through the device interface (lodtensor_to_arrow_record_batch into
RecordBatch._import_from_c, _export_to_c into lodtensor_from_arrow_record_batch): names, each
column as a lone export or import makes it, the memory shared and released once, slices of a batch,
and refusals (a string view column, a null, a null row, an array that is not a struct, too little room)
with nothing taken. Exits 77 (skipped) when pyarrow is missing, unless LODTENSOR_REQUIRE_PYARROW=1.
"""

import ctypes
import gc
import os
import struct
import sys

try:
    import pyarrow as pa
except ImportError:
    print("arrow_pyarrow: pyarrow is not installed; skipped")
    sys.exit(1 if os.environ.get("LODTENSOR_REQUIRE_PYARROW") == "1" else 77)

failures = 0
passed = 0


def check(ok, what):
    global failures, passed
    if ok:
        passed += 1
    else:
        failures += 1
        print(f"FAILED: {what}", file=sys.stderr)


# Arrow's abi.h. The release callbacks are kept as plain addresses: NULL is how a struct says it
# has been released or moved, which is what the checks below look at.
class ArrowSchema(ctypes.Structure):
    pass


ArrowSchema._fields_ = [
    ("format", ctypes.c_char_p),
    ("name", ctypes.c_char_p),
    ("metadata", ctypes.c_char_p),
    ("flags", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("children", ctypes.POINTER(ctypes.POINTER(ArrowSchema))),
    ("dictionary", ctypes.POINTER(ArrowSchema)),
    ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p),
]


class ArrowArray(ctypes.Structure):
    pass


ArrowArray._fields_ = [
    ("length", ctypes.c_int64),
    ("null_count", ctypes.c_int64),
    ("offset", ctypes.c_int64),
    ("n_buffers", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("buffers", ctypes.POINTER(ctypes.c_void_p)),
    ("children", ctypes.POINTER(ctypes.POINTER(ArrowArray))),
    ("dictionary", ctypes.POINTER(ArrowArray)),
    ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p),
]


# The C device data interface's array (128 bytes on 64-bit).
class ArrowDeviceArray(ctypes.Structure):
    _fields_ = [
        ("array", ArrowArray),
        ("device_id", ctypes.c_int64),
        ("device_type", ctypes.c_int32),
        ("sync_event", ctypes.c_void_p),
        ("reserved", ctypes.c_int64 * 3),
    ]


ReleaseSchema = ctypes.CFUNCTYPE(None, ctypes.POINTER(ArrowSchema))
ReleaseArray = ctypes.CFUNCTYPE(None, ctypes.POINTER(ArrowArray))


class DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class Place(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


ReleaseFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)

lib = ctypes.CDLL(sys.argv[1])
P = ctypes.POINTER
lib.lodtensor_create.argtypes = [
    DType, P(ctypes.c_int64), ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int32,
    P(ctypes.c_size_t), ctypes.c_size_t, P(ctypes.c_size_t), ctypes.c_size_t, P(ctypes.c_void_p),
]
lib.lodtensor_from_buffer.argtypes = [
    Place, DType, P(ctypes.c_int64), ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int32,
    P(ctypes.c_size_t), ctypes.c_size_t, P(ctypes.c_size_t), ctypes.c_size_t, ReleaseFn, ctypes.c_void_p,
    P(ctypes.c_void_p),
]
lib.lodtensor_to_arrow.argtypes = [ctypes.c_void_p, P(ArrowSchema), P(ArrowArray)]
lib.lodtensor_from_arrow.argtypes = [P(ArrowSchema), P(ArrowArray), P(ctypes.c_void_p)]
lib.lodtensor_to_arrow_strings.argtypes = [ctypes.c_void_p, ctypes.c_int32, P(ArrowSchema), P(ArrowArray)]
lib.lodtensor_to_arrow_device_strings.argtypes = [ctypes.c_void_p, ctypes.c_int32, P(ArrowSchema),
                                                  P(ArrowDeviceArray)]
lib.lodtensor_to_arrow_device.argtypes = [ctypes.c_void_p, P(ArrowSchema), P(ArrowDeviceArray)]
lib.lodtensor_from_arrow_device.argtypes = [P(ArrowSchema), P(ArrowDeviceArray), P(ctypes.c_void_p)]
lib.lodtensor_to_arrow_record_batch.argtypes = [
    P(ctypes.c_void_p), P(ctypes.c_char_p), ctypes.c_size_t, P(ArrowSchema), P(ArrowArray)]
lib.lodtensor_to_arrow_device_record_batch.argtypes = [
    P(ctypes.c_void_p), P(ctypes.c_char_p), ctypes.c_size_t, P(ArrowSchema), P(ArrowDeviceArray)]
lib.lodtensor_to_arrow_record_batch_encoded.argtypes = [
    P(ctypes.c_void_p), P(ctypes.c_char_p), P(ctypes.c_int32), ctypes.c_size_t, P(ArrowSchema), P(ArrowArray)]
lib.lodtensor_to_arrow_device_record_batch_encoded.argtypes = [
    P(ctypes.c_void_p), P(ctypes.c_char_p), P(ctypes.c_int32), ctypes.c_size_t, P(ArrowSchema), P(ArrowDeviceArray)]
lib.lodtensor_from_arrow_record_batch.argtypes = [
    P(ArrowSchema), P(ArrowArray), P(ctypes.c_void_p), ctypes.c_size_t, P(ctypes.c_size_t)]
lib.lodtensor_from_arrow_device_record_batch.argtypes = [
    P(ArrowSchema), P(ArrowDeviceArray), P(ctypes.c_void_p), ctypes.c_size_t, P(ctypes.c_size_t)]
lib.lodtensor_data.argtypes = [ctypes.c_void_p, P(ctypes.c_void_p)]
lib.lodtensor_dims.argtypes = [ctypes.c_void_p, P(ctypes.c_int64), ctypes.c_size_t, P(ctypes.c_size_t)]
lib.lodtensor_dtype.argtypes = [ctypes.c_void_p, P(DType)]
lib.lodtensor_numel.argtypes = [ctypes.c_void_p, P(ctypes.c_size_t)]
lib.lodtensor_lod_num_levels.argtypes = [ctypes.c_void_p, P(ctypes.c_size_t)]
lib.lodtensor_lod_offsets.argtypes = [ctypes.c_void_p, ctypes.c_size_t, P(P(ctypes.c_size_t)), P(ctypes.c_size_t)]
lib.lodtensor_destroy.argtypes = [ctypes.c_void_p]
lib.lodtensor_last_error_message.restype = ctypes.c_char_p

# include/lodtensor.h's lodtensor_status_t.
OK, INVALID_ARGUMENT, INVALID_LOD, UNSUPPORTED = 0, 2, 3, 6
BUFFER_TOO_SMALL = 5
LOD_OFFSETS = 0
MAX_DIMS = 9
# The header's ArrowDeviceType values used here.
ARROW_DEVICE_CPU, ARROW_DEVICE_VULKAN = 1, 7

# name, DLPack (code, bits), struct's format, pyarrow's type.
DTYPES = [
    ("bool", (6, 8), "?", pa.bool_()), ("uint8", (1, 8), "B", pa.uint8()), ("int8", (0, 8), "b", pa.int8()),
    ("int16", (0, 16), "h", pa.int16()), ("int32", (0, 32), "i", pa.int32()), ("int64", (0, 64), "q", pa.int64()),
    ("float16", (2, 16), "e", pa.float16()), ("float32", (2, 32), "f", pa.float32()),
    ("float64", (2, 64), "d", pa.float64()),
]
DTYPE_BY_ARROW = {str(arrow): (name, code, fmt) for name, code, fmt, arrow in DTYPES}


def values(name, n):
    """n elements of dtype `name`, each representable exactly (float16 included), and some past
    the narrower types' range so that a wrong element size shows."""
    v = [(i * 7 % 11) - 3 for i in range(n)]
    if name == "bool":
        return [x % 2 == 1 for x in v]
    if name == "uint8":
        return [(x + 3) * 23 for x in v]
    scale = {"int8": 1, "int16": 1000, "int32": 100000, "int64": 10**12}.get(name)
    return [x * scale for x in v] if scale else [x / 4 for x in v]


def status(s, what):
    if s != OK:
        raise RuntimeError(f"{what}: status {s}: {lib.lodtensor_last_error_message().decode()}")


def lod_args(lod):
    flat = [o for level in lod for o in level]
    return ((ctypes.c_size_t * max(len(lod), 1))(*[len(level) for level in lod]), len(lod),
            (ctypes.c_size_t * max(len(flat), 1))(*flat), len(flat))


def prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def reshape(flat, dims):
    """`flat` as nested lists of shape `dims` (dims[0] rows), zero-size dims included."""
    if len(dims) == 1:
        return list(flat)
    inner = prod(dims[1:])
    return [reshape(flat[r * inner:(r + 1) * inner], dims[1:]) for r in range(dims[0])]


def expected_pylist(flat, dims, lod):
    items = reshape(flat, dims)
    for level in reversed(lod):
        items = [items[level[i]:level[i + 1]] for i in range(len(level) - 1)]
    return items


def expected_type(arrow, dims, levels):
    """The type the header documents: a large_list per LoD level, outermost first, then a
    fixed_size_list per dim after the first, then the elements; children named "item", nothing
    nullable."""
    t = arrow
    for d in reversed(dims[1:]):
        t = pa.list_(pa.field("item", t, nullable=False), d)
    for _ in range(levels):
        t = pa.large_list(pa.field("item", t, nullable=False))
    return t


def tensor_data(t):
    p = ctypes.c_void_p()
    status(lib.lodtensor_data(t, ctypes.byref(p)), "lodtensor_data")
    return p.value or 0


def tensor_dims(t):
    buf = (ctypes.c_int64 * MAX_DIMS)()
    n = ctypes.c_size_t()
    status(lib.lodtensor_dims(t, buf, MAX_DIMS, ctypes.byref(n)), "lodtensor_dims")
    return list(buf[:n.value])


def tensor_lod(t):
    """[(address, offsets)] per level."""
    n = ctypes.c_size_t()
    status(lib.lodtensor_lod_num_levels(t, ctypes.byref(n)), "lodtensor_lod_num_levels")
    levels = []
    for i in range(n.value):
        p, length = P(ctypes.c_size_t)(), ctypes.c_size_t()
        status(lib.lodtensor_lod_offsets(t, i, ctypes.byref(p), ctypes.byref(length)), "lodtensor_lod_offsets")
        levels.append((ctypes.cast(p, ctypes.c_void_p).value or 0, list(p[:length.value])))
    return levels


def tensor_elements(t, fmt):
    numel = ctypes.c_size_t()
    status(lib.lodtensor_numel(t, ctypes.byref(numel)), "lodtensor_numel")
    n = numel.value
    if n == 0:
        return []
    size = struct.calcsize("=" + fmt)
    raw = ctypes.string_at(tensor_data(t), n * size)
    return list(struct.unpack(f"={n}{fmt}", raw))


# ---- export: lodtensor_to_arrow into pyarrow ---------------------------------------------------

# dims, LoD (offsets, outermost first): 0, 1 and 2 levels, empty sequences at every level, rows of
# 1-d, [N, D] and [N, 2, 3] shape, and zero-size dims.
EXPORT_CASES = [
    ([5], []),
    ([5], [[0, 2, 2, 5]]),
    ([3], [[0, 0, 1], [0, 3]]),
    ([6, 2], []),
    ([6, 2], [[0, 4, 4, 6]]),
    ([5, 2, 3], []),
    ([5, 2, 3], [[0, 1, 1, 3], [0, 2, 2, 5]]),
    ([4, 0], [[0, 1, 4]]),
    ([0, 3], [[0, 0]]),
    ([0], []),
    ([2, 3, 0], [[0, 2]]),
]
# Those lent through the C device data interface: 0, 1 and 2 levels, and a zero-size dim.
DEVICE_EXPORT_CASES = [EXPORT_CASES[i] for i in (0, 4, 6, 7)]

releases = {}  # user_data key -> how many times the library released the buffer
_keep = {}  # user_data key -> the buffer, alive until (and after) its release


def _on_release(data, user_data):
    releases[user_data] = releases.get(user_data, 0) + 1


on_release = ReleaseFn(_on_release)
_next_key = [1]


def make_tensor(name, dims, lod, how):
    """A tensor of dtype `name`, its elements and, for `how` == "buffer", the key its release
    callback counts under. "create" copies into the library's memory; "buffer" lends ours
    (lodtensor_from_buffer), whose release the library reports."""
    _, (code, bits), fmt, _ = next(d for d in DTYPES if d[0] == name)
    n = prod(dims)
    flat = values(name, n)
    raw = struct.pack(f"={n}{fmt}", *flat)
    cdims = (ctypes.c_int64 * len(dims))(*dims)
    sizes, num_levels, clod, lod_len = lod_args(lod)
    out = ctypes.c_void_p()
    if how == "create":
        status(lib.lodtensor_create(DType(code, bits, 1), cdims, len(dims), raw if n else None, len(raw), LOD_OFFSETS,
                                    sizes, num_levels, clod, lod_len, ctypes.byref(out)), "lodtensor_create")
        return out, flat, None
    # 8-byte words: aligned for every element size.
    buf = (ctypes.c_uint64 * max(1, (len(raw) + 7) // 8))()
    ctypes.memmove(buf, raw, len(raw))
    key = _next_key[0]
    _next_key[0] += 1
    _keep[key] = buf
    status(lib.lodtensor_from_buffer(Place(1, 0), DType(code, bits, 1), cdims, len(dims), ctypes.addressof(buf),
                                     len(raw), LOD_OFFSETS, sizes, num_levels, clod, lod_len, on_release, key,
                                     ctypes.byref(out)), "lodtensor_from_buffer")
    return out, flat, key


def scribble(nbytes):
    """A uint8 tensor of `nbytes` bytes of 0x5A."""
    cdims = (ctypes.c_int64 * 1)(nbytes)
    out = ctypes.c_void_p()
    status(lib.lodtensor_create(DType(1, 8, 1), cdims, 1, b"\x5a" * nbytes if nbytes else None, nbytes, LOD_OFFSETS,
                                None, 0, None, 0, ctypes.byref(out)), "lodtensor_create")
    return out


def lend(t, device=False, what="lend"):
    """`t` through lodtensor_to_arrow, imported by pyarrow; with `device`, through
    lodtensor_to_arrow_device and Array._import_from_c_device, the device fields checked first
    (written over garbage: the CPU, device -1, no sync event, reserved zeroed)."""
    schema = ArrowSchema()
    if not device:
        array = ArrowArray()
        status(lib.lodtensor_to_arrow(t, ctypes.byref(schema), ctypes.byref(array)), "lodtensor_to_arrow")
        return pa.Array._import_from_c(ctypes.addressof(array), ctypes.addressof(schema))
    darray = ArrowDeviceArray(device_id=-5, device_type=99, sync_event=0x5A5A5A5A, reserved=(-1, -1, -1))
    status(lib.lodtensor_to_arrow_device(t, ctypes.byref(schema), ctypes.byref(darray)), "lodtensor_to_arrow_device")
    check(darray.device_type == ARROW_DEVICE_CPU, f"{what}: device_type {darray.device_type}, want {ARROW_DEVICE_CPU}")
    check(darray.device_id == -1, f"{what}: device_id {darray.device_id}, want -1")
    check(darray.sync_event is None, f"{what}: sync_event {darray.sync_event}, want NULL (None)")
    check(list(darray.reserved) == [0, 0, 0], f"{what}: reserved {list(darray.reserved)}, want zeros")
    check(darray.array.release is not None and schema.release is not None, f"{what}: a struct is marked released")
    arr = pa.Array._import_from_c_device(ctypes.addressof(darray), ctypes.addressof(schema))
    check(arr.is_cpu, f"{what}: pyarrow imported it on {arr.device_type}, not the CPU")
    return arr


def check_lent(what, arr, t, name, arrow, dims, lod, flat):
    """The array pyarrow made of `t`: its type, values and memory."""
    want_type = expected_type(arrow, dims, len(lod))
    check(arr.type == want_type, f"{what}: type {arr.type}, want {want_type}")
    check(arr.null_count == 0, f"{what}: {arr.null_count} nulls")
    want = expected_pylist(flat, dims, lod)
    got = arr.to_pylist()
    check(got == want, f"{what}: values {got} != {want}")
    # The LoD offsets and the elements are the tensor's memory (zero copy), bool elements aside.
    node = arr
    lod_addresses = [a for a, _ in tensor_lod(t)]
    for i in range(len(lod)):
        check(node.buffers()[1].address == lod_addresses[i], f"{what}: LoD level {i} is not the tensor's memory")
        node = node.values
    for _ in dims[1:]:
        node = node.values
    check(node.type == arrow, f"{what}: the innermost array is {node.type}")
    if name != "bool" and prod(dims) > 0:
        check(node.buffers()[1].address == tensor_data(t), f"{what}: the elements are not the tensor's memory")


def test_lend_to_pyarrow(device=False):
    """With `device`, the same through the C device data interface, for DEVICE_EXPORT_CASES."""
    for name, _, _, arrow in DTYPES:
        for dims, lod in DEVICE_EXPORT_CASES if device else EXPORT_CASES:
            for how in ("create", "buffer, handle first", "buffer, pyarrow first"):
                what = f"{'device export' if device else 'export'} {name} {dims} lod={lod} ({how})"
                t, flat, key = make_tensor(name, dims, lod, how.split(",")[0])
                arr = lend(t, device, what)
                check_lent(what, arr, t, name, arrow, dims, lod, flat)
                want = expected_pylist(flat, dims, lod)
                if how == "buffer, pyarrow first":
                    del arr
                    gc.collect()
                    check(releases.get(key, 0) == 0, f"{what}: released while the handle lives")
                    lib.lodtensor_destroy(t)
                    check(releases.get(key, 0) == 1, f"{what}: released {releases.get(key, 0)} times")
                    continue
                nbytes = len(flat) * struct.calcsize("=" + DTYPE_BY_ARROW[str(arrow)][2])
                lib.lodtensor_destroy(t)
                # A block the library freed too early would be handed out again here, and overwritten.
                filler = scribble(nbytes)
                check(arr.to_pylist() == want, f"{what}: values changed once the handle was destroyed")
                lib.lodtensor_destroy(filler)
                if key is not None:
                    check(releases.get(key, 0) == 0, f"{what}: released while pyarrow holds it")
                    del arr
                    gc.collect()
                    check(releases.get(key, 0) == 1, f"{what}: released {releases.get(key, 0)} times")


def test_export_refusals():
    """Refused exports leave both structs unwritten."""
    for what, dtype, dims, want in [("bfloat16", (4, 16), [2], UNSUPPORTED),
                                    ("0-d", (2, 32), [], INVALID_ARGUMENT)]:
        cdims = (ctypes.c_int64 * max(1, len(dims)))(*dims)
        raw = bytes(prod(dims) * dtype[1] // 8)
        t = ctypes.c_void_p()
        status(lib.lodtensor_create(DType(dtype[0], dtype[1], 1), cdims, len(dims), raw, len(raw), LOD_OFFSETS,
                                    None, 0, None, 0, ctypes.byref(t)), "lodtensor_create")
        schema, array = ArrowSchema(), ArrowArray()
        s = lib.lodtensor_to_arrow(t, ctypes.byref(schema), ctypes.byref(array))
        check(s == want, f"export {what}: status {s}, want {want}")
        check(bytes(schema) == bytes(ctypes.sizeof(schema)) and bytes(array) == bytes(ctypes.sizeof(array)),
              f"export {what}: a refused export wrote the structs")
        lib.lodtensor_destroy(t)


ARROW_BINARY, ARROW_UTF8, ARROW_VALUES = 0, 1, 2


def text_tensor(words, outer):
    """The UTF-8 bytes of `words` (a list of strings, or under `outer` lists of them) as a uint8
    tensor, one LoD level a string under the lists' levels."""
    lod, flat = flatten_levels(bytes_as_lists(words, outer), outer + 1)
    raw = bytes(flat)
    cdims = (ctypes.c_int64 * 1)(len(raw))
    sizes, num_levels, clod, lod_len = lod_args(lod)
    t = ctypes.c_void_p()
    status(lib.lodtensor_create(DType(1, 8, 1), cdims, 1, raw or None, len(raw), LOD_OFFSETS, sizes, num_levels,
                                clod, lod_len, ctypes.byref(t)), "lodtensor_create")
    return t


def test_lend_strings_to_pyarrow():
    """Text lent by lodtensor_to_arrow_strings (and its device form on the CPU) as pyarrow's
    large_string and large_binary, under lists too: the same strings, valid as pyarrow checks
    them, over the tensor's bytes, kept after the handle goes; bytes that are not UTF-8 string by
    string refused with nothing written."""
    cases = [
        (["Grüße", "", "日本語", "x"], 0),
        ([["ein", "Satz"], [], ["😀", ""]], 1),
        ([[["a"]], [[], ["bc", "d"]]], 2),
    ]
    for words, outer in cases:
        for encoding in (ARROW_BINARY, ARROW_UTF8):
            for device in (False, True):
                what = f"lend strings {words} ({'utf8' if encoding else 'binary'}{', device' if device else ''})"
                t = text_tensor(words, outer)
                schema = ArrowSchema()
                if device:
                    darray = ArrowDeviceArray()
                    status(lib.lodtensor_to_arrow_device_strings(t, encoding, ctypes.byref(schema),
                                                                 ctypes.byref(darray)), what)
                    arr = pa.Array._import_from_c_device(ctypes.addressof(darray), ctypes.addressof(schema))
                else:
                    array = ArrowArray()
                    status(lib.lodtensor_to_arrow_strings(t, encoding, ctypes.byref(schema), ctypes.byref(array)), what)
                    arr = pa.Array._import_from_c(ctypes.addressof(array), ctypes.addressof(schema))
                want_type = expected_type(pa.large_string() if encoding == ARROW_UTF8 else pa.large_binary(), [0], outer)
                check(arr.type == want_type, f"{what}: type {arr.type}, want {want_type}")
                arr.validate(full=True)
                want = words if encoding == ARROW_UTF8 else bytes_of_words(words, outer)
                check(arr.to_pylist() == want, f"{what}: {arr.to_pylist()}, want {want}")
                node = arr
                for _ in range(outer):
                    node = node.flatten()
                if node.buffers()[2] is not None and len(node.buffers()[2]) > 0:
                    check(node.buffers()[2].address == tensor_data(t), f"{what}: the bytes are not the tensor's")
                lib.lodtensor_destroy(t)
                filler = scribble(64)
                check(arr.to_pylist() == want, f"{what}: values changed once the handle was destroyed")
                lib.lodtensor_destroy(filler)
    # "Gr" and the first byte of "ü": not UTF-8 on its own.
    t = text_tensor(["Grü"], 0)
    split = ctypes.c_void_p()
    raw = "Grü".encode()
    sizes, num_levels, clod, lod_len = lod_args([[0, 3, 4]])
    status(lib.lodtensor_create(DType(1, 8, 1), (ctypes.c_int64 * 1)(4), 1, raw, 4, LOD_OFFSETS, sizes, num_levels,
                                clod, lod_len, ctypes.byref(split)), "lodtensor_create")
    schema, array = ArrowSchema(), ArrowArray()
    s = lib.lodtensor_to_arrow_strings(split, ARROW_UTF8, ctypes.byref(schema), ctypes.byref(array))
    check(s == INVALID_ARGUMENT, f"lend a split character as utf8: status {s}")
    check(bytes(schema) == bytes(ctypes.sizeof(schema)) and bytes(array) == bytes(ctypes.sizeof(array)),
          "lend a split character: a refused export wrote the structs")
    status(lib.lodtensor_to_arrow_strings(split, ARROW_BINARY, ctypes.byref(schema), ctypes.byref(array)), "binary")
    arr = pa.Array._import_from_c(ctypes.addressof(array), ctypes.addressof(schema))
    check(arr.to_pylist() == [raw[:3], raw[3:]], f"lend a split character as binary: {arr.to_pylist()}")
    lib.lodtensor_destroy(split)
    lib.lodtensor_destroy(t)


def bytes_of_words(words, outer):
    if outer == 0:
        return [w.encode() for w in words]
    return [bytes_of_words(x, outer - 1) for x in words]


# ---- import: pyarrow's arrays into lodtensor_from_arrow -------------------------------------------

def take(arr, device=False, device_type=None):
    """lodtensor_from_arrow over pyarrow's export of `arr`: (status, tensor, array struct). The schema
    stays ours whatever the outcome, and is released here. With `device`, lodtensor_from_arrow_device
    over pyarrow's device export (ARROW_DEVICE_CPU, its device_type replaced by `device_type` when
    given), the array struct returned being the one embedded in it."""
    schema, out = ArrowSchema(), ctypes.c_void_p()
    if device:
        darray = ArrowDeviceArray()
        arr._export_to_c_device(ctypes.addressof(darray), ctypes.addressof(schema))
        check(darray.device_type == ARROW_DEVICE_CPU, f"pyarrow exported to device type {darray.device_type}")
        if device_type is not None:
            darray.device_type = device_type
        s = lib.lodtensor_from_arrow_device(ctypes.byref(schema), ctypes.byref(darray), ctypes.byref(out))
        array = darray.array  # a view of the embedded struct, keeping `darray` alive
    else:
        array = ArrowArray()
        arr._export_to_c(ctypes.addressof(array), ctypes.addressof(schema))
        s = lib.lodtensor_from_arrow(ctypes.byref(schema), ctypes.byref(array), ctypes.byref(out))
    check(schema.release is not None, "from_arrow released the caller's schema")
    if schema.release:
        ReleaseSchema(schema.release)(ctypes.byref(schema))
    check(schema.release is None, "the schema's release did not mark it released")
    return s, out, array


def is_binary(t):
    """Whether `t` is variable-size binary or strings, which the library takes as their bytes."""
    return any(f(t) for f in (pa.types.is_binary, pa.types.is_large_binary, pa.types.is_string,
                              pa.types.is_large_string))


def bytes_as_lists(items, depth):
    """`items` with each value `depth` lists down (a str as UTF-8, or bytes) as a list of its bytes."""
    if depth == 0:
        return [list(x.encode() if isinstance(x, str) else x) for x in items]
    return [bytes_as_lists(x, depth - 1) for x in items]


def flatten_levels(items, levels):
    """(LoD offsets, outermost first; the items inside) of `levels` of nested lists."""
    lod = []
    for _ in range(levels):
        offsets = [0]
        for x in items:
            offsets.append(offsets[-1] + len(x))
        lod.append(offsets)
        items = [y for x in items for y in x]
    return lod, items


def read_layout(arr):
    """(dims, LoD, flat elements, arrow element type) of `arr` as pyarrow reads it: its type says how
    many list levels and which fixed sizes; to_pylist gives the rest. Binary and strings are lists
    of their bytes, a level more; fixed-size binary of n is a fixed size of n uint8."""
    t, list_levels, fixed = arr.type, 0, []
    while pa.types.is_list(t) or pa.types.is_large_list(t):
        list_levels += 1
        t = t.value_type
    while pa.types.is_fixed_size_list(t):
        fixed.append(t.list_size)
        t = t.value_type
    items = arr.to_pylist()
    if is_binary(t) or pa.types.is_fixed_size_binary(t):
        items = bytes_as_lists(items, list_levels + len(fixed))
        if is_binary(t):
            list_levels += 1
        else:
            fixed.append(t.byte_width)
        t = pa.uint8()
    lod, items = flatten_levels(items, list_levels)
    dims = [len(items)] + fixed
    for _ in fixed:
        items = [y for x in items for y in x]
    return dims, lod, items, t


def element_address(arr):
    """The address of the first element `arr` uses, through pyarrow's own slicing of each level."""
    node = arr
    while pa.types.is_list(node.type) or pa.types.is_large_list(node.type) or pa.types.is_fixed_size_list(node.type):
        node = node.flatten()
    if is_binary(node.type):  # the bytes, from the first offset on
        wide = pa.types.is_large_binary(node.type) or pa.types.is_large_string(node.type)
        offset = (ctypes.c_int64 if wide else ctypes.c_int32).from_address(
            node.buffers()[1].address + node.offset * (8 if wide else 4)).value
        return node.buffers()[2].address + offset
    return node.buffers()[1].address + node.offset * node.type.bit_width // 8


def _values(arrow, n):
    return values(DTYPE_BY_ARROW[str(arrow)][0], n)


def import_cases():
    """(description, a function making the array): made afresh per case, after the memory
    baseline is taken."""
    f32, i32 = pa.float32(), pa.int32()
    cases = []
    for _, _, _, arrow in DTYPES:
        v = _values(arrow, 12)
        cases += [
            (f"{arrow} primitive", lambda a=arrow, v=v: pa.array(v, a)),
            (f"{arrow} primitive slice", lambda a=arrow, v=v: pa.array(v, a).slice(3, 5)),
            (f"list<{arrow}>", lambda a=arrow, v=v: pa.array([v[:2], [], v[2:7], v[7:]], pa.list_(a))),
            (f"large_list<{arrow}> slice",
             lambda a=arrow, v=v: pa.array([v[:3], v[3:4], [], v[4:9], v[9:]], pa.large_list(a)).slice(1, 3)),
            (f"large_list<fixed_size_list<{arrow}, 3>>",
             lambda a=arrow, v=v: pa.array([[v[0:3], v[3:6]], [], [v[6:9]]], pa.large_list(pa.list_(a, 3)))),
            (f"fixed_size_list<fixed_size_list<{arrow}, 3>, 2> slice",
             lambda a=arrow, v=v: pa.array([[v[0:3], v[3:6]], [v[6:9], v[9:12]], [v[1:4], v[5:8]]],
                                           pa.list_(pa.list_(a, 3), 2)).slice(1, 2)),
            (f"list<large_list<{arrow}>> slice",
             lambda a=arrow, v=v: pa.array([[v[:1]], [v[1:3], [], v[3:6]], [], [[], v[6:]]],
                                           pa.list_(pa.large_list(a))).slice(1, 3)),
        ]
    cases += [
        ("list<float> over offsets from 3 and sliced values",
         lambda: pa.ListArray.from_arrays(pa.array([3, 5, 5, 8], i32), pa.array(_values(f32, 12), f32).slice(1))),
        ("large_list<fixed_size_list<int32, 2>> slice of one empty sequence",
         lambda: pa.array([[[1, 2]], [], [[3, 4]]], pa.large_list(pa.list_(i32, 2))).slice(1, 1)),
        ("fixed_size_list<float, 0>", lambda: pa.array([[], [], []], pa.list_(f32, 0))),
        ("int32 slice that leaves the null out", lambda: pa.array([None, 1, 2, 3], i32).slice(1)),
        ("list<int32> slice that leaves the null element out",
         lambda: pa.array([[None], [1, 2], [3]], pa.list_(i32)).slice(1)),
        ("empty int64", lambda: pa.array([], pa.int64())),
    ]
    words = ["", "Grüße", "tok", "", "日本語", "x"]
    for arrow in (pa.string(), pa.large_string(), pa.binary(), pa.large_binary()):
        w = words if pa.types.is_string(arrow) or pa.types.is_large_string(arrow) else [x.encode() for x in words]
        cases += [
            (f"{arrow}", lambda a=arrow, w=w: pa.array(w, a)),
            (f"{arrow} slice", lambda a=arrow, w=w: pa.array(w, a).slice(1, 4)),
            (f"list<{arrow}> slice", lambda a=arrow, w=w: pa.array([w[:2], [], w[2:5], w[5:]], pa.list_(a)).slice(1)),
        ]
    cases += [
        ("large_list<large_list<string>>", lambda: pa.array([[["ab", ""]], [], [["cde"], []]],
                                                            pa.large_list(pa.large_list(pa.string())))),
        ("fixed_size_binary(3) slice", lambda: pa.array([b"abc", b"def", b"\x00\xff\x01"], pa.binary(3)).slice(1)),
        ("list<fixed_size_list<fixed_size_binary(2), 2>>",
         lambda: pa.array([[[b"ab", b"cd"]], [], [[b"ef", b"gh"], [b"ij", b"kl"]]],
                          pa.list_(pa.list_(pa.binary(2), 2)))),
    ]
    return cases


def test_take_from_pyarrow(device=False):
    """With `device`, the same through the C device data interface."""
    for what, make in import_cases():
        what = f"device {what}" if device else what
        gc.collect()
        baseline = pa.total_allocated_bytes()
        arr = make()
        dims, lod, flat, arrow = read_layout(arr)
        name, (code, bits), fmt = DTYPE_BY_ARROW[str(arrow)]
        address = element_address(arr) if flat else None
        s, t, array = take(arr, device)
        check(s == OK, f"import {what}: status {s}: {lib.lodtensor_last_error_message().decode()}")
        if s != OK:
            if array.release:
                ReleaseArray(array.release)(ctypes.byref(array))
            continue
        check(array.release is None, f"import {what}: the array struct was not moved (release not NULL)")
        del arr
        gc.collect()
        held = pa.total_allocated_bytes()
        if name == "bool":
            check(held == baseline, f"import {what}: bool's copy kept {held - baseline} bytes of pyarrow's")
        else:
            check(held > baseline, f"import {what}: pyarrow's memory went while the tensor uses it")
        check(tensor_dims(t) == dims, f"import {what}: dims {tensor_dims(t)}, want {dims}")
        got_dtype = DType()
        status(lib.lodtensor_dtype(t, ctypes.byref(got_dtype)), "lodtensor_dtype")
        check((got_dtype.code, got_dtype.bits, got_dtype.lanes) == (code, bits, 1),
              f"import {what}: dtype {(got_dtype.code, got_dtype.bits)}, want {(code, bits)}")
        got_lod = [offsets for _, offsets in tensor_lod(t)]
        check(got_lod == lod, f"import {what}: LoD {got_lod}, want {lod}")
        got = tensor_elements(t, fmt)
        check(got == flat, f"import {what}: elements {got}, want {flat}")
        if name != "bool" and address is not None:
            check(tensor_data(t) == address, f"import {what}: the elements are not pyarrow's memory")
        lib.lodtensor_destroy(t)
        gc.collect()
        after = pa.total_allocated_bytes()
        check(after == baseline, f"import {what}: {after - baseline} bytes of pyarrow's left after destroy")


def test_refusals():
    """Arrays with no tensor form: the documented status, and nothing taken."""
    i32 = pa.int32()
    cases = [
        ("a null", lambda: pa.array([1, None]), INVALID_ARGUMENT),
        ("a null element in a list", lambda: pa.array([[1, None]], pa.list_(i32)), INVALID_ARGUMENT),
        ("a null list", lambda: pa.array([[1], None], pa.list_(i32)), INVALID_ARGUMENT),
        ("string views", lambda: pa.array(["a", "bc"], pa.string_view()), UNSUPPORTED),
        ("binary views", lambda: pa.array([b"a", b"bc"], pa.binary_view()), UNSUPPORTED),
        ("a null string", lambda: pa.array(["a", None]), INVALID_ARGUMENT),
        ("a list of strings inside a fixed-size list", lambda: pa.array([["a"]], pa.list_(pa.string(), 1)),
         UNSUPPORTED),
        ("no strings", lambda: pa.array([], pa.string()), INVALID_LOD),
        ("a dictionary", lambda: pa.array([1, 2, 1], i32).dictionary_encode(), UNSUPPORTED),
        ("a struct", lambda: pa.array([{"a": 1, "b": 2.0}]), UNSUPPORTED),
        ("uint32", lambda: pa.array([1, 2], pa.uint32()), UNSUPPORTED),
        ("list<uint16>", lambda: pa.array([[1, 2]], pa.list_(pa.uint16())), UNSUPPORTED),
        ("a list inside a fixed-size list", lambda: pa.array([[[1]]], pa.list_(pa.list_(i32), 1)), UNSUPPORTED),
        ("a list of no entries", lambda: pa.array([], pa.list_(i32)), INVALID_LOD),
    ]
    for what, make, want in cases:
        check_refused(f"refuse {what}", make, want)


def check_refused(what, make, want, **take_args):
    """Taking the array `make()` gives status `want` with a message, leaves *out alone and the
    array with pyarrow (released here, after which pyarrow's memory is back to its baseline)."""
    gc.collect()
    baseline = pa.total_allocated_bytes()
    arr = make()
    s, t, array = take(arr, **take_args)
    check(s == want, f"{what}: status {s}, want {want}")
    check(lib.lodtensor_last_error_message() != b"", f"{what}: no error message")
    check(not t.value, f"{what}: *out was written")
    check(array.release is not None, f"{what}: the array was taken (release NULL)")
    if s == OK:
        lib.lodtensor_destroy(t)
    elif array.release:
        ReleaseArray(array.release)(ctypes.byref(array))
    del arr
    gc.collect()
    after = pa.total_allocated_bytes()
    check(after == baseline, f"{what}: {after - baseline} bytes of pyarrow's left")


def test_device_refusal():
    """A device array on a device type the library does not take (Vulkan): LODTENSOR_UNSUPPORTED,
    and nothing taken."""
    check_refused(
        "refuse a Vulkan device array",
        lambda: pa.array([[[1, 2]], [], [[3, 4]]], pa.large_list(pa.list_(pa.int32(), 2))),
        UNSUPPORTED,
        device=True,
        device_type=ARROW_DEVICE_VULKAN,
    )


def test_round_trip():
    """A tensor lent to pyarrow and taken back from pyarrow's own export: the same memory and LoD,
    released once, when the last of the two handles and pyarrow's array goes."""
    dims, lod = [5, 2, 3], [[0, 1, 1, 3], [0, 2, 2, 5]]
    t, flat, key = make_tensor("float32", dims, lod, "buffer")
    address = tensor_data(t)
    arr = lend(t)
    s, t2, _ = take(arr)
    check(s == OK, f"round trip: status {s}: {lib.lodtensor_last_error_message().decode()}")
    if s != OK:
        lib.lodtensor_destroy(t)
        return
    check(tensor_data(t2) == address, "round trip: not the same memory")
    check([o for _, o in tensor_lod(t2)] == lod and tensor_dims(t2) == dims, "round trip: dims or LoD differ")
    check(tensor_elements(t2, "f") == flat, "round trip: elements differ")
    lib.lodtensor_destroy(t)
    del arr
    gc.collect()
    check(releases.get(key, 0) == 0, "round trip: released while the second handle lives")
    lib.lodtensor_destroy(t2)
    check(releases.get(key, 0) == 1, f"round trip: released {releases.get(key, 0)} times")


# ---- record batches: lodtensor_to_arrow_record_batch into pyarrow, and back ------------------------

# A column per dtype kind a decoder or a model hands over: token ids with two LoD levels (source ->
# sentences -> tokens), scores with one, and rows without a LoD; each of 3 entries.
BATCH_COLUMNS = [
    ("ids", "int64", [7], [[0, 2, 2, 3], [0, 3, 3, 7]]),
    ("scores", "float32", [3], [[0, 1, 1, 3]]),
    ("lengths", "int32", [3], []),
    ("embeddings", "float16", [3, 2], []),
    ("done", "bool", [3], []),
]


def lend_batch(handles, names, device, what):
    """`handles` through lodtensor_to_arrow_record_batch (or its device form, whose fields are
    checked as `lend` checks them), imported by pyarrow as a RecordBatch."""
    chandles = (ctypes.c_void_p * len(handles))(*[h.value for h in handles])
    cnames = (ctypes.c_char_p * len(names))(*[n.encode() for n in names])
    schema = ArrowSchema()
    if not device:
        array = ArrowArray()
        status(lib.lodtensor_to_arrow_record_batch(chandles, cnames, len(handles), ctypes.byref(schema),
                                                   ctypes.byref(array)), "lodtensor_to_arrow_record_batch")
        return pa.RecordBatch._import_from_c(ctypes.addressof(array), ctypes.addressof(schema))
    darray = ArrowDeviceArray(device_id=-5, device_type=99, sync_event=0x5A5A5A5A, reserved=(-1, -1, -1))
    status(lib.lodtensor_to_arrow_device_record_batch(chandles, cnames, len(handles), ctypes.byref(schema),
                                                      ctypes.byref(darray)), "lodtensor_to_arrow_device_record_batch")
    check((darray.device_type, darray.device_id, darray.sync_event, list(darray.reserved)) ==
          (ARROW_DEVICE_CPU, -1, None, [0, 0, 0]), f"{what}: device fields {darray.device_type} {darray.device_id}")
    return pa.RecordBatch._import_from_c_device(ctypes.addressof(darray), ctypes.addressof(schema))


def test_record_batch_to_pyarrow(device=False):
    """The columns as one RecordBatch: its field names, each column's type and values as a lone
    export's, the tensors' memory, kept after the handles go and released once with the batch."""
    what = "device record batch export" if device else "record batch export"
    made = [(name, dtype, dims, lod) + make_tensor(dtype, dims, lod, "buffer") for name, dtype, dims, lod in
            BATCH_COLUMNS]
    handles = [t for _, _, _, _, t, _, _ in made]
    batch = lend_batch(handles, [m[0] for m in made], device, what)
    check(batch.num_rows == 3 and batch.schema.names == [m[0] for m in made],
          f"{what}: {batch.num_rows} rows, names {batch.schema.names}")
    for i, (name, dtype, dims, lod, t, flat, key) in enumerate(made):
        arrow = next(d[3] for d in DTYPES if d[0] == dtype)
        check_lent(f"{what} column {name}", batch.column(i), t, dtype, arrow, dims, lod, flat)
    wants = [expected_pylist(flat, dims, lod) for _, _, dims, lod, _, flat, _ in made]
    for t in handles:
        lib.lodtensor_destroy(t)
    filler = scribble(64)
    check([batch.column(i).to_pylist() for i in range(len(made))] == wants,
          f"{what}: values changed once the handles were destroyed")
    lib.lodtensor_destroy(filler)
    keys = [m[6] for m in made]
    check(all(releases.get(k, 0) == 0 for k in keys), f"{what}: released while pyarrow holds the batch")
    del batch
    gc.collect()
    check(all(releases.get(k, 0) == 1 for k in keys), f"{what}: released {[releases.get(k, 0) for k in keys]}")


def test_record_batch_with_text_to_pyarrow():
    """A decoder's output as one RecordBatch (lodtensor_to_arrow_record_batch_encoded and its device
    form on the CPU): its text a large_string column (or large_binary, or a list of them under an
    outer level), its scores a float column, valid as pyarrow checks them, the strings over the
    tensor's bytes; text that is not UTF-8 refused with nothing written."""
    cases = [(["Grüße", "", "日本語"], 0), ([["ein", "Satz"], [], ["😀"]], 1)]
    for words, outer in cases:
        for encoding in (ARROW_UTF8, ARROW_BINARY):
            for device in (False, True):
                form = ("utf8" if encoding == ARROW_UTF8 else "binary") + (", device" if device else "")
                what = f"record batch with text {words} ({form})"
                text = text_tensor(words, outer)
                scores, _, _ = make_tensor("float32", [3], [], "create")
                chandles = (ctypes.c_void_p * 2)(text.value, scores.value)
                cnames = (ctypes.c_char_p * 2)(b"text", b"score")
                cencodings = (ctypes.c_int32 * 2)(encoding, ARROW_VALUES)
                schema = ArrowSchema()
                if device:
                    darray = ArrowDeviceArray()
                    status(lib.lodtensor_to_arrow_device_record_batch_encoded(
                        chandles, cnames, cencodings, 2, ctypes.byref(schema), ctypes.byref(darray)), what)
                    batch = pa.RecordBatch._import_from_c_device(ctypes.addressof(darray), ctypes.addressof(schema))
                else:
                    array = ArrowArray()
                    status(lib.lodtensor_to_arrow_record_batch_encoded(
                        chandles, cnames, cencodings, 2, ctypes.byref(schema), ctypes.byref(array)), what)
                    batch = pa.RecordBatch._import_from_c(ctypes.addressof(array), ctypes.addressof(schema))
                batch.validate(full=True)
                strings = pa.large_string() if encoding == ARROW_UTF8 else pa.large_binary()
                want_type = expected_type(strings, [0], outer)
                check(batch.schema.names == ["text", "score"] and batch.schema.field(0).type == want_type,
                      f"{what}: {batch.schema}")
                check(batch.schema.field(1).type == pa.float32(), f"{what}: {batch.schema}")
                want = words if encoding == ARROW_UTF8 else bytes_of_words(words, outer)
                check(batch.column(0).to_pylist() == want, f"{what}: {batch.column(0).to_pylist()}, want {want}")
                node = batch.column(0)
                for _ in range(outer):
                    node = node.flatten()
                check(node.buffers()[2].address == tensor_data(text), f"{what}: the bytes are not the tensor's")
                lib.lodtensor_destroy(text)
                lib.lodtensor_destroy(scores)
                filler = scribble(64)
                check(batch.column(0).to_pylist() == want, f"{what}: values changed once the handles went")
                lib.lodtensor_destroy(filler)
                del batch
                gc.collect()
    # "Gr" and the first byte of "ü" as a string of its own: refused as UTF-8, nothing written.
    raw = "Grü".encode()
    split = ctypes.c_void_p()
    sizes, num_levels, clod, lod_len = lod_args([[0, 3, 4]])
    status(lib.lodtensor_create(DType(1, 8, 1), (ctypes.c_int64 * 1)(4), 1, raw, 4, LOD_OFFSETS, sizes, num_levels,
                                clod, lod_len, ctypes.byref(split)), "lodtensor_create")
    schema, array = ArrowSchema(), ArrowArray()
    s = lib.lodtensor_to_arrow_record_batch_encoded((ctypes.c_void_p * 1)(split.value), (ctypes.c_char_p * 1)(b"t"),
                                                    (ctypes.c_int32 * 1)(ARROW_UTF8), 1, ctypes.byref(schema),
                                                    ctypes.byref(array))
    check(s == INVALID_ARGUMENT, f"a record batch with a split character: status {s}")
    check(bytes(schema) == bytes(ctypes.sizeof(schema)) and bytes(array) == bytes(ctypes.sizeof(array)),
          "a record batch with a split character: a refused export wrote the structs")
    lib.lodtensor_destroy(split)


def batch_cases():
    """(description, a function making a RecordBatch): list, large-list, fixed-size-list, primitive
    and string columns, and slices of the batch."""
    f32, i64 = pa.float32(), pa.int64()

    def batch():
        return pa.record_batch({
            "tokens": pa.array([[1, 2], [3], [], [4, 5, 6]], pa.list_(i64)),
            "nested": pa.array([[[1.0]], [], [[2.0, 3.0], []], [[4.0]]], pa.large_list(pa.list_(f32))),
            "score": pa.array([0.5, 1.5, 2.5, 3.5], f32),
            "embedding": pa.array([[1, 2], [3, 4], [5, 6], [7, 8]], pa.list_(pa.int16(), 2)),
            "flag": pa.array([True, False, True, True]),
            "source": pa.array(["ein Satz", "", "zwei Sätze", "x"]),
        })
    return [
        ("a batch", batch),
        ("a slice of a batch", lambda: batch().slice(1, 2)),
        ("a slice of one empty row", lambda: batch().slice(2, 1)),
    ]


def take_batch(batch, device=False, device_type=None, room=None):
    """lodtensor_from_arrow_record_batch (or its device form) over pyarrow's export of `batch`:
    (status, handles, count, the array struct); the schema is released here."""
    schema = ArrowSchema()
    n = batch.num_columns if isinstance(batch, pa.RecordBatch) else 1
    room = n if room is None else room
    out = (ctypes.c_void_p * max(1, room))()
    count = ctypes.c_size_t(99)
    if device:
        darray = ArrowDeviceArray()
        batch._export_to_c_device(ctypes.addressof(darray), ctypes.addressof(schema))
        if device_type is not None:
            darray.device_type = device_type
        s = lib.lodtensor_from_arrow_device_record_batch(ctypes.byref(schema), ctypes.byref(darray), out, room,
                                                         ctypes.byref(count))
        array = darray.array
    else:
        array = ArrowArray()
        batch._export_to_c(ctypes.addressof(array), ctypes.addressof(schema))
        s = lib.lodtensor_from_arrow_record_batch(ctypes.byref(schema), ctypes.byref(array), out, room,
                                                  ctypes.byref(count))
    check(schema.release is not None, "from_arrow_record_batch released the caller's schema")
    if schema.release:
        ReleaseSchema(schema.release)(ctypes.byref(schema))
    return s, [ctypes.c_void_p(out[i]) for i in range(room)], count.value, array


def test_record_batch_from_pyarrow(device=False):
    """pyarrow's RecordBatch taken as one tensor a column: each as lodtensor_from_arrow takes the
    column alone (dims, LoD, elements, pyarrow's memory), pyarrow's memory kept until the last
    column goes."""
    for what, make in batch_cases():
        what = f"{'device ' if device else ''}record batch import, {what}"
        gc.collect()
        baseline = pa.total_allocated_bytes()
        batch = make()
        layouts = [read_layout(batch.column(i)) for i in range(batch.num_columns)]
        addresses = [element_address(batch.column(i)) if layouts[i][2] else None for i in range(batch.num_columns)]
        s, handles, count, array = take_batch(batch, device)
        check(s == OK, f"{what}: status {s}: {lib.lodtensor_last_error_message().decode()}")
        if s != OK:
            if array.release:
                ReleaseArray(array.release)(ctypes.byref(array))
            continue
        check(array.release is None and count == batch.num_columns, f"{what}: not moved, or {count} columns")
        del batch
        gc.collect()
        for i, (t, (dims, lod, flat, arrow)) in enumerate(zip(handles, layouts)):
            name, _, fmt = DTYPE_BY_ARROW[str(arrow)]
            check(tensor_dims(t) == dims, f"{what} column {i}: dims {tensor_dims(t)}, want {dims}")
            got_lod = [offsets for _, offsets in tensor_lod(t)]
            check(got_lod == lod, f"{what} column {i}: LoD {got_lod}, want {lod}")
            check(tensor_elements(t, fmt) == flat, f"{what} column {i}: elements differ")
            if name != "bool" and addresses[i] is not None:
                check(tensor_data(t) == addresses[i], f"{what} column {i}: not pyarrow's memory")
        # The first column (list<int64>) is pyarrow's memory; the bool column is a copy.
        for t in handles[1:]:
            lib.lodtensor_destroy(t)
        gc.collect()
        check(pa.total_allocated_bytes() > baseline, f"{what}: pyarrow's memory went while a column uses it")
        lib.lodtensor_destroy(handles[0])
        gc.collect()
        after = pa.total_allocated_bytes()
        check(after == baseline, f"{what}: {after - baseline} bytes of pyarrow's left after the last column")


def test_record_batch_refusals():
    """Record batches with no tensor form, a struct with a null row, an array that is not a struct,
    too little room: the documented status, nothing written, nothing taken."""
    i32 = pa.int32()
    cases = [
        ("a string view column",
         lambda: pa.record_batch({"a": pa.array([1, 2], i32), "s": pa.array(["x", "y"], pa.string_view())}),
         UNSUPPORTED, {}),
        ("a null in a column", lambda: pa.record_batch({"a": pa.array([1, None], i32)}), INVALID_ARGUMENT, {}),
        ("a null row", lambda: pa.StructArray.from_arrays([pa.array([1, 2], i32)], names=["a"],
                                                          mask=pa.array([False, True])), INVALID_ARGUMENT, {}),
        ("not a struct", lambda: pa.array([1, 2], i32), INVALID_ARGUMENT, {}),
        ("room for one column of two",
         lambda: pa.record_batch({"a": pa.array([1], i32), "b": pa.array([2], i32)}), BUFFER_TOO_SMALL, {"room": 1}),
        ("a Vulkan device batch", lambda: pa.record_batch({"a": pa.array([1], i32)}), UNSUPPORTED,
         {"device": True, "device_type": ARROW_DEVICE_VULKAN}),
    ]
    for what, make, want, args in cases:
        what = f"refuse record batch with {what}"
        gc.collect()
        baseline = pa.total_allocated_bytes()
        batch = make()
        s, handles, count, array = take_batch(batch, **args)
        check(s == want, f"{what}: status {s}, want {want}: {lib.lodtensor_last_error_message().decode()}")
        check(not any(h.value for h in handles) and count == 99, f"{what}: an output was written")
        check(array.release is not None, f"{what}: the array was taken")
        if array.release:
            ReleaseArray(array.release)(ctypes.byref(array))
        del batch
        gc.collect()
        after = pa.total_allocated_bytes()
        check(after == baseline, f"{what}: {after - baseline} bytes of pyarrow's left")


check(ctypes.sizeof(ArrowDeviceArray) == 128, f"ArrowDeviceArray is {ctypes.sizeof(ArrowDeviceArray)} bytes, want 128")
test_lend_to_pyarrow()
test_export_refusals()
test_lend_strings_to_pyarrow()
test_take_from_pyarrow()
test_refusals()
test_round_trip()
test_lend_to_pyarrow(device=True)
test_take_from_pyarrow(device=True)
test_device_refusal()
test_record_batch_to_pyarrow()
test_record_batch_to_pyarrow(device=True)
test_record_batch_from_pyarrow()
test_record_batch_from_pyarrow(device=True)
test_record_batch_refusals()
test_record_batch_with_text_to_pyarrow()
gc.collect()
check(all(n == 1 for n in releases.values()) and len(releases) == _next_key[0] - 1,
      f"lent buffers released other than once each: {releases}")
summary = "all checks passed" if failures == 0 else f"{failures} failed"
print(f"arrow_pyarrow (pyarrow {pa.__version__}): {passed} checks passed, {summary}")
sys.exit(1 if failures else 0)
