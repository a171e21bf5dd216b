//! Operators over LoDTensors, one file per family. Each op checks its inputs (naming the argument,
//! the index and the rule), then runs the kernel for the inputs' place. Inputs are never modified
//! unless the op says it works in place.

use crate::error::{ensure, Result};
use crate::place::Place;
use crate::tensor::Tensor;

/// The common place of an op's inputs; inputs on different places are an error naming both (the
/// library never copies between places behind the caller's back).
pub(crate) fn common_place(inputs: &[(&str, &Tensor)]) -> Result<Place> {
    common_place_of(inputs.len(), |i| inputs[i].1, |i| inputs[i].0.to_string())
}

/// [`common_place`] of `n` inputs, input `i` being `tensor(i)`, named `name(i)`: the names made
/// only for the error (an op of many inputs named by their index formats none on success).
pub(crate) fn common_place_of<'a>(
    n: usize,
    tensor: impl Fn(usize) -> &'a Tensor,
    name: impl Fn(usize) -> String,
) -> Result<Place> {
    assert!(n > 0, "an op has inputs");
    let place = tensor(0).place();
    for i in 1..n {
        let p = tensor(i).place();
        ensure!(
            p == place,
            InvalidArgument,
            "{}: is on {p}, but {} is on {place}; inputs must be on the same place",
            name(i),
            name(0)
        );
    }
    Ok(place)
}

pub mod expand;
pub(crate) mod host_inputs;
pub mod pad;
pub mod pooling;
pub mod scatter;
mod support;
pub use expand::*;
pub use pad::*;
pub use pooling::*;
pub use scatter::*;
pub mod scatter_rows;
pub use scatter_rows::*;
pub mod beam_search;
pub mod beam_search_decode;
pub mod rnn;
mod sequence_misc;
pub mod tensor_array;
pub use sequence_misc::*;
mod tensor_ops;
pub use tensor_ops::*;
pub mod topk;
pub mod transfer;
pub use transfer::*;
mod fill_on;
pub use fill_on::*;
