//! The hostile-input calls (tests/hostile: every public operator on small random inputs, many of
//! which break its rules) on cuda:0 against the CPU: the same outputs (dims, dtype, LoD and
//! bytes; the softmaxes and the logarithm of beam_search_step to float rounding) or the same
//! error, and never a panic; then the same calls with their inputs spread over the host and the
//! devices, which must be refused. `HOSTILE_CASES` sets the number of calls of each test (default
//! 10000); `HOSTILE_SEED=<seed>` replays one.

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

/// The ops that may succeed on inputs on different places, each for an input it does not use or
/// that holds nothing: merge (a 0-row part), sequence_conv (a padding it was told to ignore),
/// beam_search_step (ids it was not given), lod_reset (a y it was not given), and a TensorArray
/// write (over the one element on another place).
const MAY_IGNORE_A_PLACE: [&str; 5] = ["merge", "sequence_conv", "beam_search_step", "lod_reset", "tensor_array_write"];

/// The same kind of error with the same message, but for the place it names; the allocators of
/// the two places word running out of memory each their own way.
fn same_error(device: &Error, cpu: &Error) -> bool {
    std::mem::discriminant(device) == std::mem::discriminant(cpu)
        && (matches!(cpu, Error::OutOfMemory(_)) || device.to_string().replace("cuda:0", "cpu") == cpu.to_string())
}

/// Why the device outcome `got` differs from the CPU's, `want`; `None` when they agree. `place`,
/// when given, is where every output must be.
fn difference(
    name: &str,
    got: Result<Vec<LoDTensor>>,
    want: Result<Vec<LoDTensor>>,
    place: Option<Place>,
) -> Option<String> {
    let (got, want) = match (got, want) {
        (Ok(g), Ok(w)) => (g, w),
        (Err(g), Err(w)) => return (!same_error(&g, &w)).then(|| format!("device error {g:?}, CPU error {w:?}")),
        (g, w) => return Some(format!("device gave {:?}, CPU gave {:?}", g.map(|_| ()), w.map(|_| ()))),
    };
    if got.len() != want.len() {
        return Some(format!("{} outputs on the device, {} on the CPU", got.len(), want.len()));
    }
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        if place.is_some_and(|p| g.tensor().place() != p) {
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
    let seeds = seeds(10_000, 0xD1B5_4A32_D192_ED03);
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
            (case.name, both_ok, difference(case.name, got, want, Some(GPU)))
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

/// The hostile-input calls with each tensor on a place of its own drawing (the host or a device;
/// the elements of an array on one, or each on its own): a call whose inputs all share one place
/// must give the CPU's outcome as above; one whose inputs are on different places must not panic
/// or fail with `Internal`, and may succeed only with the CPU's results and only in the ops of
/// `MAY_IGNORE_A_PLACE` (no op copies an input to another place to make a call work).
#[test]
fn gpu_hostile_inputs_over_places_are_refused_or_give_the_cpu_outcome() {
    if !gpu_or_skip() {
        return;
    }
    let devices = lodtensor::cuda_device_count().unwrap();
    let places: Vec<Place> = std::iter::once(Place::Cpu).chain((0..devices.min(2) as u32).map(Place::Cuda)).collect();
    let mut failures = vec![];
    let mut accepted = std::collections::BTreeMap::<&str, usize>::new();
    for seed in seeds(10_000, 0x9FB2_1C65_1E98_DF25) {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let case = random_case(&mut Gen::new(seed));
            let want = case.on_inputs();
            let mut rng = common::Rng(seed ^ 0x7A5C_3E1F);
            let place = |rng: &mut common::Rng| places[rng.below(places.len())];
            let tensors: Vec<LoDTensor> = case.tensors.iter().map(|t| to_place(t, place(&mut rng)).unwrap()).collect();
            let arrays: Vec<TensorArray> = case
                .arrays
                .iter()
                .map(|a| {
                    // Half the time one place for the whole array, else one for each element.
                    let whole = (rng.below(2) == 0).then(|| place(&mut rng));
                    let element = |rng: &mut common::Rng| whole.unwrap_or_else(|| place(rng));
                    TensorArray::from_vec(
                        a.as_slice().iter().map(|t| to_place(t, element(&mut rng)).unwrap()).collect(),
                    )
                })
                .collect();
            let moved: Vec<Place> = tensors
                .iter()
                .chain(arrays.iter().flat_map(TensorArray::as_slice))
                .map(|t| t.tensor().place())
                .collect();
            let got = (case.run)(&tensors, &arrays);
            let one_place = moved.windows(2).all(|w| w[0] == w[1]);
            let mixed_ok = !one_place && got.is_ok();
            let why = match (&got, one_place) {
                _ if one_place && moved.first().is_none_or(|&p| p == Place::Cpu) => None,
                (_, true) if moved[0] == GPU => difference(case.name, got, want, Some(GPU)),
                (_, true) => None, // another device: its outcome is checked like cuda:0's by the test above
                (Err(Error::Internal(m)), false) => Some(format!("Internal over places {moved:?}: {m}")),
                (Err(_), false) => None,
                (Ok(_), false) => difference(case.name, got, want, None)
                    .map(|why| format!("succeeded over places {moved:?}, unlike the CPU: {why}")),
            };
            (case.name, mixed_ok, why)
        }));
        match outcome {
            Ok((name, mixed_ok, None)) => *accepted.entry(name).or_default() += usize::from(mixed_ok),
            Ok((name, _, Some(why))) => failures.push(format!("seed {seed}: {name}: {why}")),
            Err(panic) => failures.push(format!("seed {seed}: panicked: {}", panic_message(&*panic))),
        }
    }
    assert_none(&failures);
    accepted.retain(|_, n| *n > 0);
    eprintln!("calls over different places that succeeded, per op: {accepted:?}");
    let unexpected: Vec<_> = accepted.keys().filter(|name| !MAY_IGNORE_A_PLACE.contains(name)).collect();
    assert!(unexpected.is_empty(), "ops that ran on inputs on different places: {unexpected:?}");
}
