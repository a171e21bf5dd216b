"""dlpack_numpy: the library's DLPack against an independent implementation, NumPy's.

    python3 dlpack_numpy.py path/to/liblodtensor.so

Through ctypes and DLPack's Python protocol, in both forms of managed tensor (capsules named
"dltensor_versioned", and "dltensor" for DLPack before 1.0: lodtensor_to_dlpack_legacy and
lodtensor_from_dlpack_legacy): tensors of every dtype NumPy has lent to numpy.from_dlpack (same
values, the same memory, the library's deleter called exactly once when NumPy lets go), NumPy
arrays of every dtype taken by the library (the same memory, NumPy's deleter called once when the
last handle goes), and NumPy's read-only and strided exports refused. Exits 77 (skipped) when NumPy is missing,
unless LODTENSOR_REQUIRE_NUMPY=1.
"""

import ctypes
import gc
import os
import sys

try:
    import numpy as np
except ImportError:
    print("dlpack_numpy: NumPy is not installed; skipped")
    sys.exit(1 if os.environ.get("LODTENSOR_REQUIRE_NUMPY") == "1" else 77)

failures = 0


def check(ok, what):
    global failures
    if not ok:
        failures += 1
        print(f"FAILED: {what}", file=sys.stderr)


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


Deleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", Deleter),
    ("flags", ctypes.c_uint64),
    ("dl_tensor", DLTensor),
]


class DLManagedTensor(ctypes.Structure):
    """DLPack's managed tensor before 1.0: no version, no flags."""


LegacyDeleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", LegacyDeleter)]

# Each form: its struct, its deleter's type, its capsule's name, and the library's two calls.
VERSIONED = (DLManagedTensorVersioned, Deleter, b"dltensor_versioned", "lodtensor_to_dlpack", "lodtensor_from_dlpack")
LEGACY = (DLManagedTensor, LegacyDeleter, b"dltensor", "lodtensor_to_dlpack_legacy", "lodtensor_from_dlpack_legacy")
FORMS = [VERSIONED, LEGACY]

lib = ctypes.CDLL(sys.argv[1])
# lodtensor_dtype_t is DLPack's {code, bits, lanes}.
lib.lodtensor_create.argtypes = [
    DLDataType, ctypes.POINTER(ctypes.c_int64), ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
    ctypes.c_int32, ctypes.POINTER(ctypes.c_size_t), ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t),
    ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p),
]
for struct, _, _, to_name, from_name in FORMS:
    getattr(lib, to_name).argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.POINTER(struct))]
    getattr(lib, from_name).argtypes = [
        ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_size_t), ctypes.c_size_t,
        ctypes.POINTER(ctypes.c_size_t), ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p),
    ]
lib.lodtensor_data.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
lib.lodtensor_destroy.argtypes = [ctypes.c_void_p]
lib.lodtensor_last_error_message.restype = ctypes.c_char_p
UNSUPPORTED = 6

pythonapi = ctypes.pythonapi
# A destructor gets the dying capsule: as a plain address, never as an object to reference.
CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
pythonapi.PyCapsule_New.restype = ctypes.py_object
pythonapi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, CapsuleDestructor]
pythonapi.PyCapsule_GetPointer.restype = ctypes.c_void_p
pythonapi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
pythonapi.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
pythonapi.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

# NumPy dtypes and their DLPack (code, bits): int 0, uint 1, float 2, bool 6.
DTYPES = [
    (np.bool_, 6, 8), (np.uint8, 1, 8), (np.int8, 0, 8), (np.int16, 0, 16), (np.int32, 0, 32),
    (np.int64, 0, 64), (np.float16, 2, 16), (np.float32, 2, 32), (np.float64, 2, 64),
]


def values(dtype, n):
    v = (np.arange(n) * 7 % 11) - 3
    return (v % 2).astype(dtype) if dtype is np.bool_ else v.astype(dtype)


def status(s, what):
    if s != 0:
        raise RuntimeError(f"{what}: status {s}: {lib.lodtensor_last_error_message().decode()}")


def create(array, offsets):
    """A library tensor holding a copy of `array`, with one LoD level `offsets`."""
    dtype = next((code, bits) for t, code, bits in DTYPES if t == array.dtype.type)
    dims = (ctypes.c_int64 * array.ndim)(*array.shape)
    sizes = (ctypes.c_size_t * 1)(len(offsets))
    lod = (ctypes.c_size_t * len(offsets))(*offsets)
    out = ctypes.c_void_p()
    status(lib.lodtensor_create(DLDataType(dtype[0], dtype[1], 1), dims, array.ndim, array.ctypes.data,
                                array.nbytes, 0, sizes, 1, lod, len(offsets), ctypes.byref(out)), "lodtensor_create")
    return out


def data_address(t):
    p = ctypes.c_void_p()
    status(lib.lodtensor_data(t, ctypes.byref(p)), "lodtensor_data")
    return p.value or 0


