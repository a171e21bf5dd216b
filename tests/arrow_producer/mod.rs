//! A producer of Arrow arrays for the import tests (tests/arrow.rs, and tests/cuda_arrow.rs on a
//! device): arrays made from specs, random and damaged as a careless producer might make them, and
//! a reader of an array's logical value written from the interface's rules, to compare an
//! import with.
#![allow(dead_code)]

use crate::common::Rng;
use lodtensor::interop::arrow::{ArrowArray, ArrowSchema};
use lodtensor::{DType, LoDTensor};
use std::ffi::{c_void, CStr, CString};
use std::sync::atomic::{AtomicUsize, Ordering};

/// An array's logical value, as Arrow defines it: a list of values or one element's bytes (a
/// bool element as one byte, 0 or 1).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    List(Vec<Value>),
    Element(Vec<u8>),
}

pub fn element_size(format: &str) -> usize {
    match format {
        "b" | "C" | "c" => 1,
        "s" | "e" => 2,
        "i" | "f" => 4,
        "l" | "g" => 8,
        other => panic!("no element format {other}"),
    }
}

/// Entries `[0, length)` of `array` of type `schema`, read by the interface's rules: each array's
/// offset shifts its buffers; a list's entries are its child's `[offsets[i], offsets[i + 1])`; a
/// fixed-size list of n has its child's `[i * n, (i + 1) * n)`; binary and strings are lists of
/// their bytes `[offsets[i], offsets[i + 1])` of buffer 2, fixed-size binary of n of its bytes
/// `[i * n, (i + 1) * n)`. Nulls fail the reading.
pub unsafe fn read(schema: &ArrowSchema, array: &ArrowArray) -> Vec<Value> {
    read_range(schema, array, 0, array.length as usize)
}

pub unsafe fn read_range(schema: &ArrowSchema, array: &ArrowArray, start: usize, len: usize) -> Vec<Value> {
    let format = CStr::from_ptr(schema.format).to_str().unwrap();
    let at = array.offset as usize + start;
    let validity = (*array.buffers).cast::<u8>();
    if array.null_count != 0 && !validity.is_null() {
        assert!((at..at + len).all(|i| *validity.add(i / 8) >> (i % 8) & 1 == 1), "{format}: nulls");
    }
    let buffer = |i: usize| *array.buffers.add(i);
    let child = || (&**schema.children, &**array.children);
    match format {
        "+l" | "+L" => (at..at + len)
            .map(|i| {
                let (b, e) = if format == "+L" {
                    let o = buffer(1).cast::<i64>();
                    (*o.add(i) as usize, *o.add(i + 1) as usize)
                } else {
                    let o = buffer(1).cast::<i32>();
                    (*o.add(i) as usize, *o.add(i + 1) as usize)
                };
                let (s, a) = child();
                Value::List(read_range(s, a, b, e - b))
            })
            .collect(),
        f if f.starts_with("+w:") => {
            let n: usize = f[3..].parse().unwrap();
            (at..at + len)
                .map(|i| {
                    let (s, a) = child();
                    Value::List(read_range(s, a, i * n, n))
                })
                .collect()
        }
        "z" | "Z" | "u" | "U" => {
            let wide = format == "Z" || format == "U";
            let offset = |i: usize| {
                if wide {
                    *buffer(1).cast::<i64>().add(i) as usize
                } else {
                    *buffer(1).cast::<i32>().add(i) as usize
                }
            };
            let data = buffer(2).cast::<u8>();
            (at..at + len).map(|i| Value::List((offset(i)..offset(i + 1)).map(|b| byte(data, b)).collect())).collect()
        }
        f if f.starts_with("w:") => {
            let n: usize = f[2..].parse().unwrap();
            let data = buffer(1).cast::<u8>();
            (at..at + len).map(|i| Value::List((i * n..(i + 1) * n).map(|b| byte(data, b)).collect())).collect()
        }
        "b" => {
            let bits = buffer(1).cast::<u8>();
            (at..at + len).map(|i| Value::Element(vec![(*bits.add(i / 8) >> (i % 8)) & 1])).collect()
        }
        f => {
            let size = element_size(f);
            let data = buffer(1).cast::<u8>();
            (at..at + len)
                .map(|i| Value::Element(std::slice::from_raw_parts(data.add(i * size), size).to_vec()))
                .collect()
        }
    }
}

