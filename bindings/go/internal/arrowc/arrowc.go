// Package arrowc is the consumer side of the Arrow C (device) data interface for the binding's tests
// (cgo is not allowed in _test.go files): structs in C memory, read and released as a consumer
// does, with its own copy of Arrow's abi.h rather than lodtensor.h's, so the tests also check
// that the library's layout is Arrow's.
package arrowc

/*
#include <stdint.h>
#include <stdlib.h>

struct ArrowSchema {
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;
  void (*release)(struct ArrowSchema*);
  void* private_data;
};

struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;
  void (*release)(struct ArrowArray*);
  void* private_data;
};

// The C device data interface's array, as Arrow's abi.h defines it.
struct ArrowDeviceArray {
  struct ArrowArray array;
  int64_t device_id;
  int32_t device_type;
  void* sync_event;
  int64_t reserved[3];
};

static void release_schema(struct ArrowSchema* s) { s->release(s); }
static void release_array(struct ArrowArray* a) { a->release(a); }

// The producer's release callback of one array, wrapped to count its calls.
static void (*arrowc_release)(struct ArrowArray*);
static int arrowc_releases;
static void arrowc_counting_release(struct ArrowArray* a) {
  ++arrowc_releases;
  arrowc_release(a);
}
static void count_releases(struct ArrowArray* a) {
  arrowc_release = a->release;
  arrowc_releases = 0;
  a->release = arrowc_counting_release;
}
static int releases(void) { return arrowc_releases; }
*/
import "C"

import "unsafe"

// New allocates a zeroed struct ArrowSchema and struct ArrowArray in C memory, for Free.
func New() (schema, array unsafe.Pointer) {
	return C.calloc(1, C.sizeof_struct_ArrowSchema), C.calloc(1, C.sizeof_struct_ArrowArray)
}

// Free frees what New allocated (not what the structs hold: release them first).
func Free(schema, array unsafe.Pointer) {
	C.free(schema)
	C.free(array)
}

// Schema is what a struct ArrowSchema says, with its first child (nil when it has none).
type Schema struct {
	Format, Name      string
	Flags, NChildren  int64
	Child, Dictionary unsafe.Pointer
	Released          bool
}

// ReadSchema reads the struct ArrowSchema at p; of a released one, only that it is released (its
// other fields may point to freed memory).
func ReadSchema(p unsafe.Pointer) Schema {
	s := (*C.struct_ArrowSchema)(p)
	if s.release == nil {
		return Schema{Released: true}
	}
	r := Schema{Flags: int64(s.flags), NChildren: int64(s.n_children), Dictionary: unsafe.Pointer(s.dictionary)}
	if s.format != nil {
		r.Format = C.GoString(s.format)
	}
	if s.name != nil {
		r.Name = C.GoString(s.name)
	}
	if s.n_children > 0 {
		r.Child = unsafe.Pointer(*s.children)
	}
	return r
}

// Array is what a struct ArrowArray says, with its first child (nil when it has none).
type Array struct {
	Length, NullCount, Offset, NBuffers, NChildren int64
	Buffers                                        []unsafe.Pointer
	Child                                          unsafe.Pointer
	Released                                       bool
}

// ReadArray reads the struct ArrowArray at p; of a released (or moved) one, only that it is
// released.
func ReadArray(p unsafe.Pointer) Array {
	a := (*C.struct_ArrowArray)(p)
	if a.release == nil {
		return Array{Released: true}
	}
	r := Array{Length: int64(a.length), NullCount: int64(a.null_count), Offset: int64(a.offset),
		NBuffers: int64(a.n_buffers), NChildren: int64(a.n_children)}
	if a.n_buffers > 0 {
		r.Buffers = unsafe.Slice((*unsafe.Pointer)(unsafe.Pointer(a.buffers)), int(a.n_buffers))
	}
	if a.n_children > 0 {
		r.Child = unsafe.Pointer(*a.children)
	}
	return r
}

// SchemaChild is child i of the struct ArrowSchema at p.
func SchemaChild(p unsafe.Pointer, i int) unsafe.Pointer {
	s := (*C.struct_ArrowSchema)(p)
	return unsafe.Pointer(unsafe.Slice(s.children, int(s.n_children))[i])
}

// ArrayChild is child i of the struct ArrowArray at p.
func ArrayChild(p unsafe.Pointer, i int) unsafe.Pointer {
	a := (*C.struct_ArrowArray)(p)
	return unsafe.Pointer(unsafe.Slice(a.children, int(a.n_children))[i])
}

// ReleaseSchema calls the release callback of the struct ArrowSchema at p.
func ReleaseSchema(p unsafe.Pointer) { C.release_schema((*C.struct_ArrowSchema)(p)) }

// ReleaseArray calls the release callback of the struct ArrowArray at p.
func ReleaseArray(p unsafe.Pointer) { C.release_array((*C.struct_ArrowArray)(p)) }

// NewDevice allocates a zeroed struct ArrowSchema and struct ArrowDeviceArray in C memory, for
// Free.
func NewDevice() (schema, array unsafe.Pointer) {
	return C.calloc(1, C.sizeof_struct_ArrowSchema), C.calloc(1, C.sizeof_struct_ArrowDeviceArray)
}

// DeviceArraySize is sizeof(struct ArrowDeviceArray): 128 bytes on 64-bit platforms.
const DeviceArraySize = C.sizeof_struct_ArrowDeviceArray

// Device is what a struct ArrowDeviceArray says besides its array.
type Device struct {
	DeviceID   int64
	DeviceType int32
	SyncEvent  unsafe.Pointer
	Reserved   [3]int64
}

// ReadDevice reads the device fields of the struct ArrowDeviceArray at p.
func ReadDevice(p unsafe.Pointer) Device {
	d := (*C.struct_ArrowDeviceArray)(p)
	return Device{DeviceID: int64(d.device_id), DeviceType: int32(d.device_type), SyncEvent: d.sync_event,
		Reserved: [3]int64{int64(d.reserved[0]), int64(d.reserved[1]), int64(d.reserved[2])}}
}

// SetDevice writes the device type and id of the struct ArrowDeviceArray at p.
func SetDevice(p unsafe.Pointer, deviceType int32, deviceID int64) {
	d := (*C.struct_ArrowDeviceArray)(p)
	d.device_type = C.int32_t(deviceType)
	d.device_id = C.int64_t(deviceID)
}

// DeviceArrayArray is the struct ArrowArray embedded in the struct ArrowDeviceArray at p, for
// ReadArray, CountReleases and ReleaseArray.
func DeviceArrayArray(p unsafe.Pointer) unsafe.Pointer {
	return unsafe.Pointer(&(*C.struct_ArrowDeviceArray)(p).array)
}

// CountReleases wraps the release callback of the struct ArrowArray at p so that Releases counts
// its calls from now on (one array at a time).
func CountReleases(p unsafe.Pointer) { C.count_releases((*C.struct_ArrowArray)(p)) }

// Releases is how often the callback that CountReleases wrapped has run.
func Releases() int { return int(C.releases()) }

// SetNChildren writes n_children of the struct ArrowSchema at p, to make it malformed, and returns
// the value it replaced (restore it before the schema is released: its release reads it).
func SetNChildren(p unsafe.Pointer, n int64) (old int64) {
	s := (*C.struct_ArrowSchema)(p)
	old = int64(s.n_children)
	s.n_children = C.int64_t(n)
	return old
}