class Lent:
    """A library tensor offered to numpy.from_dlpack through DLPack's Python protocol, as a managed
    tensor of `form`. The managed tensor's deleter is wrapped to count its calls (then call the
    library's)."""

    def __init__(self, t, form):
        struct, deleter_type, self.name, to_name, _ = form
        self.managed = ctypes.POINTER(struct)()
        status(getattr(lib, to_name)(t, ctypes.byref(self.managed)), to_name)
        # The library's deleter by its address (the field itself is about to change).
        self.library_deleter = deleter_type(ctypes.cast(self.managed.contents.deleter, ctypes.c_void_p).value)
        self.deletions = 0

        def deleter(m):
            self.deletions += 1
            self.library_deleter(m)

        self.deleter = deleter_type(deleter)
        self.managed.contents.deleter = self.deleter

        def destroy(capsule):
            # An unconsumed capsule still owns the managed tensor.
            if pythonapi.PyCapsule_IsValid(capsule, self.name):
                self.deleter(self.managed)

        self.destroy = CapsuleDestructor(destroy)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        # A producer of DLPack before 1.0 answers any request with that form.
        check(self.name == b"dltensor" or max_version is None or max_version[0] >= 1,
              f"NumPy asks for DLPack {max_version}")
        return pythonapi.PyCapsule_New(ctypes.cast(self.managed, ctypes.c_void_p), self.name, self.destroy)

    def __dlpack_device__(self):
        return (1, 0)


def test_lend_to_numpy(form):
    for dtype, _, _ in DTYPES:
        want = values(dtype, 12).reshape(6, 2)
        t = create(want, [0, 4, 6])
        lent = Lent(t, form)
        a = np.from_dlpack(lent)
        lib.lodtensor_destroy(t)
        check(a.dtype == want.dtype and a.shape == (6, 2), f"{dtype.__name__}: {a.dtype} {a.shape}")
        check(np.array_equal(a, want), f"{dtype.__name__}: values {a} != {want}")
        check(a.ctypes.data == lent.managed.contents.dl_tensor.data, f"{dtype.__name__}: not the same memory")
        # The form before 1.0 cannot say whether a tensor may be written; NumPy takes it as read-only.
        check(a.flags.writeable or form is LEGACY, f"{dtype.__name__}: NumPy took a writable tensor as read-only")
        check(lent.deletions == 0, f"{dtype.__name__}: deleted while NumPy holds it")
        del a
        gc.collect()
        check(lent.deletions == 1, f"{dtype.__name__}: the deleter ran {lent.deletions} times")


def take(capsule, offsets, form=VERSIONED):
    """The library's import of `form` over NumPy's capsule: (status, tensor). On success the
    capsule is marked used (the library owns the managed tensor); on failure it is left to NumPy."""
    _, _, name, _, from_name = form
    managed = pythonapi.PyCapsule_GetPointer(capsule, name)
    sizes = (ctypes.c_size_t * 1)(len(offsets))
    lod = (ctypes.c_size_t * len(offsets))(*offsets)
    out = ctypes.c_void_p()
    s = getattr(lib, from_name)(managed, 0, sizes, 1 if offsets else 0, lod, len(offsets), ctypes.byref(out))
    if s == 0:
        pythonapi.PyCapsule_SetName(capsule, b"used_" + name)
    return s, out


def export(array, form):
    """NumPy's capsule of `form`: asked for DLPack 1.0, or for no version (NumPy then gives the
    form before 1.0)."""
    return array.__dlpack__(max_version=(1, 0)) if form is VERSIONED else array.__dlpack__()


def test_take_from_numpy(form):
    for dtype, _, _ in DTYPES:
        a = values(dtype, 12).reshape(3, 4)
        refs = sys.getrefcount(a)
        capsule = export(a, form)
        s, t = take(capsule, [0, 1, 3], form)
        del capsule
        check(s == 0, f"{dtype.__name__}: import failed: {lib.lodtensor_last_error_message().decode()}")
        if s != 0:
            continue
        check(data_address(t) == a.ctypes.data, f"{dtype.__name__}: not the same memory")
        check(sys.getrefcount(a) == refs + 1, f"{dtype.__name__}: the tensor does not hold the array")
        a[1, 2] = a[0, 0]
        seen = np.ctypeslib.as_array((ctypes.c_uint8 * a.nbytes).from_address(data_address(t)))
        check(bytes(seen) == a.tobytes(), f"{dtype.__name__}: a write through NumPy is not seen")
        lib.lodtensor_destroy(t)
        check(sys.getrefcount(a) == refs, f"{dtype.__name__}: NumPy's deleter did not run once")


def test_refused_exports():
    a = values(np.float32, 12).reshape(3, 4)
    a.flags.writeable = False
    s, _ = take(a.__dlpack__(max_version=(1, 0)), [])
    check(s == UNSUPPORTED and b"read-only" in lib.lodtensor_last_error_message(), f"read-only: status {s}")
    b = values(np.float32, 12).reshape(3, 4)
    for form in FORMS:
        for view in (b.T, b[:, ::2]):
            refs = sys.getrefcount(b)
            s, _ = take(export(view, form), [], form)
            check(s == UNSUPPORTED and b"compact row-major" in lib.lodtensor_last_error_message(),
                  f"strided ({form[2]}): {s}")
            gc.collect()
            check(sys.getrefcount(b) == refs, f"a refused capsule ({form[2]}) was not left to NumPy")


for form in FORMS:
    test_lend_to_numpy(form)
    test_take_from_numpy(form)
test_refused_exports()
print(f"dlpack_numpy (NumPy {np.__version__}): {'all checks passed' if failures == 0 else f'{failures} failed'}")
sys.exit(1 if failures else 0)