pub unsafe fn byte(data: *const u8, i: usize) -> Value {
    Value::Element(vec![*data.add(i)])
}

/// A LoD tensor's value as the module's mapping says: sequences of each level, outermost first,
/// over rows, each row a list per dim after the first, over elements.
pub fn tensor_value(x: &LoDTensor) -> Vec<Value> {
    let t = x.tensor();
    let dims = t.dims().as_slice().to_vec();
    let size = t.dtype().size();
    let bytes = t.bytes().unwrap();
    let elements: Vec<Value> = bytes.chunks(size).map(|c| Value::Element(c.to_vec())).collect();
    // Lists of each dim after the first, innermost first: as many as the dims before it make.
    let mut values = elements;
    for k in (1..dims.len()).rev() {
        let (lists, n) = (dims[..k].iter().product::<usize>(), dims[k]);
        values = (0..lists).map(|i| Value::List(values[i * n..(i + 1) * n].to_vec())).collect();
    }
    let levels = x.lod().levels();
    for level in levels.iter().rev() {
        values = level.windows(2).map(|w| Value::List(values[w[0]..w[1]].to_vec())).collect();
    }
    values
}

pub const DTYPES: [(DType, &str); 9] = [
    (DType::Bool, "b"),
    (DType::U8, "C"),
    (DType::I8, "c"),
    (DType::I16, "s"),
    (DType::I32, "i"),
    (DType::I64, "l"),
    (DType::F16, "e"),
    (DType::F32, "f"),
    (DType::F64, "g"),
];

/// An Arrow array a producer made: its buffers and child live in the box that `private_data`
/// points to; its release counts calls in `released` (the root's only) and frees the box.
pub struct Made {
    pub format: CString,
    pub buffers: Vec<Buffer>,
    pub buffer_ptrs: Vec<*const c_void>,
    pub child_array: Vec<*mut ArrowArray>,
    pub child_schema: Vec<*mut ArrowSchema>,
    pub released: Option<&'static AtomicUsize>,
}

/// A buffer's bytes at an address aligned to 8, as Arrow producers align them (a `Vec<u8>` is
/// aligned to 1 only, which would make the reader's offsets and the library's elements unaligned).
pub struct Buffer {
    words: Vec<u64>,
    len: usize,
}

impl Buffer {
    fn new(bytes: &[u8]) -> Buffer {
        let word = |c: &[u8]| {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            u64::from_ne_bytes(w)
        };
        Buffer { words: bytes.chunks(8).map(word).collect(), len: bytes.len() }
    }
}

impl std::ops::Deref for Buffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the words hold `len` initialized bytes.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.len) }
    }
}

/// One array of a chain to make: its format, its length and offset, its buffers (validity first;
/// None for a NULL buffer), its child.
#[derive(Clone)]
pub struct Spec {
    pub format: String,
    pub length: i64,
    pub offset: i64,
    pub null_count: i64,
    pub buffers: Vec<Option<Vec<u8>>>,
    pub child: Option<Box<Spec>>,
}

pub fn values_spec(format: &str, bytes: Vec<u8>, length: i64, offset: i64) -> Spec {
    Spec { format: format.into(), length, offset, null_count: 0, buffers: vec![None, Some(bytes)], child: None }
}

pub fn offsets_bytes(offsets: &[i64], wide: bool) -> Vec<u8> {
    if wide {
        offsets.iter().flat_map(|o| o.to_ne_bytes()).collect()
    } else {
        offsets.iter().flat_map(|&o| (o as i32).to_ne_bytes()).collect()
    }
}

