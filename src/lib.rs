//! lodtensor: tensors of variable-length sequences ("level of detail" offsets) with a C ABI.
//!
//! The Rust API is the core types re-exported here; the C API lives in [`capi`] and is described
//! by the generated header `include/lodtensor.h`.

/// cbindgen:ignore
pub mod backend;
pub mod capi;
/// cbindgen:ignore
pub mod dim;
/// cbindgen:ignore
pub mod dtype;
/// cbindgen:ignore
pub mod error;
/// cbindgen:ignore
pub mod interop;
/// cbindgen:ignore
pub mod lod;
/// cbindgen:ignore
pub mod lod_tensor;
/// cbindgen:ignore
pub mod memory;
/// cbindgen:ignore
pub mod ops;
/// cbindgen:ignore
pub mod place;
/// cbindgen:ignore
pub mod tensor;

pub use dim::{Dim, MAX_DIMS};
pub use dtype::{DType, Element};
pub use error::{Error, Result};
pub use interop::paddle_format::{deserialize, deserialize_slice, serialize, serialized_size};
pub use lod::{append_lod, check_abs_lod, check_lod, lengths_to_offsets, offsets_to_lengths, Lod};
pub use lod_tensor::LoDTensor;
pub use memory::Allocation;
pub use ops::{
    sequence_expand, sequence_expand_as, sequence_first_step, sequence_last_step, sequence_pad, sequence_pool,
    sequence_scatter, sequence_scatter_inplace, sequence_unpad, PoolType, Pooled,
};
pub use place::Place;
pub use tensor::Tensor;
/// cbindgen:ignore
pub mod tensor_array;
pub use ops::rnn::dynamic_rnn;
pub use ops::tensor_array::{
    array_to_lod_tensor, lod_tensor_to_array, reorder_lod_tensor_by_rank, shrink_rnn_memory, tensor_array_to_tensor,
    unstack,
};
pub use tensor_array::{RankItem, RankTable, TensorArray};
/// cbindgen:ignore
pub mod decoder;
pub use backend::cuda::{CudaCounters, CUDA_COUNTERS};
pub use decoder::TensorStepFn;
pub use decoder::{Decoder, DecoderOptions, Hypotheses, StepInfo};
pub use ops::beam_search::{
    beam_search_fused_step, beam_search_gather_state, beam_search_gather_states, beam_search_step, BeamSearchStep,
};
pub use ops::beam_search_decode::{beam_search_decode, beam_search_gather_tree};
pub use ops::topk::top_k;
pub use ops::transfer::{cuda_counters, cuda_device_count, cuda_load_kernels, cuda_stream, synchronize, to_place};
pub use ops::{scatter_rows, ScatterMode};
