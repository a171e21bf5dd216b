//! The dynamic-RNN driver: the whole TensorArray loop (rank, unpack, reorder the initial state,
//! shrink it step by step, pack the step outputs) around a caller's step function.

use super::tensor_array::{
    array_to_lod_tensor, lod_tensor_to_array, reorder_lod_tensor_by_rank, shrink_rnn_memory, units,
};
use crate::error::{ensure, Result};
use crate::lod_tensor::LoDTensor;
use crate::tensor_array::{RankTable, TensorArray};

/// Runs a dynamic RNN over the sequences of LoD level `level` of `x`.
///
/// The sequences are ranked by length (longest first); `x` is unpacked into time steps; the state
/// starts as `init_state` (one unit — row, or top-level sequence if it has a LoD — per sequence of
/// `level`, in the original order) put in rank order. For each step `t`, `step(t, input, prev)`
/// gets the step input (one unit per sequence still alive) and the state shrunk to the live
/// sequences, and returns `(output, new_state)`, each with exactly one unit per live sequence.
/// The outputs are packed back into one tensor in the original order: its LoD is `x`'s levels
/// down to `level`, then the outputs' own levels.
///
/// `x` and `init_state` must be on one place (on a CUDA device every step's input and state are
/// there too); the step may return tensors on any place, but the outputs must share one to be
/// packed.
///
/// Errors: `init_state` on another place than `x` (`InvalidArgument` naming both, before any
/// step); those of the rank table, unpack, reorder and pack (prefixed with the argument they
/// concern); a step's error is returned as is and stops the loop; a step result with the wrong
/// number of units is `InvalidArgument`; if every sequence is empty the step never runs and the
/// output's shape is unknown: `InvalidArgument`.
pub fn dynamic_rnn<F>(x: &LoDTensor, level: usize, init_state: &LoDTensor, mut step: F) -> Result<LoDTensor>
where
    F: FnMut(usize, &LoDTensor, &LoDTensor) -> Result<(LoDTensor, LoDTensor)>,
{
    super::common_place(&[("x", x.tensor()), ("init_state", init_state.tensor())])?;
    let table = RankTable::from_lod_tensor(x, level)?;
    let inputs = lod_tensor_to_array(x, &table)?;
    ensure!(
        !inputs.is_empty(),
        InvalidArgument,
        "x: every sequence of level {level} is empty, so step_fn never runs and the output's shape is unknown"
    );
    let mut state = reorder_lod_tensor_by_rank(init_state, &table).map_err(|e| e.context("init_state: "))?;
    let mut outputs = TensorArray::new();
    for (t, input) in inputs.as_slice().iter().enumerate() {
        let alive = table.alive_at(t);
        let prev = shrink_rnn_memory(&state, &table, t).map_err(|e| e.context("state: "))?;
        let (output, new_state) = step(t, input, &prev)?;
        for (what, got) in [("step output", &output), ("new state", &new_state)] {
            let have = units(got, what)?;
            ensure!(
                have == alive,
                InvalidArgument,
                "step_fn: at step {t} the {what} has {have} {}, but {alive} sequence(s) are alive; \
                 it needs one per live sequence",
                if got.lod().is_empty() { "row(s)" } else { "top-level sequence(s)" }
            );
        }
        outputs.push(output);
        state = new_state;
    }
    array_to_lod_tensor(&outputs, &table).map_err(|e| e.context("step outputs: "))
}