pub fn list_spec(offsets: &[i64], wide: bool, offset: i64, child: Spec) -> Spec {
    Spec {
        format: if wide { "+L" } else { "+l" }.into(),
        length: offsets.len() as i64 - 1 - offset,
        offset,
        null_count: 0,
        buffers: vec![None, Some(offsets_bytes(offsets, wide))],
        child: Some(Box::new(child)),
    }
}

/// The formats of variable-size binary and strings, 32-bit offsets then 64-bit.
pub const BINARY: [&str; 4] = ["z", "u", "Z", "U"];

/// A binary or string array (`format` one of [`BINARY`]) of entries `offsets` over `data`.
pub fn bytes_spec(format: &str, offsets: &[i64], data: &[u8], offset: i64) -> Spec {
    let wide = format == "Z" || format == "U";
    Spec {
        format: format.into(),
        length: offsets.len() as i64 - 1 - offset,
        offset,
        null_count: 0,
        buffers: vec![None, Some(offsets_bytes(offsets, wide)), Some(data.to_vec())],
        child: None,
    }
}

pub fn fixed_spec(n: usize, length: i64, offset: i64, child: Spec) -> Spec {
    Spec { format: format!("+w:{n}"), length, offset, null_count: 0, buffers: vec![None], child: Some(Box::new(child)) }
}

pub unsafe extern "C" fn release_made(array: *mut ArrowArray) {
    let made = Box::from_raw((*array).private_data.cast::<Made>());
    for &c in &made.child_array {
        if let Some(r) = (*c).release {
            r(c);
        }
        drop(Box::from_raw(c));
    }
    if let Some(count) = made.released {
        count.fetch_add(1, Ordering::SeqCst);
    }
    (*array).release = None;
}

pub unsafe extern "C" fn release_made_schema(schema: *mut ArrowSchema) {
    let made = Box::from_raw((*schema).private_data.cast::<Made>());
    for &c in &made.child_schema {
        if let Some(r) = (*c).release {
            r(c);
        }
        drop(Box::from_raw(c));
    }
    (*schema).release = None;
}

/// The schema and array of `spec`; the array's release counts in `released`.
pub fn make(spec: Spec, released: &'static AtomicUsize) -> (ArrowSchema, ArrowArray) {
    make_node(spec, Some(released))
}

pub fn make_node(spec: Spec, released: Option<&'static AtomicUsize>) -> (ArrowSchema, ArrowArray) {
    let child = spec.child.map(|c| make_node(*c, None));
    let mut made = Box::new(Made {
        format: CString::new(spec.format).unwrap(),
        buffers: spec.buffers.iter().map(|b| Buffer::new(b.as_deref().unwrap_or_default())).collect(),
        buffer_ptrs: Vec::new(),
        child_array: Vec::new(),
        child_schema: Vec::new(),
        released,
    });
    made.buffer_ptrs = spec
        .buffers
        .iter()
        .zip(&made.buffers)
        .map(|(b, v)| if b.is_some() { v.as_ptr().cast() } else { std::ptr::null() })
        .collect();
    let mut schema_part = Box::new(Made {
        format: made.format.clone(),
        buffers: Vec::new(),
        buffer_ptrs: Vec::new(),
        child_array: Vec::new(),
        child_schema: Vec::new(),
        released: None,
    });
    if let Some((s, a)) = child {
        made.child_array.push(Box::into_raw(Box::new(a)));
        schema_part.child_schema.push(Box::into_raw(Box::new(s)));
    }
    let n_children = made.child_array.len() as i64;
    let schema = ArrowSchema {
        format: schema_part.format.as_ptr(),
        name: std::ptr::null(),
        metadata: std::ptr::null(),
        flags: 0,
        n_children,
        children: schema_part.child_schema.as_mut_ptr(),
        dictionary: std::ptr::null_mut(),
        release: Some(release_made_schema),
        private_data: Box::into_raw(schema_part).cast(),
    };
    let array = ArrowArray {
        length: spec.length,
        null_count: spec.null_count,
        offset: spec.offset,
        n_buffers: made.buffer_ptrs.len() as i64,
        n_children,
        buffers: made.buffer_ptrs.as_mut_ptr(),
        children: made.child_array.as_mut_ptr(),
        dictionary: std::ptr::null_mut(),
        release: Some(release_made),
        private_data: Box::into_raw(made).cast(),
    };
    (schema, array)
}

