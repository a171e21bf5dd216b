//! The host's work on a LoD per call: what an op costs for its LoD alone, which grows with the
//! sequences and not with the bytes of the rows. One batch of 2^22 sequences of one row (a LoD of
//! 32 MiB over a tensor of 16 MiB), each case timed 21 times; the median milliseconds, and beside
//! the ops a copy of their tensor's bytes (a plain `Tensor::copy`) timed between their runs. Not
//! part of `cargo test` or CI.
//!
//!   cargo bench --bench lod [-- NAME...]
//!
//! With names, only the cases whose name contains one of them run.

use lodtensor::ops::{
    sequence_concat, sequence_expand, sequence_expand_as, sequence_pad, sequence_pool, sequence_reverse,
    sequence_unpad, to_place, PoolType,
};
use lodtensor::{DType, Dim, LoDTensor, Lod, Place, Tensor};
use std::hint::black_box;
use std::time::Instant;

const RUNS: usize = 21;
const SEQUENCES: usize = 1 << 22;

fn ms(f: &mut dyn FnMut()) -> f64 {
    let start = Instant::now();
    f();
    start.elapsed().as_secs_f64() * 1e3
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The median of `op` and of `calibration`, run alternately.
fn pair(op: &mut dyn FnMut(), calibration: &mut dyn FnMut()) -> (f64, f64) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        a.push(ms(op));
        b.push(ms(calibration));
    }
    (median(a), median(b))
}

fn main() {
    let lod = Lod::from_lengths(&[vec![1; SEQUENCES]]).unwrap();
    let t = Tensor::zeros(DType::F32, Dim::new(&[SEQUENCES, 1]).unwrap()).unwrap();
    let x = LoDTensor::new(t.clone(), lod.clone()).unwrap();
    let dense = LoDTensor::dense(t.clone());
    let pad = LoDTensor::dense(Tensor::zeros(DType::F32, Dim::new(&[1]).unwrap()).unwrap());
    println!("{SEQUENCES} sequences of one 4-byte row; median ms of {RUNS} runs");
    let (padded, length) = sequence_pad(&x, &pad, -1).unwrap();
    let mut copy = || drop(black_box(t.copy().unwrap()));
    type Case<'a> = (&'a str, Box<dyn FnMut() + 'a>);
    let cases: Vec<Case> = vec![
        ("Lod::clone", Box::new(|| drop(black_box(lod.clone())))),
        ("LoDTensor::new", Box::new(|| drop(black_box(LoDTensor::new(t.clone(), lod.clone()).unwrap())))),
        ("to_place (cpu)", Box::new(|| drop(black_box(to_place(&x, Place::Cpu).unwrap())))),
        ("sequence_expand_as", Box::new(|| drop(black_box(sequence_expand_as(&dense, &x).unwrap())))),
        ("sequence_expand (x dense)", Box::new(|| drop(black_box(sequence_expand(&dense, &x, 0).unwrap())))),
        ("sequence_expand (x with a LoD)", Box::new(|| drop(black_box(sequence_expand(&x, &x, 0).unwrap())))),
        ("sequence_concat of x and x", Box::new(|| drop(black_box(sequence_concat(&[&x, &x]).unwrap())))),
        ("sequence_pad (to the longest)", Box::new(|| drop(black_box(sequence_pad(&x, &pad, -1).unwrap())))),
        ("sequence_unpad", Box::new(|| drop(black_box(sequence_unpad(&padded, &length).unwrap())))),
        ("sequence_reverse", Box::new(|| drop(black_box(sequence_reverse(&x).unwrap())))),
        ("sequence_pool sum", Box::new(|| drop(black_box(sequence_pool(&x, PoolType::Sum, 0.0).unwrap())))),
        ("sequence_pool last", Box::new(|| drop(black_box(sequence_pool(&x, PoolType::Last, 0.0).unwrap())))),
        ("sequence_pool max", Box::new(|| drop(black_box(sequence_pool(&x, PoolType::Max, 0.0).unwrap())))),
    ];
    let only: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    println!("| case | median ms | copy of the tensor, ms |\n|---|---:|---:|");
    for (name, mut op) in cases {
        if !only.is_empty() && !only.iter().any(|o| name.contains(o.as_str())) {
            continue;
        }
        let (op_ms, copy_ms) = pair(&mut op, &mut copy);
        println!("| {name} | {op_ms:.3} | {copy_ms:.3} |");
    }
}
