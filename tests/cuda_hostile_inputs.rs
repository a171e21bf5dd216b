//! The hostile-input calls (tests/hostile: every public operator on small random inputs, many of
//! which break its rules) on cuda:0 against the CPU: the same outputs (dims, dtype, LoD and
//! bytes; the softmaxes and the logarithm of beam_search_step to float rounding) or the same
//! error, and never a panic. `HOSTILE_CASES` sets the number of calls (default 10000);
//! `HOSTILE_SEED=<seed>` replays one.

mod common;
mod cuda_common;
mod hostile;

use cuda_common::{gpu, gpu_or_skip, GPU};
use hostile::{assert_none, panic_message, random_case, seeds, Gen};
use lodtensor::ops::cast;
use lodtensor::{to_place, DType, Error, LoDTensor, Place, Result, TensorArray};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Ops whose device results may differ from the CPU's in the last bits (`exp` and `ln` on the
/// device).
const ROUNDED: [&str; 3] = ["sequence_softmax", "log_softmax", "beam_search_step"];

/// The same kind of error with the same message, but for the place it names; the allocators of
/// the two places word running out of memory each their own way.
fn same_error(device: &Error, cpu: &Error) -> bool {
    std::mem::discriminant(device) == std::mem::discriminant(cpu)
        && (matches!(cpu, Error::OutOfMemory(_)) || device.to_string().replace("cuda:0", "cpu") == cpu.to_string())
}

/// Why the device outcome `got` differs from the CPU's, `want`; `None` when they agree.
fn difference(name: &str, got: Result<Vec<LoDTensor>>, want: Result<Vec<LoDTensor>>) -> Option<String> {
    let (got, want) = match (got, want) {
        (Ok(g), Ok(w)) => (g, w),
        (Err(g), Err(w)) => return (!same_error(&g, &w)).then(|| format!("device error {g:?}, CPU error {w:?}")),
        (g, w) => return Some(format!("device gave {:?}, CPU gave {:?}", g.map(|_| ()), w.map(|_| ()))),
    };
    if got.len() != want.len() {
        return Some(format!("{} outputs on the device, {} on the CPU", got.len(), want.len()));
    }
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        if g.tensor().place() != GPU {
            return Some(format!("output {i} is on {}", g.tensor().place()));
        }
        let g = to_place(g, Place::Cpu).unwrap();
        if (g.dims(), g.tensor().dtype(), g.lod()) != (w.dims(), w.tensor().dtype(), w.lod()) {
            return Some(format!(
                "output {i}: device {:?} {} {:?}, CPU {:?} {} {:?}",
                g.dims(),
                g.tensor().dtype(),
                g.lod(),
                w.dims(),
                w.tensor().dtype(),
                w.lod()
            ));
        }
        let float = [DType::F16, DType::BF16, DType::F32, DType::F64].contains(&g.tensor().dtype());
        let rounded = ROUNDED.contains(&name) && float;
        let same = if rounded {
            let values = |t: &LoDTensor| cast(t, DType::F64).unwrap().tensor().as_slice::<f64>().unwrap().to_vec();
            let close =
                |a: f64, b: f64| a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-5 * b.abs().max(1.0);
            values(&g).iter().zip(values(w)).all(|(&a, b)| close(a, b))
        } else {
            g.tensor().bytes().unwrap() == w.tensor().bytes().unwrap()
        };
        if !same {
            return Some(format!("output {i}: the data differ"));
        }
    }
    None
}

#[test]
fn gpu_hostile_inputs_give_the_cpu_outcome() {
    if !gpu_or_skip() {
        return;
    }
    let count: u64 = std::env::var("HOSTILE_CASES").map_or(10_000, |v| v.parse().expect("HOSTILE_CASES: a number"));
    let seeds = seeds(count, 0xD1B5_4A32_D192_ED03);
    let mut failures = vec![];
    let mut agreed_ok = 0;
    for seed in seeds {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let case = random_case(&mut Gen::new(seed));
            let want = case.on_inputs();
            let tensors: Vec<LoDTensor> = case.tensors.iter().map(gpu).collect();
            let arrays: Vec<TensorArray> =
                case.arrays.iter().map(|a| TensorArray::from_vec(a.as_slice().iter().map(gpu).collect())).collect();
            let got = (case.run)(&tensors, &arrays);
            let both_ok = want.is_ok() && got.is_ok();
            (case.name, both_ok, difference(case.name, got, want))
        }));
        match outcome {
            Ok((_, both_ok, None)) => agreed_ok += usize::from(both_ok),
            Ok((name, _, Some(why))) => failures.push(format!("seed {seed}: {name}: {why}")),
            Err(panic) => failures.push(format!("seed {seed}: panicked: {}", panic_message(&*panic))),
        }
    }
    assert_none(&failures);
    eprintln!("{agreed_ok} calls returned the same results on both places, the others the same error");
}