pub fn bytes_of<T: Copy>(v: &[T]) -> Vec<u8> {
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)).to_vec() }
}

/// A random chain as a producer would make it (lists of both widths with offsets that start
/// anywhere, array offsets, fixed-size lists, any element type) and the same as a tensor.
pub fn random_spec(rng: &mut Rng, format: &str, levels: usize, fixed: &[usize], length: usize) -> Spec {
    let offset = rng.below(3);
    if levels > 0 {
        let mut offsets = vec![rng.below(4) as i64];
        for _ in 0..offset + length {
            offsets.push(offsets.last().unwrap() + if rng.below(4) == 0 { 0 } else { rng.below(4) as i64 });
        }
        let child_len = *offsets.last().unwrap() as usize + rng.below(2);
        let child = random_spec(rng, format, levels - 1, fixed, child_len);
        let mut s = list_spec(&offsets, rng.below(2) == 0, offset as i64, child);
        s.length = length as i64;
        return s;
    }
    if let Some((&n, rest)) = fixed.split_first() {
        let spare = rng.below(2) * n;
        let child = random_spec(rng, format, 0, rest, (offset + length) * n + spare);
        return fixed_spec(n, length as i64, offset as i64, child);
    }
    let count = offset + length;
    if BINARY.contains(&format) {
        let mut offsets = vec![rng.below(4) as i64];
        for _ in 0..count {
            offsets.push(offsets.last().unwrap() + if rng.below(4) == 0 { 0 } else { rng.below(5) as i64 });
        }
        let data: Vec<u8> =
            (0..*offsets.last().unwrap() as usize + rng.below(2)).map(|_| rng.below(256) as u8).collect();
        let mut s = bytes_spec(format, &offsets, &data, offset as i64);
        s.length = length as i64;
        return s;
    }
    if let Some(n) = format.strip_prefix("w:") {
        let data = (0..count * n.parse::<usize>().unwrap()).map(|_| rng.below(256) as u8).collect();
        return values_spec(format, data, length as i64, offset as i64);
    }
    let bytes: Vec<u8> = if format == "b" {
        (0..count.div_ceil(8)).map(|_| rng.below(256) as u8).collect()
    } else {
        (0..count * element_size(format)).map(|_| rng.below(256) as u8).collect()
    };
    values_spec(format, bytes, length as i64, offset as i64)
}

/// Damages one array of `spec` within its buffers (what a careless producer might hand over):
/// a shorter length, a larger offset, an offset entry anywhere, or a validity bitmap, mostly of
/// set bits, with a null count of -1, 0 or 1.
pub fn damage(rng: &mut Rng, spec: &mut Spec) {
    let mut node = spec;
    while node.child.is_some() && rng.below(2) == 0 {
        node = node.child.as_mut().unwrap();
    }
    let length = node.length as usize;
    match rng.below(4) {
        0 => node.length = rng.below(length + 1) as i64,
        1 => {
            let d = rng.below(length + 1) as i64;
            (node.offset, node.length) = (node.offset + d, node.length - d);
        }
        2 if ["+L", "+l"].contains(&node.format.as_str()) || BINARY.contains(&node.format.as_str()) => {
            let wide = ["+L", "Z", "U"].contains(&node.format.as_str());
            let width = if wide { 8 } else { 4 };
            // Binary's offsets index its bytes, which only they bound: they stay within them.
            let top = node.buffers.get(2).map_or(10, |data| data.as_ref().unwrap().len());
            let bytes = node.buffers[1].as_mut().unwrap();
            let i = rng.below(bytes.len() / width) * width;
            let value = rng.below(top + 3) as i64 - 2;
            if wide {
                bytes[i..i + 8].copy_from_slice(&value.to_ne_bytes());
            } else {
                bytes[i..i + 4].copy_from_slice(&(value as i32).to_ne_bytes());
            }
        }
        _ => {
            let bits = (node.offset as usize + length).div_ceil(8);
            let all_set = rng.below(2) == 0;
            node.buffers[0] =
                Some((0..bits).map(|_| if all_set { 0xff } else { 0xff ^ (1 << rng.below(8)) }).collect());
            node.null_count = rng.below(3) as i64 - 1;
        }
    }
}

