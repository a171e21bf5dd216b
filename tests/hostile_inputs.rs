//! Every public operator on random inputs, many of which break its rules (tests/hostile, the
//! generator): whatever an op is given, it must return `Ok` or a documented error, never panic
//! and never return `Internal` (what a caught panic or a broken invariant becomes at the C
//! boundary), and every LoD it returns must be valid for its tensor. A failure prints the seed;
//! `HOSTILE_SEED=<seed>` replays that case alone, with the panic's message and backtrace;
//! `HOSTILE_CASES` sets the number of calls (default 200000).

mod common;
mod hostile;

use hostile::{assert_none, panic_message, random_case, seeds, Gen, OPS};
use lodtensor::{check_lod, Error, LoDTensor};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Every LoD an op returns is valid for its tensor.
fn check_outputs(outputs: &[LoDTensor]) -> Result<(), String> {
    for (i, o) in outputs.iter().enumerate() {
        let rows = o.dims().as_slice().first().copied();
        if !o.lod().is_empty() {
            check_lod(o.lod().levels(), rows).map_err(|e| format!("output {i}: invalid LoD {:?}: {e}", o.lod()))?;
        }
    }
    Ok(())
}

#[test]
fn no_input_panics_an_op_or_breaks_its_output() {
    let seeds = seeds(200_000, 0x9E37_79B9_7F4A_7C15);
    let mut failures = vec![];
    // Per op: calls, and calls that returned Ok.
    let mut ran = BTreeMap::<&str, (usize, usize)>::new();
    // The panics are collected below with their seeds; the default hook would print each one.
    let hook = std::panic::take_hook();
    if std::env::var_os("HOSTILE_SEED").is_none() {
        std::panic::set_hook(Box::new(|_| {}));
    }
    for seed in seeds {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let case = random_case(&mut Gen::new(seed));
            (case.name, case.on_inputs())
        }));
        match outcome {
            Ok((name, result)) => {
                let count = ran.entry(name).or_default();
                count.0 += 1;
                match result {
                    Err(Error::Internal(m)) => failures.push(format!("seed {seed}: {name}: Internal: {m}")),
                    Err(_) => {}
                    Ok(outputs) => match check_outputs(&outputs) {
                        Ok(()) => count.1 += 1,
                        Err(why) => failures.push(format!("seed {seed}: {name}: {why}")),
                    },
                }
            }
            Err(panic) => failures.push(format!("seed {seed}: panicked: {}", panic_message(&*panic))),
        }
    }
    std::panic::set_hook(hook);
    assert_none(&failures);
    // Every op was called, and on some inputs it accepted: a generator that stopped reaching an
    // op, or whose inputs an op always refused, would test nothing but its argument checks.
    // (Miri's few thousand calls, which look for undefined behaviour, are too few for the second.)
    eprintln!("(calls, Ok) per op: {ran:?}");
    assert_eq!(ran.len(), OPS, "ops called: {ran:?}");
    assert!(cfg!(miri) || ran.values().all(|&(_, ok)| ok > 0), "ops that never returned Ok: {ran:?}");
}