/// A producer's record batch: a struct of `length` rows from `offset` (validity bits `validity`
/// with `null_count`, or none) over the arrays of `columns`; the root's release counts in
/// `released`.
pub fn make_batch(
    columns: Vec<Spec>,
    length: i64,
    offset: i64,
    validity: Option<(Vec<u8>, i64)>,
    released: &'static AtomicUsize,
) -> (ArrowSchema, ArrowArray) {
    let (bits, null_count) = validity.map_or((None, 0), |(b, n)| (Some(b), n));
    let spec = Spec { format: "+s".into(), length, offset, null_count, buffers: vec![bits], child: None };
    let (mut schema, mut array) = make_node(spec, Some(released));
    unsafe {
        let (schema_part, made) = (&mut *schema.private_data.cast::<Made>(), &mut *array.private_data.cast::<Made>());
        for column in columns {
            let (s, a) = make_node(column, None);
            schema_part.child_schema.push(Box::into_raw(Box::new(s)));
            made.child_array.push(Box::into_raw(Box::new(a)));
        }
        (schema.n_children, array.n_children) = (made.child_array.len() as i64, made.child_array.len() as i64);
        (schema.children, array.children) = (schema_part.child_schema.as_mut_ptr(), made.child_array.as_mut_ptr());
    }
    (schema, array)
}

/// Column `i` of a record batch: its schema and array.
pub unsafe fn column<'a>(
    schema: &'a ArrowSchema,
    array: &'a ArrowArray,
    i: usize,
) -> (&'a ArrowSchema, &'a ArrowArray) {
    (&**schema.children.add(i), &**array.children.add(i))
}

/// A random chain (`round` picks its element format: each of [`DTYPES`], fixed-size binary, and
/// binary and strings, only lists above those) damaged one to three times by [`damage`].
pub fn damaged_spec(rng: &mut Rng, round: usize) -> Spec {
    let format = match round % (DTYPES.len() + 3) {
        i if i < DTYPES.len() => DTYPES[i].1,
        i if i == DTYPES.len() => "w:3",
        _ => BINARY[rng.below(4)],
    };
    let levels = rng.below(3);
    let mut fixed: Vec<usize> = (0..rng.below(3)).map(|_| rng.below(4)).collect();
    if BINARY.contains(&format) {
        fixed.clear();
    }
    let length = if levels > 0 { 1 + rng.below(4) } else { rng.below(5) };
    let mut spec = random_spec(rng, format, levels, &fixed, length);
    for _ in 0..1 + rng.below(3) {
        damage(rng, &mut spec);
    }
    spec
}

/// A random record batch, `(columns, length, offset)` of [`make_batch`], of one to three random
/// columns: one of them damaged by [`damage`], or the struct's rows moved past a column's end.
pub fn damaged_batch(rng: &mut Rng) -> (Vec<Spec>, i64, i64) {
    let (offset, length) = (rng.below(3), 1 + rng.below(4));
    let mut columns: Vec<Spec> = (0..1 + rng.below(3))
        .map(|_| {
            let (_, format) = DTYPES[rng.below(DTYPES.len())];
            let levels = rng.below(3);
            let fixed: Vec<usize> = (0..rng.below(2)).map(|_| 1 + rng.below(3)).collect();
            random_spec(rng, format, levels, &fixed, offset + length)
        })
        .collect();
    let (mut struct_offset, mut struct_length) = (offset as i64, length as i64);
    match rng.below(3) {
        0 => struct_length += 1 + rng.below(2) as i64,
        1 => struct_offset += 1,
        _ => {
            let i = rng.below(columns.len());
            damage(rng, &mut columns[i]);
        }
    }
    (columns, struct_length, struct_offset)
}
