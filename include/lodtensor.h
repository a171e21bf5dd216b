/*
 * lodtensor: tensors of variable-length sequences (LoD tensors) with a C ABI.
 *
 * Generated from the library's Rust sources by cbindgen; do not edit by hand.
 *
 * Conventions, for every function below:
 * - Fallible functions return a lodtensor_status_t (0 = LODTENSOR_OK). On failure,
 *   lodtensor_last_error_message() names the argument and the rule it broke, and no output
 *   argument is written.
 * - Every pointer argument is checked; NULL gives LODTENSOR_NULL_ARGUMENT unless the
 *   documentation says NULL is allowed (a buffer whose length is 0 may always be NULL).
 * - Every buffer is followed by its length. Variable-length results are copied out as
 *   (buf, buf_len, out_len): with buf NULL only *out_len is written; otherwise buf_len must be
 *   at least the result's length (else LODTENSOR_BUFFER_TOO_SMALL).
 * - Handles returned through `out` arguments belong to the caller and are destroyed with their
 *   _destroy function, which accepts NULL.
 * - Exported symbols start with one of: lodtensor_, tensor_array_, rank_table_, sequence_,
 *   beam_search_.
 */

#ifndef LODTENSOR_H
#define LODTENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LODTENSOR_VERSION_MAJOR 0
#define LODTENSOR_VERSION_MINOR 1
#define LODTENSOR_VERSION_PATCH 0
#define LODTENSOR_VERSION_STRING "0.1.0"

/* DLPack's managed tensors (dlpack.h), of major version 1 and of DLPack before 1.0: declared
 * only; include your dlpack.h to read or fill their fields. */
struct DLManagedTensorVersioned;
struct DLManagedTensor;

/* The Arrow C data interface's structs, as Arrow's abi.h defines them, under its guard (so they
 * may be defined by Arrow's headers too, before or after this one). */
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

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

#endif /* ARROW_C_DATA_INTERFACE */

/* The Arrow C device data interface's array, under its guard, as the C data interface's. */
#ifndef ARROW_C_DEVICE_DATA_INTERFACE
#define ARROW_C_DEVICE_DATA_INTERFACE

typedef int32_t ArrowDeviceType;

#define ARROW_DEVICE_CPU 1
#define ARROW_DEVICE_CUDA 2
#define ARROW_DEVICE_CUDA_HOST 3
#define ARROW_DEVICE_OPENCL 4
#define ARROW_DEVICE_VULKAN 7
#define ARROW_DEVICE_METAL 8
#define ARROW_DEVICE_VPI 9
#define ARROW_DEVICE_ROCM 10
#define ARROW_DEVICE_ROCM_HOST 11
#define ARROW_DEVICE_EXT_DEV 12
#define ARROW_DEVICE_CUDA_MANAGED 13
#define ARROW_DEVICE_ONEAPI 14
#define ARROW_DEVICE_WEBGPU 15
#define ARROW_DEVICE_HEXAGON 16

struct ArrowDeviceArray {
  struct ArrowArray array;
  int64_t device_id;
  ArrowDeviceType device_type;
  void* sync_event;
  int64_t reserved[3];
};

#endif /* ARROW_C_DEVICE_DATA_INTERFACE */


// `lodtensor_to_arrow_strings` and a record batch's text column: any bytes, as `large_binary`.
#define LODTENSOR_ARROW_BINARY 0

// `lodtensor_to_arrow_strings` and a record batch's text column: UTF-8 text, as `large_utf8`,
// each string checked.
#define LODTENSOR_ARROW_UTF8 1

// A record batch's column as `lodtensor_to_arrow` lends a tensor (uint8 as `uint8`); no strings.
#define LODTENSOR_ARROW_VALUES 2

// The version of `beam_search_decoder_options_t` this header describes.
#define LODTENSOR_BEAM_SEARCH_DECODER_OPTIONS_VERSION 1

// The number of counters `lodtensor_cuda_counters` can write (later versions may add more, at
// the end).
#define LODTENSOR_CUDA_COUNTERS 10

// Index of `lodtensor_cuda_counters`' device blocks handed out.
#define LODTENSOR_CUDA_COUNTER_ALLOCATIONS 8

// Index of `lodtensor_cuda_counters`' copies from device memory to device memory.
#define LODTENSOR_CUDA_COUNTER_DEVICE_COPIES 2

// Index of `lodtensor_cuda_counters`' copies from the device to host memory (each waits).
#define LODTENSOR_CUDA_COUNTER_DOWNLOADS 5

// Index of `lodtensor_cuda_counters`' bytes of those downloads.
#define LODTENSOR_CUDA_COUNTER_DOWNLOAD_BYTES 6

// Index of `lodtensor_cuda_counters`' blocks the driver was asked for.
#define LODTENSOR_CUDA_COUNTER_DRIVER_ALLOCATIONS 9

// Index of `lodtensor_cuda_counters`' fills of device memory with one byte value.
#define LODTENSOR_CUDA_COUNTER_FILLS 1

// Index of `lodtensor_cuda_counters`' kernels launched.
#define LODTENSOR_CUDA_COUNTER_LAUNCHES 0

// Index of `lodtensor_cuda_counters`' copies from host memory to the device.
#define LODTENSOR_CUDA_COUNTER_UPLOADS 3

// Index of `lodtensor_cuda_counters`' bytes of those uploads.
#define LODTENSOR_CUDA_COUNTER_UPLOAD_BYTES 4

// Index of `lodtensor_cuda_counters`' waits of a calling thread for the device.
#define LODTENSOR_CUDA_COUNTER_WAITS 7

// DLPack device type of host memory.
#define LODTENSOR_DEVICE_CPU 1

// DLPack device type of CUDA device memory.
#define LODTENSOR_DEVICE_CUDA 2

// DLPack dtype code of bfloat16.
#define LODTENSOR_DTYPE_CODE_BFLOAT 4

// DLPack dtype code of bool (stored as one byte, 0 or 1).
#define LODTENSOR_DTYPE_CODE_BOOL 6

// DLPack dtype code of IEEE floats.
#define LODTENSOR_DTYPE_CODE_FLOAT 2

// DLPack dtype code of signed integers.
#define LODTENSOR_DTYPE_CODE_INT 0

// DLPack dtype code of unsigned integers.
#define LODTENSOR_DTYPE_CODE_UINT 1

// LoD values are lengths: each level lists the size of each sequence.
#define LODTENSOR_LOD_LENGTHS 1

// LoD values are offsets: each level starts at 0 and never decreases.
#define LODTENSOR_LOD_OFFSETS 0

// The most dimensions a tensor may have.
#define LODTENSOR_MAX_DIMS 9

// `sequence_pool`: the mean of each sequence (Paddle's default, AVERAGE).
#define LODTENSOR_POOL_AVERAGE 1

// `sequence_pool`: the first row of each sequence.
#define LODTENSOR_POOL_FIRST 5

// `sequence_pool`: the last row of each sequence.
#define LODTENSOR_POOL_LAST 6

// `sequence_pool`: the largest value (strict `>`: the first maximum wins; NaN never replaces a
// value, so a NaN is chosen only when it is the first row).
#define LODTENSOR_POOL_MAX 3

// `sequence_pool`: the smallest value (strict `<`, NaN as for MAX). Not in Paddle.
#define LODTENSOR_POOL_MIN 4

// `sequence_pool`: the sum divided by the square root of the length.
#define LODTENSOR_POOL_SQRT 2

// `sequence_pool`: the sum of each sequence.
#define LODTENSOR_POOL_SUM 0

// `lodtensor_scatter_rows`: the update row is added to the output row; repeated indices
// accumulate (`index_add` along axis 0, Paddle's `scatter` with `overwrite=False` on a copy of x).
#define LODTENSOR_SCATTER_ADD 1

// `lodtensor_scatter_rows`: the update row replaces the output row; when an index repeats, the
// last update wins (Paddle's `scatter` with `overwrite=True`).
#define LODTENSOR_SCATTER_OVERWRITE 0

// Status code returned by every fallible function. 0 is success; any other value is a failure
// whose detail is in `lodtensor_last_error_message()`.
enum lodtensor_status_t
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : int32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  // Success.
  LODTENSOR_OK = 0,
  // A required pointer argument was NULL.
  LODTENSOR_NULL_ARGUMENT = 1,
  // An argument broke a documented rule (bad code, shape, size, mismatch).
  LODTENSOR_INVALID_ARGUMENT = 2,
  // A LoD broke a validity rule or does not match the tensor's rows.
  LODTENSOR_INVALID_LOD = 3,
  // An index, level or range is out of range.
  LODTENSOR_OUT_OF_RANGE = 4,
  // A caller's output buffer is too small; query the needed length with a NULL buffer.
  LODTENSOR_BUFFER_TOO_SMALL = 5,
  // The request is valid but not supported by this build, dtype or place.
  LODTENSOR_UNSUPPORTED = 6,
  // Memory could not be allocated, or a size overflowed.
  LODTENSOR_OUT_OF_MEMORY = 7,
  // A bug inside the library (for example a caught panic).
  LODTENSOR_INTERNAL = 8,
  // A caller-supplied callback returned a non-zero status; the message says which and when.
  LODTENSOR_CALLBACK_FAILED = 9,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum lodtensor_status_t lodtensor_status_t;
#else
typedef int32_t lodtensor_status_t;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

// A beam-search decoder: fixed options, no other state. Immutable after creation, so any
// number of threads may run one decoder at once.
typedef struct beam_search_decoder_t beam_search_decoder_t;

// A tensor of variable-length sequences: a dense row-major array (up to `LODTENSOR_MAX_DIMS`
// dims, of one dtype, on one place) plus a LoD that always matches its row count.
//
// Threads: any number of threads may read one handle at once; a call that changes it
// (`lodtensor_set_lod`, `lodtensor_clear_lod`, writing through `lodtensor_data_mut`) needs
// exclusive access. Handles sharing memory (`lodtensor_share`, `lodtensor_slice`,
// `lodtensor_split`) see each other's element writes.
typedef struct lodtensor_t lodtensor_t;

// The sequences of one LoD level sorted by length, longest first, equal lengths in index order
// (Paddle's LoDRankTable), with the level it ranks and the LoD levels above it. Immutable: any
// number of threads may use one table at once.
typedef struct rank_table_t rank_table_t;

// A growable array of tensors (Paddle's LoDTensorArray). Elements are tensors in their own right:
// reading gives a new handle (shared or copied, the caller chooses).
//
// Threads: any number of threads may read one array at once; `tensor_array_write` and
// `tensor_array_clear` need exclusive access.
typedef struct tensor_array_t tensor_array_t;

// Options of a beam-search decoder. Fill it with `beam_search_decoder_options_init`, then set
// the fields you need (at least `vocab_size`).
typedef struct beam_search_decoder_options_t {
  // LODTENSOR_BEAM_SEARCH_DECODER_OPTIONS_VERSION.
  uint32_t version;
  // Prefixes kept per source sentence (>= 1; default 4).
  size_t beam_size;
  // Tokens of the model's output (>= 1; default 0, so it must be set).
  size_t vocab_size;
  // The token every prefix starts from; not part of the results (default 0).
  int64_t start_id;
  // The token that ends a sentence, in [0, vocab_size), not start_id (default 1).
  int64_t end_id;
  // The most tokens per sentence (>= 1; default 64).
  size_t max_length;
  // end_id gets log-prob -inf while a prefix has fewer tokens than this (default 0).
  size_t min_length;
  // Sentences are ranked by score / ((5 + length) / 6)^length_penalty (finite, >= 0;
  // default 0 = the plain cumulative log-probability).
  double length_penalty;
  // Sentences returned per source, 1 .. beam_size (default 1).
  size_t num_hypotheses;
} beam_search_decoder_options_t;

// What a decoder callback sees at one step: the live prefixes, grouped by source. Every pointer
// is borrowed and valid only during the call.
typedef struct beam_search_step_info_t {
  // 0 for the first token.
  size_t step;
  // The number of sources given to `beam_search_decoder_run` or `beam_search_decoder_run_tensors`.
  size_t num_sources;
  // num_sources + 1 offsets: source s owns prefixes source_offsets[s] .. source_offsets[s+1]
  // (none once it has finished).
  const size_t *source_offsets;
  // The number of live prefixes P (rows of the log-probs).
  size_t num_prefixes;
  // P tokens: the last token of each prefix (start_id at step 0).
  const int64_t *ids;
  // P indices: the prefix of the previous step each prefix extends; reorder the model state
  // with it (`state[i] = previous_state[parent_idx[i]]`). At step 0 it is the source index.
  const int64_t *parent_idx;
  // P cumulative log-probabilities.
  const float *scores;
  // Columns of the log-probs.
  size_t vocab_size;
  // In `beam_search_decoder_run_tensors`, when the previous step ran on a CUDA device:
  // `parent_idx` as an int32 `[P]` tensor on that device, borrowed for the call (do not destroy
  // it; `lodtensor_share` keeps it), so that state there is reordered
  // (`beam_search_gather_states`) without uploading the parents. NULL otherwise (step 0, a step
  // on the host, `beam_search_decoder_run`).
  const struct lodtensor_t *parent_idx_tensor;
} beam_search_step_info_t;

// A decoder callback. The step function fills `log_probs` (`num_prefixes x vocab_size` floats,
// row-major, borrowed for the call; its contents on entry are unspecified) with the
// next-token log-probabilities of each prefix (rows of prefixes whose last token is end_id are
// not read). The optional edit function is called after it (and after the min_length ban) with
// the same buffer and may change any entry (ban a token with -INFINITY, force one). Return 0 on
// success; any other value stops decoding (the decoder returns LODTENSOR_CALLBACK_FAILED and the
// status in its message). Callbacks run on the thread that called `beam_search_decoder_run` and
// may call the library.
typedef int32_t (*beam_search_step_fn)(const struct beam_search_step_info_t *info, float *log_probs, void *user_data);

// A decoder callback of `beam_search_decoder_run_tensors`: the model's next-token
// log-probabilities of the live prefixes of `info` as a tensor, wherever the model computed them.
//
// On success it returns 0 and stores in `*out_log_probs` (NULL on entry) a handle it creates,
// `[num_prefixes, vocab_size]`, float32, float16 or bfloat16, on the host or on a CUDA device
// (its LoD is not read; rows of prefixes whose last token is end_id are not read). The decoder
// takes the handle over and destroys it after the step: hand over a handle the callback does not
// use afterwards (`lodtensor_share` one it keeps). The work that writes log-probs on a device
// must be queued on the library's stream for that device (`lodtensor_cuda_stream`; no wait is
// needed then) or have finished (or be waited for by that stream) when the callback returns. A
// non-zero return stops decoding; a handle stored anyway is destroyed too. Callbacks run on the
// thread that called `beam_search_decoder_run_tensors` and may call the library.
typedef int32_t (*beam_search_tensor_step_fn)(const struct beam_search_step_info_t *info, struct lodtensor_t **out_log_probs, void *user_data);

// An element type in DLPack form (`DLDataType`): `code` is one of the `LODTENSOR_DTYPE_CODE_*`
// values, `bits` the element size in bits, `lanes` must be 1.
// Supported: bool {6,8}, uint8 {1,8}, int8/16/32/64 {0,N}, float16/32/64 {2,N}, bfloat16 {4,16}.
typedef struct lodtensor_dtype_t {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} lodtensor_dtype_t;

// A memory location in DLPack form (`DLDevice`): `device_type` 1 = CPU (device_id 0),
// 2 = CUDA (device_id = the GPU ordinal).
typedef struct lodtensor_place_t {
  int32_t device_type;
  int32_t device_id;
} lodtensor_place_t;

// Called exactly once with the caller's buffer and `user_data` when the last tensor using a
// buffer given to `lodtensor_from_buffer` is destroyed, on the thread that destroys it.
typedef void (*lodtensor_release_fn)(void *data, void *user_data);

// One step of a dynamic RNN, called by `tensor_array_dynamic_rnn` for step = 0, 1, ... with
// `step_input` (one unit per live sequence, in rank order) and `prev_state` (the state of the
// live sequences). Both are borrowed: valid only during the call; do not destroy them (share
// them with `lodtensor_share` to return or keep them). On success it returns 0 and sets
// `*step_output` and `*new_state` to handles it creates, each with one unit (row, or top-level
// sequence) per live sequence; the driver takes ownership of them (they may be the same handle).
// A non-zero return stops the loop; any handle already stored in the outputs is destroyed.
typedef int32_t (*tensor_array_step_fn)(size_t step, const struct lodtensor_t *step_input, const struct lodtensor_t *prev_state, struct lodtensor_t **step_output, struct lodtensor_t **new_state, void *user_data);

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

// Paddle's `beam_search_decode`: backtracks the per-step selected ids and scores (TensorArrays
// of the outputs of `beam_search_step`, 2 LoD levels each, step 0 = the initial prefixes) into
// `beam_size` sentences per source. `*out_sentence_ids` (int64, 1-D) and `*out_sentence_scores`
// (scores' dtype, 1-D, the cumulative score at each token) have the LoD `[[0, beam_size,
// 2 beam_size, ...], [token offsets]]`. Sentences hold the tokens from step 0 on without the
// repeated `end_id`s of finished branches; each source's sentences are sorted by final score,
// descending, stable; slots never filled are empty sentences, last. The caller destroys both.
// Returns LODTENSOR_NULL_ARGUMENT (`ids`, `scores`, `out_sentence_ids`, `out_sentence_scores`),
// LODTENSOR_INVALID_ARGUMENT (`beam_size` == 0; empty arrays or of different lengths; a step
// without exactly 2 LoD levels or with another number of sources than step 0; scores whose LoD,
// element count or dtype differ from the ids'; bool scores; more candidates for a source than
// `beam_size`; steps whose LoDs do not chain), LODTENSOR_UNSUPPORTED (ids not int64; scores not
// float32/float64/float16/bfloat16/int32/int64; memory on a CUDA device in a build without CUDA),
// LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t beam_search_decode(const struct tensor_array_t *ids, const struct tensor_array_t *scores, size_t beam_size, int64_t end_id, struct lodtensor_t **out_sentence_ids, struct lodtensor_t **out_sentence_scores);

// Creates a decoder with a copy of `*options`; the caller destroys it with
// `beam_search_decoder_destroy`.
// Returns LODTENSOR_NULL_ARGUMENT (`options`, `out`), LODTENSOR_INVALID_ARGUMENT (`version` is
// not LODTENSOR_BEAM_SEARCH_DECODER_OPTIONS_VERSION; beam_size, vocab_size or max_length 0;
// end_id outside [0, vocab_size) or equal to start_id; min_length > max_length; length_penalty
// negative or not finite; num_hypotheses outside [1, beam_size]).
lodtensor_status_t beam_search_decoder_create(const struct beam_search_decoder_options_t *options, struct beam_search_decoder_t **out);

// Destroys a decoder. NULL is accepted and ignored.
void beam_search_decoder_destroy(struct beam_search_decoder_t *decoder);

// Writes the default options (see `beam_search_decoder_options_t`) with the current version
// into `*options`. Returns LODTENSOR_NULL_ARGUMENT.
lodtensor_status_t beam_search_decoder_options_init(struct beam_search_decoder_options_t *options);

// Decodes `num_sources` source sentences with beam search around the caller's model.
//
// Each step the decoder calls `step_fn` (and then `edit_fn`, if not NULL) with the live
// prefixes (see `beam_search_step_info_t`); the model fills their next-token log-probabilities.
// The decoder selects the next beams (the fused step: each source keeps its `beam_size` best
// prefixes; finished prefixes keep their score and compete), stops after `max_length` steps or
// once every prefix has ended, and backtracks the sentences. Results, new tensors the caller
// destroys: `*out_ids` (int64, 1-D, LoD `[source -> sentences, sentence -> tokens]`: up to
// `num_hypotheses` sentences per source, best first, without the start token, ending with
// end_id unless cut at max_length) and `*out_scores` (float32, one ranking score per sentence,
// LoD `[source -> sentences]`). Sentences scoring -inf (only banned tokens were left) are
// dropped. On failure nothing is returned and nothing leaks.
// Returns LODTENSOR_NULL_ARGUMENT (`decoder`, `step_fn`, `out_ids`, `out_scores`),
// LODTENSOR_INVALID_ARGUMENT (`num_sources` == 0), LODTENSOR_CALLBACK_FAILED (a callback
// returned non-zero; the message names it, its status and the step), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t beam_search_decoder_run(const struct beam_search_decoder_t *decoder, size_t num_sources, beam_search_step_fn step_fn, beam_search_step_fn edit_fn, void *user_data, struct lodtensor_t **out_ids, struct lodtensor_t **out_scores);

// `beam_search_decoder_run` for a model that hands over its log-probs as a tensor on the host
// or on a CUDA device (no edit callback): the logits of a model served on a GPU never go through
// the host.
//
// Each step the decoder calls `step_fn` with the live prefixes (see `beam_search_step_info_t`)
// and takes over the tensor it returns (see `beam_search_tensor_step_fn` for ownership). The
// step's selection runs where that tensor lives: on a CUDA device the fused step runs there
// (end_id is banned while prefixes are shorter than min_length as the rows are read, the
// tensor is never written) and only the selected ids, scores and parents, a few per source,
// come back to the host for the next `beam_search_step_info_t`; each such step waits for the
// device once. Search, stopping and results are those of `beam_search_decoder_run`: for the
// same log-probs (float16/bfloat16 values widened exactly) the sentences and scores are
// identical, on either place. `*out_ids` and `*out_scores` are host tensors the caller destroys.
// On failure nothing is returned and nothing leaks: every handle the callback stored has been
// destroyed.
// Returns LODTENSOR_NULL_ARGUMENT (`decoder`, `step_fn`, `out_ids`, `out_scores`),
// LODTENSOR_INVALID_ARGUMENT (`num_sources` == 0; `step_fn` returned 0 but left
// `*out_log_probs` NULL, or stored the borrowed `info->parent_idx_tensor` there; a returned
// tensor whose dims are not `[num_prefixes, vocab_size]`),
// LODTENSOR_CALLBACK_FAILED (`step_fn` returned non-zero; the message gives its status and the
// step), LODTENSOR_UNSUPPORTED (a returned tensor neither float32, float16 nor bfloat16; on a
// CUDA device in a build without CUDA), LODTENSOR_OUT_OF_MEMORY, LODTENSOR_INTERNAL (a CUDA
// driver failure, named in the message).
lodtensor_status_t beam_search_decoder_run_tensors(const struct beam_search_decoder_t *decoder, size_t num_sources, beam_search_tensor_step_fn step_fn, void *user_data, struct lodtensor_t **out_ids, struct lodtensor_t **out_scores);

// The fused beam-search step of a decoder: the result of `lodtensor_topk(log_probs, beam_size)`,
// adding `pre_scores` per row (float32), then `beam_search_step` (level 0, accumulated, ids =
// the top-k indices), computed in one pass over `log_probs` without any `P x V` intermediate.
//
// `pre_ids` (int64, one per prefix row) carries the LoD: its level 0 in absolute form gives each
// source its prefix rows (the previous step's selected ids have exactly that LoD; a first step
// uses `[[0, 1, ..., B], [0, 1, ..., B]]`). `pre_scores` (float32, one per prefix row) are the
// cumulative scores, `log_probs` (`[P, V]`, float32, float16 or bfloat16; its LoD is not read) the
// next-token log-probabilities. Each unfinished row offers its min(beam_size, V) best tokens
// (ties: smaller token id first); finished rows (`pre_id == end_id`) offer only `end_id`.
// Outputs as in `beam_search_step` (scores float32); `out_parent_idx` may be NULL.
// Returns LODTENSOR_NULL_ARGUMENT (`pre_ids`, `pre_scores`, `log_probs`, `out_selected_ids`,
// `out_selected_scores`), LODTENSOR_INVALID_ARGUMENT (`beam_size` == 0; `pre_ids` without a
// LoD; `log_probs` not 2-D; `pre_ids`, `pre_scores` or `log_probs` without one element/row per
// prefix row; more than INT32_MAX rows), LODTENSOR_UNSUPPORTED (other dtypes, memory on a CUDA
// device in a build without CUDA), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t beam_search_fused_step(const struct lodtensor_t *pre_ids, const struct lodtensor_t *pre_scores, const struct lodtensor_t *log_probs, size_t beam_size, int64_t end_id, struct lodtensor_t **out_selected_ids, struct lodtensor_t **out_selected_scores, struct lodtensor_t **out_parent_idx);

// Reorders decoder state after a step: row i of `*out` is row `parent_idx[i]` of `state` (the
// same as `sequence_expand(state, selected_ids, 1)` for a state without LoD). `parent_idx` is
// int32 or int64, any shape (elements read in order). `*out` has state's dtype and row shape, no
// LoD, its own memory; the caller destroys it. Any dtype.
// Returns LODTENSOR_NULL_ARGUMENT (`state`, `parent_idx`, `out`), LODTENSOR_INVALID_ARGUMENT
// (0-d `state`), LODTENSOR_OUT_OF_RANGE (a parent outside [0, rows of state)),
// LODTENSOR_UNSUPPORTED (`parent_idx` not int32/int64, memory on a CUDA device in a build without CUDA),
// LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t beam_search_gather_state(const struct lodtensor_t *state, const struct lodtensor_t *parent_idx, struct lodtensor_t **out);

// `beam_search_gather_state` of each of `count` tensors of a model's state by one `parent_idx`:
// `out[i]` receives `states[i]` reordered (a new tensor; the caller destroys each). The states may
// differ in dtype, row shape and rows; every parent must be a row of each. On a CUDA device one
// launch for all the states (one for each size of word they move in: 16, 8, 4, 2 or 1 bytes, by
// their rows' bytes and addresses), one small upload and one wait for the device for the whole
// call (`beam_search_gather_state` per state launches and waits once each). `count` 0 writes
// nothing. On failure nothing is written to `out`.
// Returns LODTENSOR_NULL_ARGUMENT (`states` or `out` with `count` > 0, any `states[i]`,
// `parent_idx`), LODTENSOR_INVALID_ARGUMENT (`states` or `out` misaligned, a 0-d `states[i]`,
// inputs on different places), LODTENSOR_OUT_OF_RANGE (a parent outside [0, rows of states[i])),
// LODTENSOR_UNSUPPORTED (`parent_idx` not int32/int64, memory on a CUDA device in a build
// without CUDA), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t beam_search_gather_states(const struct lodtensor_t *const *states, size_t count, const struct lodtensor_t *parent_idx, struct lodtensor_t **out);

// Paddle's `gather_tree`: `ids` and `parents` are `[T, B, beam]` of one dtype (int32 or int64).
// `*out` (same shape and dtype, no LoD; the caller destroys it) holds, for each final beam k of
// batch entry b, its token path: `out[T-1,b,k] = ids[T-1,b,k]`, then following
// `p = parents[t+1,b,.]` back, `out[t,b,k] = ids[t,b,p]`. T = 0 gives an empty result.
// Returns LODTENSOR_NULL_ARGUMENT (`ids`, `parents`, `out`), LODTENSOR_INVALID_ARGUMENT (not 3-D,
// different shapes or dtypes), LODTENSOR_OUT_OF_RANGE (a followed parent outside [0, beam)),
// LODTENSOR_UNSUPPORTED (another dtype, memory on a CUDA device in a build without CUDA), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t beam_search_gather_tree(const struct lodtensor_t *ids, const struct lodtensor_t *parents, struct lodtensor_t **out);

// Paddle's `beam_search` op: one step of beam search over the candidates of every prefix row.
//
// `scores` (float32 or float64, `[P, K...]`, K = product of dims[1..]) carries a LoD of at least
// 2 levels; level `level` (normally 0), in absolute form, gives each source sentence its prefix
// rows. `pre_ids` (int64) and `pre_scores` (scores' dtype) hold one value per prefix row (only
// their elements are read). `ids` (int64, scores' shape) gives the candidate tokens; if NULL the
// column index is the token. A row whose pre_id is `end_id` has finished: it offers only
// `(end_id, pre_score)`. Other rows offer their K candidates scored `scores` (`is_accumulated`)
// or `pre_score + ln(scores)`. Each source keeps its `beam_size` best (higher score first; equal
// scores: higher row first, Paddle's rule); a source whose kept items are all `end_id` from
// finished rows is dropped (one step after its last branch ended).
// Outputs, new tensors the caller destroys: `*out_selected_ids` (int64 `[N, 1]`) and
// `*out_selected_scores` (scores' dtype `[N, 1]`) with the LoD `[source -> prefix rows
// (absolute), prefix row -> selected items]`, and, if `out_parent_idx` is not NULL,
// `*out_parent_idx` (int32 `[N]`, the prefix row each item extends).
// Returns LODTENSOR_NULL_ARGUMENT (`pre_ids`, `pre_scores`, `scores`, `out_selected_ids`,
// `out_selected_scores`), LODTENSOR_INVALID_ARGUMENT (`beam_size` == 0; 0-d `scores`; fewer
// than 2 LoD levels; `level` out of range; `pre_ids` or `pre_scores` without one element per
// prefix row; `ids` of another shape; `pre_scores` of another dtype than `scores`; more than
// INT32_MAX rows), LODTENSOR_UNSUPPORTED (`pre_ids`/`ids` not int64, `scores` not
// float32/float64, memory on a CUDA device in a build without CUDA), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t beam_search_step(const struct lodtensor_t *pre_ids, const struct lodtensor_t *pre_scores, const struct lodtensor_t *ids, const struct lodtensor_t *scores, size_t level, size_t beam_size, int64_t end_id, bool is_accumulated, struct lodtensor_t **out_selected_ids, struct lodtensor_t **out_selected_scores, struct lodtensor_t **out_parent_idx);

// `x`'s elements converted to `dtype`, between any two of the ten dtypes, as a new tensor with
// `x`'s dims and LoD (a copy even when the dtypes are equal). The rules are Rust's `as`:
// integer to integer wraps (keeps the low bits, like C's conversion to unsigned), float to
// integer truncates toward zero and saturates at the integer's range, NaN becoming 0; conversion
// to a float rounds to nearest, ties to even (float16 and bfloat16 too, from the exact source
// value), overflowing to ±infinity. bool converts to 0 or 1; a number converts to bool as
// `value != 0` (NaN is true, -0.0 false); a NaN keeps its payload (quieted) between floats. The
// result is on `x`'s place; on a CUDA device it is converted there, equal to the host's bit for
// bit.
//
// Returns LODTENSOR_NULL_ARGUMENT (`x`, `out`), LODTENSOR_UNSUPPORTED (unknown `dtype`, a CUDA
// place in a build without CUDA), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t lodtensor_cast(const struct lodtensor_t *x, struct lodtensor_dtype_t dtype, struct lodtensor_t **out);

// Removes every LoD level, leaving a dense tensor. Returns LODTENSOR_NULL_ARGUMENT.
lodtensor_status_t lodtensor_clear_lod(struct lodtensor_t *t);

// A new handle with its own copy of the elements, on the same place, and the same LoD (a copy on a
// device is queued on its stream). Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_UNSUPPORTED (the
// tensor is on a CUDA device that cannot be used), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t lodtensor_copy(const struct lodtensor_t *t, struct lodtensor_t **out);

// Creates a host tensor holding a copy of `data`.
//
// `dtype`: the element type. `dims`/`ndim`: the shape (`ndim` <= `LODTENSOR_MAX_DIMS`, every
// dim >= 0, and the product of the non-zero dims times the element size at most `INT64_MAX`,
// so that no count, row size or stride of any tensor overflows `int64_t`, even one of no
// elements; `dims` may be NULL when `ndim` is 0). `data`/`data_len`: exactly
// `numel * element size` bytes (NULL allowed when that is 0). The LoD: `lod_kind` is
// `LODTENSOR_LOD_OFFSETS` or `LODTENSOR_LOD_LENGTHS`; `level_sizes[i]` is the number of values of
// level i (top level first); `lod` holds all levels' values concatenated, `lod_len` in total.
// `num_levels` 0 means no LoD. On success `*out` is a new handle the caller destroys with
// `lodtensor_destroy`; on failure `*out` is untouched.
//
// Returns LODTENSOR_NULL_ARGUMENT (`out`, or a buffer with a non-zero length is NULL),
// LODTENSOR_UNSUPPORTED (unknown dtype), LODTENSOR_INVALID_ARGUMENT (more than 9 dims, a
// negative dim, `data_len` wrong, bad `lod_kind`, level sizes not adding up to `lod_len`),
// LODTENSOR_INVALID_LOD (a LoD rule broken, or the LoD does not end at `dims[0]`),
// LODTENSOR_OUT_OF_MEMORY (no memory, or a shape past the bound above).
lodtensor_status_t lodtensor_create(struct lodtensor_dtype_t dtype, const int64_t *dims, size_t ndim, const void *data, size_t data_len, int32_t lod_kind, const size_t *level_sizes, size_t num_levels, const size_t *lod, size_t lod_len, struct lodtensor_t **out);

// The bound on the freed blocks that the cache of CUDA device `device` keeps, in `*out` (SIZE_MAX
// when there is none; see `lodtensor_cuda_set_cache_limit`).
//
// Returns LODTENSOR_NULL_ARGUMENT (`out`), LODTENSOR_INVALID_ARGUMENT (`device` negative or not
// below the device count), LODTENSOR_UNSUPPORTED (a build without CUDA, no driver or no device).
lodtensor_status_t lodtensor_cuda_cache_limit(int32_t device, size_t *out);

// What the library has asked of CUDA device `device` since the process started, as counts that
// only grow: the first `len` counters, in the order of the LODTENSOR_CUDA_COUNTER_* indices, into
// `out[0..len]`. LAUNCHES: kernels launched. FILLS: fills of device memory with one byte value
// (counters zeroed before a kernel adds to them). DEVICE_COPIES: copies from device to device
// memory. UPLOADS, UPLOAD_BYTES: copies from host memory to the device (tensors moved there, and
// the tables, such as LoD offsets, that calls upload for their kernels) and their bytes.
// DOWNLOADS, DOWNLOAD_BYTES: copies from the device to host memory (tensors moved to the host,
// and what calls read back: sizes that decide an output's shape, counts of bad input values) and
// their bytes. WAITS: times a calling thread waited for the device's queued work (each download,
// each `lodtensor_synchronize`, each return of cached blocks to the driver, each upload of more
// than 1 MiB from page-locked or managed memory, each wait of the upload ring for the copies of
// its last lap). ALLOCATIONS: device
// blocks handed out, from the cache or new; DRIVER_ALLOCATIONS: of those, blocks the driver was
// asked for (the cache held none of their size class). Read the counters before and after a call
// and subtract to see what the call asked of the device; the counters are the device's, so the
// difference includes what other threads asked of it meanwhile (each counter is read once, not
// all at one instant). A device the library has not used yet reads all zero (asking does not set
// it up). `len` 0 writes nothing.
//
// Returns LODTENSOR_NULL_ARGUMENT (`out`, when `len` > 0), LODTENSOR_INVALID_ARGUMENT (`len`
// above LODTENSOR_CUDA_COUNTERS; `out` not aligned to 8 bytes; `device` negative or not below the
// device count),
// LODTENSOR_UNSUPPORTED (a build without CUDA, no driver or no device).
lodtensor_status_t lodtensor_cuda_counters(int32_t device, uint64_t *out, size_t len);

// The number of CUDA devices, in `*out`.
//
// Returns LODTENSOR_NULL_ARGUMENT (`out`), LODTENSOR_UNSUPPORTED (a build without CUDA, no CUDA
// driver found, or the driver reports no device; the message says which).
lodtensor_status_t lodtensor_cuda_device_count(size_t *out);

// Gives every freed block that the cache of CUDA device `device` keeps back to the driver, once
// the work queued on the device is done, so that other programs and libraries can use the
// memory, with the small blocks kept zeroed for counting kernels (see
// `lodtensor_cuda_memory_info`) where no call is using them. Tensors are not affected. The cache keeps freed blocks for the next allocation of their
// size class (so a decoder loop does not call the driver each step) up to its bound (see
// `lodtensor_cuda_set_cache_limit`; none by default), and empties itself when the driver refuses
// an allocation. Any thread may call this at any time.
//
// Returns LODTENSOR_INVALID_ARGUMENT (`device` negative or not below the device count),
// LODTENSOR_UNSUPPORTED (a build without CUDA, no driver or no device), LODTENSOR_INTERNAL (a
// CUDA driver failure, for example a fault of queued work).
lodtensor_status_t lodtensor_cuda_empty_cache(int32_t device);

// The memory of CUDA device `device` as the driver reports it: `*out_free`, the bytes it could
// still hand out (to this program or any other; blocks that the library's cache keeps count as
// used, see `lodtensor_cuda_memory_info`), and `*out_total`, the device's memory. Sets the device
// up if the library has not used it yet (which takes some device memory for its context).
//
// Returns LODTENSOR_NULL_ARGUMENT (`out_free`, `out_total`), LODTENSOR_INVALID_ARGUMENT (`device`
// negative or not below the device count), LODTENSOR_UNSUPPORTED (a build without CUDA, no
// driver or no device), LODTENSOR_INTERNAL (a CUDA driver failure).
lodtensor_status_t lodtensor_cuda_free_memory(int32_t device, size_t *out_free, size_t *out_total);

// Compiles and loads every kernel file for CUDA device `device` now, instead of each at the first
// call that needs it. Compiling them all takes seconds, which the first call of each kind would
// otherwise pay: a server can call this at start-up, before taking requests. The files compile
// at once on threads of their own; compiled files are kept on disk for later processes (the
// README's `LODTENSOR_KERNEL_CACHE`), which then load them in a fraction of that time. Calling it
// again does nothing more. Any thread may call this at any time.
//
// Returns LODTENSOR_INVALID_ARGUMENT (`device` negative or not below the device count),
// LODTENSOR_UNSUPPORTED (a build without CUDA, no driver, no device, no CUDA runtime compiler
// `libnvrtc.so.13`, or a GPU older than every architecture it targets), LODTENSOR_INTERNAL (a
// kernel file that does not compile or load, or another CUDA driver failure, named in the
// message).
lodtensor_status_t lodtensor_cuda_load_kernels(int32_t device);

// The device memory the library holds on CUDA device `device`: `*out_in_use`, the bytes of its
// live allocations (tensors not destroyed yet, including the results of queued work, and two
// small blocks the library keeps zeroed between calls for its counting kernels: bad-index counts,
// 256 bytes once an index has been checked on the device, and the fused beam step's per-row
// counts, 4 bytes a row), and `*out_kept`, the bytes of freed blocks that the device's cache
// keeps for the next allocation of their size class, with any that the library could not give
// back to the driver yet because a wait for the device's queued work failed (the next call that
// gives blocks back, or `lodtensor_cuda_empty_cache`, frees them once a wait succeeds). Both
// count whole blocks: a request is rounded up to the next power of two up to 4 KiB (512 bytes at
// least), and by at most 1/8 above. A device the library has not used yet holds 0 and 0 (asking
// does not set it up). Host memory is not counted: a device's first small copy to the host also
// makes a 64 KiB page-locked host buffer, which its small copies to the host go through from
// then on, and its first copy of 1 MiB or less to the device a 4 MiB page-locked ring, which
// such copies go through from then on; both are kept for the life of the process, as the
// device's context is.
//
// Returns LODTENSOR_NULL_ARGUMENT (`out_in_use`, `out_kept`), LODTENSOR_INVALID_ARGUMENT
// (`device` negative or not below the device count), LODTENSOR_UNSUPPORTED (a build without
// CUDA, no driver or no device).
lodtensor_status_t lodtensor_cuda_memory_info(int32_t device, size_t *out_in_use, size_t *out_kept);

// Sets the most bytes of freed blocks that the cache of CUDA device `device` keeps for reuse.
// Initially there is no bound (SIZE_MAX): every freed block is kept for the next allocation of
// its size class. A bound leaves the rest to other programs and libraries on a shared device:
// when a freed block would take the kept bytes past it, the longest-kept blocks go back to the
// driver first (which waits for the work queued on the device), and a block larger than the
// bound is not kept. Lowering the bound frees what is over it at once; 0 keeps nothing. Does not
// set the device up: a bound set before the device's first use applies from then on. Any thread
// may call this at any time.
//
// Returns LODTENSOR_INVALID_ARGUMENT (`device` negative or not below the device count),
// LODTENSOR_UNSUPPORTED (a build without CUDA, no driver or no device), LODTENSOR_INTERNAL (a
// CUDA driver failure while freeing, for example a fault of queued work; the bound is set).
lodtensor_status_t lodtensor_cuda_set_cache_limit(int32_t device, size_t bytes);

// The stream that all the library's work on CUDA device `device` goes to, in call order, in
// `*out`: a `CUstream` (the runtime's `cudaStream_t`) of the device's primary context (the one
// the CUDA runtime uses), non-blocking (it does not wait for the legacy default stream). Sets the
// device up if the library has not used it yet. The handle stays valid, and the same, for the
// life of the process; it belongs to the library: never destroy it.
//
// Work of yours queued on this stream is ordered with the library's calls, with no wait: after
// the work of the calls made before you queued it, before that of the calls made after. A model
// that runs on this stream can hand the tensor its kernels write (`lodtensor_from_buffer`) to an
// op, or return it from a `beam_search_tensor_step_fn` as log-probs, at once; a kernel of yours
// queued here can read an op's result with no `lodtensor_synchronize`. Work on another stream
// needs an event each way: recorded on your stream and waited for by this one
// (`cuStreamWaitEvent`, `cudaStreamWaitEvent`) before an op reads what it wrote; recorded on this
// one and waited for by yours before your stream reads an op's result. Destroying the last handle
// of a tensor the library allocated gives its memory back to the library's cache, and the next op
// on the device may write it, ordered on this stream only: work on another stream that still
// uses that memory must have finished, or be waited for by this stream, first.
//
// Returns LODTENSOR_NULL_ARGUMENT (`out`), LODTENSOR_INVALID_ARGUMENT (`device` negative or not
// below the device count), LODTENSOR_UNSUPPORTED (a build without CUDA, no driver or no device),
// LODTENSOR_OUT_OF_MEMORY or LODTENSOR_INTERNAL (a CUDA driver failure while setting the device
// up). On failure `*out` is untouched.
lodtensor_status_t lodtensor_cuda_stream(int32_t device, void **out);

// The address of the first element, for reading (a device address for a CUDA place, written by
// work queued on the device's stream: read it after `lodtensor_synchronize`, or by work queued
// on that stream, see `lodtensor_cuda_stream`). Borrowed: valid while any handle sharing the
// memory lives. Rows are contiguous, row-major.
// Returns LODTENSOR_NULL_ARGUMENT.
lodtensor_status_t lodtensor_data(const struct lodtensor_t *t, const void **out);

// The address of the first element, for writing. Writes are seen by every handle sharing the
// memory (shares, slices, split pieces); copy first to write privately. Lifetime as in
// `lodtensor_data`. Returns LODTENSOR_NULL_ARGUMENT.
lodtensor_status_t lodtensor_data_mut(struct lodtensor_t *t, void **out);

// Reads the record of Paddle's tensor file format at the start of `buf` (`buf_len` bytes, which
// may go on past the record, as a `save_combine` file's next records do): `*out` is a new host
// tensor holding a copy of the record's elements, with its LoD and dims, for the caller to
// destroy with `lodtensor_destroy`; `*out_consumed` is the record's length, where the next
// record starts. `buf` needs no alignment. The LoD is validated as every LoD is (Paddle's
// loader does not). On failure `*out` and `*out_consumed` are untouched.
//
// Returns LODTENSOR_NULL_ARGUMENT (`out`, `out_consumed`, or `buf` with a non-zero length),
// LODTENSOR_INVALID_ARGUMENT (the bytes end inside the record; a version other than 0; a LoD
// level whose byte size is not a multiple of 8; a negative desc size; a TensorDesc that is not a
// protobuf message or has no data_type; a negative dim), LODTENSOR_UNSUPPORTED (a data_type with
// no dtype in the library, such as SIZE_T or COMPLEX64; more than `LODTENSOR_MAX_DIMS` dims),
// LODTENSOR_INVALID_LOD (a LoD rule broken, or the LoD does not end at the row count),
// LODTENSOR_OUT_OF_MEMORY (dims whose element count overflows size_t; no memory for the LoD or
// the copy).
lodtensor_status_t lodtensor_deserialize(const void *buf, size_t buf_len, size_t *out_consumed, struct lodtensor_t **out);

// Paddle's partial load (the `load` op's `seek` and `shape` attributes): from the record of
// Paddle's tensor file format at the start of `buf`, read as `lodtensor_deserialize` reads it,
// `*out` is a new host tensor of dims `dims[0..ndim]` holding a copy of the elements that start
// at element `seek` of the record's row-major elements (`dims`' element count of them), for the
// caller to destroy with `lodtensor_destroy`; `*out_consumed` is the whole record's length, where
// the next record of a `save_combine` file starts. The whole record must be in `buf`; only the
// slice is copied. The record must have no LoD: a slice of elements has none (Paddle's partial
// load reads the LoD level count but not the levels, and so misreads such a record). On failure
// `*out` and `*out_consumed` are untouched.
//
// Returns the statuses of `lodtensor_deserialize` but LODTENSOR_INVALID_LOD, plus
// LODTENSOR_NULL_ARGUMENT (`dims` with a non-zero `ndim`) and LODTENSOR_INVALID_ARGUMENT
// (`seek` negative; `ndim` above `LODTENSOR_MAX_DIMS`; a negative dim; a record with LoD
// levels; a slice that ends past the record's elements); LODTENSOR_OUT_OF_MEMORY also for
// `dims` whose element count overflows.
lodtensor_status_t lodtensor_deserialize_slice(const void *buf, size_t buf_len, int64_t seek, const int64_t *dims, size_t ndim, size_t *out_consumed, struct lodtensor_t **out);

// Destroys a handle. NULL is accepted and ignored. The memory is freed (or released to its
// owner) when the last handle using it is destroyed.
void lodtensor_destroy(struct lodtensor_t *t);

// Copies the shape into `buf` and its length into `*out_ndim`. With `buf` NULL only `*out_ndim`
// is written (a buffer of `LODTENSOR_MAX_DIMS` always suffices).
// Returns LODTENSOR_NULL_ARGUMENT (`t`, `out_ndim`), LODTENSOR_BUFFER_TOO_SMALL (`buf_len` < ndim).
lodtensor_status_t lodtensor_dims(const struct lodtensor_t *t, int64_t *buf, size_t buf_len, size_t *out_ndim);

// The element type. Returns LODTENSOR_NULL_ARGUMENT.
lodtensor_status_t lodtensor_dtype(const struct lodtensor_t *t, struct lodtensor_dtype_t *out);

// A new host tensor of `dtype` and dims `dims[0..ndim]` (NULL allowed when `ndim` is 0), every
// element `value`, without LoD (set one with `lodtensor_set_lod`); move it to a device with
// `lodtensor_to_place`. Nothing is silently changed:
// for integer dtypes `value` must be a whole number inside the dtype's range, for bool 0 or 1;
// for float dtypes it is rounded to nearest but must not overflow to infinity (NaN and
// ±infinity themselves are allowed). `*out` is a new tensor, destroyed by the caller.
//
// Returns LODTENSOR_NULL_ARGUMENT (`out`, `dims` NULL with `ndim` > 0),
// LODTENSOR_INVALID_ARGUMENT (more than `LODTENSOR_MAX_DIMS` dims, a negative dim, `value` not
// representable as described), LODTENSOR_UNSUPPORTED (unknown dtype), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t lodtensor_fill(struct lodtensor_dtype_t dtype, const int64_t *dims, size_t ndim, double value, struct lodtensor_t **out);

// `lodtensor_fill` on `place`: a new tensor of `dtype` and dims `dims[0..ndim]` (NULL allowed
// when `ndim` is 0) on `place`, every element `value`, without LoD. `value` follows
// `lodtensor_fill`'s rules (integer dtypes: a whole number inside the range; bool: 0 or 1;
// floats: rounded to nearest, not overflowing to infinity). On a CUDA device the elements are
// written there by one kernel queued on the device's stream (no host tensor, no copy); on the
// CPU it is `lodtensor_fill`. `*out` is a new tensor, destroyed by the caller.
//
// Returns LODTENSOR_NULL_ARGUMENT (`out`, `dims` NULL with `ndim` > 0),
// LODTENSOR_INVALID_ARGUMENT (a `place` that is not CPU with device_id 0 or CUDA with a
// device_id >= 0; a CUDA device_id beyond the device count; more than `LODTENSOR_MAX_DIMS`
// dims, a negative dim, `value` not representable as described), LODTENSOR_UNSUPPORTED
// (unknown dtype; a CUDA place in a build without CUDA, without a driver or without a device),
// LODTENSOR_OUT_OF_MEMORY, LODTENSOR_INTERNAL (a CUDA driver failure, named in the message).
lodtensor_status_t lodtensor_fill_on(struct lodtensor_place_t place, struct lodtensor_dtype_t dtype, const int64_t *dims, size_t ndim, double value, struct lodtensor_t **out);

// Takes the Arrow array `*array` of type `*schema` as a new LoD tensor, zero copy: the form
// `lodtensor_to_arrow` makes, with `list` (`+l`, int32 offsets) accepted as well as
// `large_list`. The lists, outermost first, become the LoD (each level re-based to start at 0,
// as Arrow's offsets need not), the fixed-size lists the dims after the first, and the
// elements, from the array offsets and lengths given (slices of Arrow arrays are taken as they
// are), the tensor's. Bool elements are unpacked into a tensor of their own (a copy). Binary and
// strings (`binary`, `utf8` and their large forms: `z`, `u`, `Z`, `U`) may stand in place of the
// elements, as a last LoD level over their bytes (uint8, zero copy, not checked to be UTF-8), and
// fixed-size binary (`w:n`) as a last dim of n bytes: a column of sentences is a one-level
// uint8 tensor of their bytes.
//
// On success the library owns the array: `array->release` is set to NULL (the array is moved
// out, as the interface says), and its release callback runs exactly once, when the last handle
// over the memory (this one, its shares, slices and split pieces) is destroyed, on the thread
// that destroys it (for bool, before this call returns). `*schema` is only read and stays the
// caller's to release. On failure nothing is taken: `*array` is untouched and `*out` not
// written.
//
// Returns LODTENSOR_NULL_ARGUMENT (`schema`, `array`, `out`; a NULL format, children, child or
// buffer that the type needs), LODTENSOR_INVALID_ARGUMENT (a released schema or array; a
// negative length, offset or null count, or an offset past any buffer; a child count, buffer
// count or length that does not fit the type; offsets that decrease or run past their child,
// or binary offsets past any buffer; a null among the entries taken; a fixed-size list or binary
// format without a size; elements not aligned to their size), LODTENSOR_UNSUPPORTED (a format
// with no tensor form, such as a struct, string view or unsigned 16-64 bit type; a dictionary; a
// list or binary array inside a fixed-size list; more than
// `LODTENSOR_MAX_DIMS` dims; a chain over 64 arrays deep), LODTENSOR_INVALID_LOD (the lists
// break a LoD rule: the outermost needs at least one entry), LODTENSOR_OUT_OF_MEMORY (sizes that
// overflow, or no memory for the LoD or bool elements).
lodtensor_status_t lodtensor_from_arrow(const struct ArrowSchema *schema, struct ArrowArray *array, struct lodtensor_t **out);

// Takes the Arrow device array `*array` (the C device data interface) of type `*schema` as a
// new LoD tensor, zero copy, as `lodtensor_from_arrow` takes an array: on the CPU for
// ARROW_DEVICE_CPU and ARROW_DEVICE_CUDA_HOST (page-locked host memory); on CUDA device n for
// ARROW_DEVICE_CUDA with `device_id` n, where the elements stay in the producer's device memory
// (bool elements are unpacked from Arrow's bits on the device, a copy the call waits for) and
// the LoD offsets (and any validity bits) are read from the device, in one copy down after one
// wait where they come to 64 KiB or less (in a record batch, those of every column together;
// a list below the first is copied whole), and each LoD level is kept on the device too, made
// there from the producer's offsets by a kernel, so that ops there upload none of it. A non-NULL
// `sync_event` (a `cudaEvent_t*`, of the device's primary context) is waited for before anything
// reads the buffers: the device's stream waits for it (and, for CUDA host memory, the host too). On
// success `array->array` is moved out (its `release` becomes NULL) and released once, when the
// last handle over the memory goes (for a CUDA tensor, after the work queued on the device);
// `*schema` stays the caller's. On failure nothing is taken and `*out` is not written.
//
// Returns what `lodtensor_from_arrow` returns, naming `array.array` for the array, and
// LODTENSOR_UNSUPPORTED (another device type; a CUDA device in a build without CUDA; a
// `sync_event` on ARROW_DEVICE_CPU), LODTENSOR_INVALID_ARGUMENT (on ARROW_DEVICE_CUDA, or with a
// `sync_event` on ARROW_DEVICE_CUDA_HOST, a `device_id` that is negative or beyond the device
// count; device buffers the device cannot use; on the CPU the id is not read),
// LODTENSOR_OUT_OF_MEMORY (no device memory for bool elements, for the LoD offsets' copy down or
// for the LoD's copy kept on the device), LODTENSOR_INTERNAL (a CUDA driver failure, such as an
// event it does not know).
lodtensor_status_t lodtensor_from_arrow_device(const struct ArrowSchema *schema, struct ArrowDeviceArray *array, struct lodtensor_t **out);

// Takes the Arrow device record batch `*array` (the C device data interface) as
// `lodtensor_from_arrow_record_batch` takes a record batch, on the place and after the
// `sync_event` that `lodtensor_from_arrow_device` takes an array on and waits for: every
// column's elements stay where the producer's are (on CUDA device n for ARROW_DEVICE_CUDA with
// `device_id` n); bool columns are unpacked there, and the call waits for the device once for
// them all, before it returns (also when it fails). On success `array->array` is moved out; on
// failure nothing is taken.
//
// Returns what `lodtensor_from_arrow_record_batch` and `lodtensor_from_arrow_device` return.
lodtensor_status_t lodtensor_from_arrow_device_record_batch(const struct ArrowSchema *schema, struct ArrowDeviceArray *array, struct lodtensor_t **out_columns, size_t out_columns_len, size_t *out_count);

// Takes the Arrow record batch `*array` (a struct array, `+s`, of type `*schema`) as one new
// LoD tensor a column, zero copy, each column as `lodtensor_from_arrow` takes an array: the
// struct's rows (from its offset, `length` of them) are the entries of every column, its
// sequences at LoD level 0 or, without a list, its rows. This is what
// `pyarrow.RecordBatch._export_to_c` and Arrow C++'s `ExportRecordBatch` give.
// `out_columns` must hold a handle a column (`schema->n_children`); the columns are written
// there in the struct's order, and their count into `*out_count`. The columns share the array:
// on success `array->release` is set to NULL (moved out) and the array is released once, when
// the last handle over any column's memory is destroyed (at once when every column is bool,
// which is copied). `*schema` stays the caller's. On failure nothing is taken: `*array` is
// untouched and no output is written.
//
// Returns what `lodtensor_from_arrow` returns for a column (naming `schema.children[i]` and
// `array.children[i]`), LODTENSOR_NULL_ARGUMENT (`out_count`; `out_columns` when
// `out_columns_len` is not 0; NULL children of the struct), LODTENSOR_INVALID_ARGUMENT (a schema
// that is not a struct; a struct of no columns; a struct whose buffer or child count is not its
// type's; a null row; a column shorter than the struct's offset and length),
// LODTENSOR_BUFFER_TOO_SMALL (`out_columns_len` less than the columns, which are counted from the
// schema before the array is read).
lodtensor_status_t lodtensor_from_arrow_record_batch(const struct ArrowSchema *schema, struct ArrowArray *array, struct lodtensor_t **out_columns, size_t out_columns_len, size_t *out_count);

// Creates a tensor over the caller's buffer without copying it (zero copy).
//
// `place` says where `data` lives (CPU, or a CUDA device in builds with CUDA). `data`/`data_len`
// must be exactly `numel * element size` bytes, aligned to the element size, and stay valid and
// unmoved until `release` runs. Arguments as in `lodtensor_create`. On success the library owns
// the buffer's lifetime: `release(data, user_data)` runs exactly once, when the last handle using
// the buffer (this one, its shares, slices and split pieces) is destroyed (for a CUDA place, after
// the work queued on the device has finished). `release` may be NULL when the caller keeps the
// buffer alive longer than every such handle. Device memory is read by ops in the order of the
// device's stream (`lodtensor_cuda_stream`): what the caller writes there must be queued on that
// stream, or finished, before an op reads it. On failure nothing is taken: `release` is not
// called, the buffer stays the caller's, and `*out` is untouched.
//
// Returns the statuses of `lodtensor_create`, plus LODTENSOR_INVALID_ARGUMENT for an unknown
// place, a misaligned `data`, or, for a CUDA place, `data` whose first or last byte the device's
// kernels cannot use (device memory of another device; host memory the driver does not know,
// such as malloc's, on a GPU that cannot read pageable memory: device memory, managed and pinned
// host memory are accepted), LODTENSOR_UNSUPPORTED for a CUDA place in a build without CUDA, and
// LODTENSOR_INTERNAL for a CUDA driver failure.
lodtensor_status_t lodtensor_from_buffer(struct lodtensor_place_t place, struct lodtensor_dtype_t dtype, const int64_t *dims, size_t ndim, void *data, size_t data_len, int32_t lod_kind, const size_t *level_sizes, size_t num_levels, const size_t *lod, size_t lod_len, lodtensor_release_fn release, void *user_data, struct lodtensor_t **out);

// Takes a DLPack managed tensor of major version 1 (`managed`, as another framework's
// `to_dlpack` or `__dlpack__` gives it) as a new tensor, zero copy, with a LoD given as in
// `lodtensor_create` (`num_levels` 0: none). On success the library owns `managed`: it calls
// `managed->deleter(managed)` (unless NULL) exactly once, when the last handle over the memory
// (this one, its shares, slices and split pieces) is destroyed, on the thread that destroys it
// (for a CUDA tensor after the work queued on the device has finished); the caller must not call
// it. The elements must be writable (no `DLPACK_FLAG_BITMASK_READ_ONLY`) and compact row-major
// (`strides` NULL, or compact, with any stride on dims of size 1), `data + byte_offset` aligned
// to the element size, on the CPU (`kDLCPU`, or `kDLCUDAHost` page-locked memory) or a CUDA
// device (`kDLCUDA`, or `kDLCUDAManaged` managed memory, taken as that device's; read in the
// order of the device's stream, as `lodtensor_from_buffer`'s).
// On failure nothing is taken: the deleter is not called, `managed` stays the caller's, and
// `*out` is untouched.
//
// Returns LODTENSOR_NULL_ARGUMENT (`managed`, `out`, a NULL `shape` with dims or `data` with
// elements, a NULL LoD buffer with a non-zero length), LODTENSOR_UNSUPPORTED (another DLPack
// major version, a read-only tensor, another device type, a CUDA device in a build without
// CUDA, a dtype with lanes other than 1 or of no dtype here, more than `LODTENSOR_MAX_DIMS`
// dims, strides that are not compact row-major), LODTENSOR_INVALID_ARGUMENT (a negative ndim or
// dim, misaligned data, a CUDA device id beyond the count or memory the device cannot use, bad
// `lod_kind` or level sizes), LODTENSOR_INVALID_LOD (a LoD rule broken, or the LoD does not end
// at the row count), LODTENSOR_OUT_OF_MEMORY (a shape whose element or byte count overflows
// size_t; no memory for the LoD), LODTENSOR_INTERNAL (a CUDA driver failure).
lodtensor_status_t lodtensor_from_dlpack(struct DLManagedTensorVersioned *managed, int32_t lod_kind, const size_t *level_sizes, size_t num_levels, const size_t *lod, size_t lod_len, struct lodtensor_t **out);

// `lodtensor_from_dlpack` for a managed tensor of DLPack before version 1.0 (`DLManagedTensor`,
// as frameworks' older `to_dlpack` calls and a `__dlpack__()` asked for no version give it):
// taken the same way, with the same ownership of `managed` and its deleter, on success and on
// failure. It has no version to check and no flags: its elements are taken as writable, as
// DLPack then lent them.
//
// Returns the statuses of `lodtensor_from_dlpack` but those of the version and the read-only
// flag.
lodtensor_status_t lodtensor_from_dlpack_legacy(struct DLManagedTensor *managed, int32_t lod_kind, const size_t *level_sizes, size_t num_levels, const size_t *lod, size_t lod_len, struct lodtensor_t **out);

// Rows `x[index[0]], x[index[1]], ...` as a new tensor of dims `[K, x.dims[1..]]` without LoD.
// `index` is an int32 or int64 tensor of dims `[K]` or `[K, 1]`; `x` is any dtype, rank >= 1.
// Runs on the inputs' place (the CPU or one CUDA device, where the device reads and checks
// `index` itself; it is copied to the host only to name a value out of range); `*out` is on that
// place.
//
// Returns LODTENSOR_NULL_ARGUMENT (`x`, `index`, `out`), LODTENSOR_INVALID_ARGUMENT (0-d `x`,
// `index` not `[K]` or `[K, 1]`, `x` and `index` on different places), LODTENSOR_OUT_OF_RANGE
// (an index < 0 or >= the rows of `x`; the message names its position), LODTENSOR_UNSUPPORTED
// (`index` not int32/int64, a CUDA place this build cannot use), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t lodtensor_gather_rows(const struct lodtensor_t *x, const struct lodtensor_t *index, struct lodtensor_t **out);

// The bytes of freed host memory kept for reuse now (`*out_kept`) and the bound on them
// (`*out_limit`); see `lodtensor_set_host_cache_limit`.
// Returns LODTENSOR_NULL_ARGUMENT (`out_kept`, `out_limit`).
lodtensor_status_t lodtensor_host_cache_info(size_t *out_kept, size_t *out_limit);

// The message of the last failed call on the calling thread: which argument broke which rule.
// Never NULL ("" before any failure). Successful calls leave it unchanged. The pointer stays
// valid until the next failing call on the same thread; copy it to keep it. A call made while
// the thread exits, after the library's per-thread state is gone (from a thread-exit destructor
// that runs late), still returns its status, but its message is "".
const char *lodtensor_last_error_message(void);

// Copies the sequence lengths of LoD level `level` into `buf` and their count (the number of
// sequences) into `*out_len`. With `buf` NULL only `*out_len` is written.
// Returns LODTENSOR_NULL_ARGUMENT (`t`, `out_len`), LODTENSOR_OUT_OF_RANGE (`level`),
// LODTENSOR_BUFFER_TOO_SMALL.
lodtensor_status_t lodtensor_lod_lengths(const struct lodtensor_t *t, size_t level, size_t *buf, size_t buf_len, size_t *out_len);

// The number of LoD levels (0 for a plain dense tensor). Returns LODTENSOR_NULL_ARGUMENT.
lodtensor_status_t lodtensor_lod_num_levels(const struct lodtensor_t *t, size_t *out);

// The offsets of LoD level `level` (top level is 0): `*out_len` values starting at 0, the last
// level indexing rows and every other level indexing sequences of the level below. Borrowed:
// valid until the handle's LoD is changed or the handle is destroyed.
// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_OUT_OF_RANGE (`level` >= number of levels).
lodtensor_status_t lodtensor_lod_offsets(const struct lodtensor_t *t, size_t level, const size_t **out, size_t *out_len);

// Paddle's `lod_reset`: a new handle on `x`'s memory (shared, not copied) with a new LoD.
//
// If `y` is not NULL and has a LoD, the result takes `y`'s LoD (its last level must end at `x`'s
// row count). Otherwise the target level is `y`'s elements (int32 or int64) when `y` is given,
// else `target_lod[0..target_len]` (offsets). The target needs at least 2 offsets, starts at 0,
// never decreases and ends at `x`'s row count. With `append` false the target is the only level;
// with `append` true it is added below `x`'s LoD, and the result must pass every LoD rule. `y`
// must be on `x`'s place; on a CUDA device its elements are copied to the host to be checked.
// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_INVALID_ARGUMENT (0-d `x`, `y` on another place),
// LODTENSOR_UNSUPPORTED (`y` not int32/int64), LODTENSOR_INVALID_LOD (any rule above),
// LODTENSOR_OUT_OF_MEMORY (no memory for the new LoD).
lodtensor_status_t lodtensor_lod_reset(const struct lodtensor_t *x, const struct lodtensor_t *y, const int64_t *target_lod, size_t target_len, bool append, struct lodtensor_t **out);

// Log-softmax over the last axis: `out = x - m - log(sum(exp(x - m)))`, `m` the maximum along
// the axis (so nothing overflows; exponentials in float, or double for float64, sums in double),
// for float32, float64, float16 and bfloat16. `*out` is a new tensor with `x`'s dims and LoD, on
// `x`'s place (on a CUDA device it is computed there, equal to the host's to float rounding).
//
// Returns LODTENSOR_NULL_ARGUMENT (`x`, `out`), LODTENSOR_INVALID_ARGUMENT (0-d `x`),
// LODTENSOR_UNSUPPORTED (dtype not a float, a CUDA place in a build without CUDA),
// LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t lodtensor_log_softmax(const struct lodtensor_t *x, struct lodtensor_t **out);

// Concatenates `count` tensors along rows into a new tensor with its own memory, on their place
// (on a CUDA device, one gather there); LoD levels are appended level by level. All need the
// same number of LoD levels; those with rows need the same dtype, row width (elements per row:
// `[2, 6]` and `[3, 2, 3]` merge, as in Paddle) and place; 0-row tensors are not checked. The
// output has the row shape of the first tensor with rows (with none, the dtype, row shape and
// place of `tensors[0]`).
// Returns LODTENSOR_NULL_ARGUMENT (`tensors`, any `tensors[i]`, `out`),
// LODTENSOR_INVALID_ARGUMENT (`count` 0, mismatched dtype/row width/place, a 0-d tensor),
// LODTENSOR_INVALID_LOD (different numbers of LoD levels), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t lodtensor_merge(const struct lodtensor_t *const *tensors, size_t count, struct lodtensor_t **out);

// The size of the elements in bytes (numel * element size). Returns LODTENSOR_NULL_ARGUMENT.
lodtensor_status_t lodtensor_nbytes(const struct lodtensor_t *t, size_t *out);

// The number of dimensions (0 to `LODTENSOR_MAX_DIMS`). Returns LODTENSOR_NULL_ARGUMENT.
lodtensor_status_t lodtensor_ndim(const struct lodtensor_t *t, size_t *out);

// The number of threads of the library's thread pool (starting it if needed).
// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_INTERNAL (threads cannot start).
lodtensor_status_t lodtensor_num_threads(size_t *out);

// The number of elements (product of the dims; 1 for a 0-d tensor).
// Returns LODTENSOR_NULL_ARGUMENT.
lodtensor_status_t lodtensor_numel(const struct lodtensor_t *t, size_t *out);

// Where the elements live. Returns LODTENSOR_NULL_ARGUMENT.
lodtensor_status_t lodtensor_place(const struct lodtensor_t *t, struct lodtensor_place_t *out);

// Row scatter: `*out` is a new tensor (own memory) with `x`'s dims, dtype and LoD, equal to `x`
// except that for every `i` in `0..M`, row `index[i]` of it is replaced by
// (LODTENSOR_SCATTER_OVERWRITE; for a repeated index the last `i` wins) or increased by
// (LODTENSOR_SCATTER_ADD; repeated indices accumulate) row `i` of `updates`. `x` is not modified.
// `x`: rank >= 1, dims `[N, ...]`, any LoD. `index`: int32 or int64, dims `[M]` or `[M, 1]`
// (M may be 0), every value in `[0, N)`; negative values are errors, not counted from the end.
// `updates`: `x`'s dtype, dims `[M, x.dims[1..]...]` (`[M]` for a 1-d `x`). The LoDs of `index`
// and `updates` are ignored. OVERWRITE moves bytes and takes every dtype; ADD takes every numeric
// dtype (not bool). ADD adds each row's updates onto `x`'s row in increasing `i`, exactly as the
// sequential loop, so the result is the same bit for bit whatever the thread count; integers
// wrap on overflow; float16/bfloat16 compute each addition in float and round it to the dtype.
// Returns LODTENSOR_NULL_ARGUMENT (`x`, `index`, `updates`, `out`), LODTENSOR_INVALID_ARGUMENT
// (`mode` not a LODTENSOR_SCATTER_* value; 0-d `x`; `index` not `[M]` or `[M, 1]`; `updates`
// not `[M, x.dims[1..]...]` or of another dtype than `x`; inputs on different places),
// LODTENSOR_OUT_OF_RANGE (an index < 0 or >= N; the message names its position and value),
// LODTENSOR_UNSUPPORTED (`index` not int32/int64; bool `x` with ADD; inputs on a CUDA device in
// a build without CUDA), LODTENSOR_OUT_OF_MEMORY. On a CUDA device the result is on that device
// and equals the CPU's bit for bit; the device reads and checks `index` itself (it is copied to
// the host only to name a value out of range), and with ADD sorts the updates by row there,
// stably, so each row's adds keep the CPU's order (device scratch of about 42 bytes per update
// and 8 per row of `x`, for the call).
lodtensor_status_t lodtensor_scatter_rows(const struct lodtensor_t *x, const struct lodtensor_t *index, const struct lodtensor_t *updates, int32_t mode, struct lodtensor_t **out);

// Panics inside the library on purpose and returns what the caller sees: always
// `LODTENSOR_INTERNAL`, with the panic's text in the last error message. It shows that a panic
// never unwinds into (and aborts) the host program; bindings call it in their tests.
lodtensor_status_t lodtensor_selftest_panic(void);

// The rows `[*out_begin, *out_end)` of sequence `index` at LoD level `level`.
// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_OUT_OF_RANGE (`level` or `index`).
lodtensor_status_t lodtensor_sequence_rows(const struct lodtensor_t *t, size_t level, size_t index, size_t *out_begin, size_t *out_end);

// Writes `t` as a record of Paddle's tensor file format into `buf` and the record's length into
// `*out_len`: the bytes Paddle's `save` op writes for a LoDTensor, and a tensor's part of a
// `save_combine` file (records back to back, in the order of the variable list). With `buf`
// NULL only `*out_len` is written (ask for the length, then call again with a buffer that
// long). The record holds the LoD (relative offsets), the dtype and dims, and the elements in
// host byte order (little-endian on every supported platform). A CUDA tensor's elements are
// copied from the device straight into `buf`, after the work queued on the device (the call
// waits for it; the length alone needs no wait).
//
// Returns LODTENSOR_NULL_ARGUMENT (`t`, `out_len`), LODTENSOR_BUFFER_TOO_SMALL (`buf_len` below
// the record's length; `buf` and `*out_len` are untouched), LODTENSOR_INTERNAL (a CUDA driver
// failure copying a CUDA tensor's elements, named in the message; `buf`'s bytes are then
// unspecified, `*out_len` untouched).
lodtensor_status_t lodtensor_serialize(const struct lodtensor_t *t, void *buf, size_t buf_len, size_t *out_len);

// Sets the most bytes of freed host memory the library keeps for reuse (default 256 MiB).
// Outputs of 4 KiB or more are not given back to the system when their last handle is destroyed
// but kept, up to this bound, for the next output of the same size class (within 1/8 of its
// size): a loop of calls with the same shapes then writes into memory that is already mapped,
// instead of fresh pages the OS must fault in and zero. The longest-kept blocks are freed first
// when the bound would be passed; blocks larger than the bound are never kept, and blocks under
// 64 KiB are given back when another thread is using the cache at that moment. Lowering the bound
// frees what is over it at once; 0 frees everything kept and keeps nothing more. Device memory
// is not affected (each CUDA device keeps its own blocks), nor is the buffer of at most 128 KiB
// that a thread keeps for its life once it has stacked or concatenated an output of 4 MiB or
// more along an inner axis in rows of 1, 2, 4 or 8 bytes (the columns of a matrix) on a CPU with
// AVX2 and without AVX-512. Any thread may call this at any time.
// Returns LODTENSOR_OK (it has no failure of its own; LODTENSOR_INTERNAL only for a bug).
lodtensor_status_t lodtensor_set_host_cache_limit(size_t bytes);

// Replaces the LoD (encoded as in `lodtensor_create`; `num_levels` 0 removes it). The new LoD is
// validated against the rows first; on failure the old one stays.
// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_INVALID_ARGUMENT (bad `lod_kind`, sizes not adding
// up), LODTENSOR_INVALID_LOD (a rule broken, or not ending at the row count),
// LODTENSOR_OUT_OF_MEMORY (no memory for the new LoD).
lodtensor_status_t lodtensor_set_lod(struct lodtensor_t *t, int32_t lod_kind, const size_t *level_sizes, size_t num_levels, const size_t *lod, size_t lod_len);

// Sets the number of threads of the library's own thread pool (the host program's pools are never
// used). 0 restores the default: the `LODTENSOR_NUM_THREADS` environment variable if it is a
// count from 1 to 1024, else the number of available cores (at most 1024). Results of every operation are the same for any thread count.
// Calls already running finish on the old pool.
// Returns LODTENSOR_INVALID_ARGUMENT (more than 1024), LODTENSOR_INTERNAL (threads cannot start).
lodtensor_status_t lodtensor_set_num_threads(size_t num_threads);

// A new handle on the same memory and the same LoD (no element is copied). Element writes
// through one are seen by the other; each is destroyed on its own.
// Returns LODTENSOR_NULL_ARGUMENT.
lodtensor_status_t lodtensor_share(const struct lodtensor_t *t, struct lodtensor_t **out);

// Sequences `[begin, end)` of LoD level `level` as a new handle sharing `t`'s memory (no copy).
// Its LoD has levels `level..` of `t`'s LoD, re-based to start at 0; its rows are the rows of
// those sequences. Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_OUT_OF_RANGE (`level` >= number of
// levels, `begin` >= `end`, or `end` > number of sequences at `level`), LODTENSOR_OUT_OF_MEMORY
// (no memory for the new LoD).
lodtensor_status_t lodtensor_slice(const struct lodtensor_t *t, size_t level, size_t begin, size_t end, struct lodtensor_t **out);

// Splits the batch into at most `num_pieces` pieces of whole top-level sequences (whole rows
// without a LoD), each `ceil(batch / num_pieces)` sequences but the last. Pieces share `t`'s
// memory. `out_pieces` must hold `num_pieces` handles; the first `*out_count` are written, each
// destroyed by the caller. An empty batch (0 rows, no LoD) gives `num_pieces` shares of `t`.
// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_INVALID_ARGUMENT (`num_pieces` 0, a 0-d tensor),
// LODTENSOR_BUFFER_TOO_SMALL (`out_pieces_len` < `num_pieces`), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t lodtensor_split(const struct lodtensor_t *t, size_t num_pieces, struct lodtensor_t **out_pieces, size_t out_pieces_len, size_t *out_count);

// A static, human-readable name for a status code ("unknown status" for values that are not
// codes). Never NULL.
const char *lodtensor_status_str(int32_t code);

// Waits until all work queued on `place` has finished. The CPU place returns at once (CPU calls
// finish before they return).
//
// Returns LODTENSOR_INVALID_ARGUMENT (a bad `place`, as in `lodtensor_to_place`),
// LODTENSOR_UNSUPPORTED (a CUDA place in a build without CUDA, without a driver or without a
// device), LODTENSOR_INTERNAL (a CUDA driver failure, for example a kernel fault).
lodtensor_status_t lodtensor_synchronize(struct lodtensor_place_t place);

// Fills `*out_schema` and `*out_array` (structs the caller provides, as the interface has it)
// with `t` as an Arrow array that shares its memory, zero copy: one `large_list` (`+L`) per LoD
// level, outermost first, whose int64 offsets are the level's; then one `fixed_size_list`
// (`+w:n`) per dim after the first; then the elements (`b`, `C`, `c`, `s`, `i`, `l`, `e`, `f`
// or `g`). So one LoD level over `[N, D]` float rows is `large_list<fixed_size_list<float, D>>`
// of one entry per sequence; a tensor without LoD is an array of its rows. Bool elements are
// packed into Arrow's bits (a copy); every other dtype's elements are `t`'s memory, written
// through it and every handle sharing it. Nothing is nullable and there are no nulls (validity
// buffers NULL); the root is named "" and the children "item". The caller releases each struct
// once, with its `release` callback, from any thread (moving children out as the interface
// allows); the memory stays until the array is released, also after `t` is destroyed.
//
// Returns LODTENSOR_NULL_ARGUMENT (`t`, `out_schema`, `out_array`), LODTENSOR_UNSUPPORTED (a
// CUDA tensor, whose memory the interface cannot carry: lend it with
// `lodtensor_to_arrow_device`, or copy it with `lodtensor_to_place` first; bfloat16, which has
// no Arrow type), LODTENSOR_INVALID_ARGUMENT (a 0-d tensor, which has no rows),
// LODTENSOR_OUT_OF_MEMORY (no memory for the bits of bool elements). On failure neither struct is
// written.
lodtensor_status_t lodtensor_to_arrow(const struct lodtensor_t *t, struct ArrowSchema *out_schema, struct ArrowArray *out_array);

// Fills `*out_schema` and `*out_array` with `t` as an Arrow device array (the C device data
// interface) that shares its memory, zero copy, in the form `lodtensor_to_arrow` makes. A host
// tensor is lent as `lodtensor_to_arrow` lends it, with `device_type` ARROW_DEVICE_CPU and
// `device_id` -1 (no device, as Arrow's own CPU exports say). A tensor on CUDA device n is lent
// with `device_type` ARROW_DEVICE_CUDA and `device_id` n: its elements and its LoD offsets (the
// int64 copies the LoD keeps on the device, uploaded at their first use there) are device
// memory (bool elements are packed into Arrow's bits there, a copy), and the call waits for the
// work queued on the device, so `sync_event` is NULL and the buffers can be read at once.
// `reserved` is zeroed. The caller releases the schema and `out_array->array` once each, as for
// `lodtensor_to_arrow`; the memory stays until the array is released.
//
// Returns LODTENSOR_NULL_ARGUMENT (`t`, `out_schema`, `out_array`), LODTENSOR_UNSUPPORTED
// (bfloat16, which has no Arrow type), LODTENSOR_INVALID_ARGUMENT (a 0-d tensor),
// LODTENSOR_OUT_OF_MEMORY (no host or device memory for the bits of bool elements),
// LODTENSOR_INTERNAL (a CUDA driver failure, named in the message). On failure neither struct is
// written.
lodtensor_status_t lodtensor_to_arrow_device(const struct lodtensor_t *t, struct ArrowSchema *out_schema, struct ArrowDeviceArray *out_array);

// `lodtensor_to_arrow_record_batch` through the C device data interface, as
// `lodtensor_to_arrow_device` lends one tensor: every column on one place. On the CPU the
// batch is the host batch, with `device_type` ARROW_DEVICE_CPU and `device_id` -1; on CUDA device
// n, ARROW_DEVICE_CUDA and n, every column's elements and LoD offsets device memory, and the call
// waits for the work queued on the device (`sync_event` NULL). pyarrow takes it with
// `pyarrow.RecordBatch._import_from_c_device`, cuDF with its device interface.
//
// Returns what `lodtensor_to_arrow_record_batch` returns, but for CUDA columns:
// LODTENSOR_INVALID_ARGUMENT also for a column on another place than `columns[0]` (naming both),
// LODTENSOR_OUT_OF_MEMORY also for no device memory for a bool column's bits,
// LODTENSOR_INTERNAL for a CUDA driver failure.
// On failure neither struct is written.
lodtensor_status_t lodtensor_to_arrow_device_record_batch(const struct lodtensor_t *const *columns, const char *const *names, size_t num_columns, struct ArrowSchema *out_schema, struct ArrowDeviceArray *out_array);

// `lodtensor_to_arrow_device_record_batch` with a form for each column, as
// `lodtensor_to_arrow_record_batch_encoded` takes them: text columns on a CUDA device are lent as
// `lodtensor_to_arrow_device_strings` lends them (UTF-8 checked on the device).
//
// Returns what `lodtensor_to_arrow_device_record_batch` and
// `lodtensor_to_arrow_record_batch_encoded` return, and for a CUDA text column what
// `lodtensor_to_arrow_device_strings` returns. On failure neither struct is written.
lodtensor_status_t lodtensor_to_arrow_device_record_batch_encoded(const struct lodtensor_t *const *columns, const char *const *names, const int32_t *encodings, size_t num_columns, struct ArrowSchema *out_schema, struct ArrowDeviceArray *out_array);

// `lodtensor_to_arrow_strings` through the C device data interface, as
// `lodtensor_to_arrow_device` lends a tensor: a host tensor on ARROW_DEVICE_CPU; on CUDA device n
// the offsets and bytes are device memory and the call waits for the device's work, so
// `sync_event` is NULL. UTF-8 on a device is checked there, by a kernel; only text that is not
// UTF-8 is copied to the host, to name the string that breaks.
//
// Returns as `lodtensor_to_arrow_strings` (but for CUDA tensors), and on a device
// LODTENSOR_OUT_OF_MEMORY (no device memory for the check, or no host memory for the bytes of
// text that is not UTF-8) and LODTENSOR_INTERNAL (a CUDA driver failure).
lodtensor_status_t lodtensor_to_arrow_device_strings(const struct lodtensor_t *t, int32_t encoding, struct ArrowSchema *out_schema, struct ArrowDeviceArray *out_array);

// Fills `*out_schema` and `*out_array` with `num_columns` tensors as one Arrow record batch that
// shares their memory, zero copy: a struct array (`+s`, named "", no nulls) whose child i is
// `columns[i]` in the form `lodtensor_to_arrow` makes, named `names[i]` (UTF-8). Each column has
// one entry per row of the batch: its sequences at LoD level 0, or its rows when it has no LoD;
// so a decoder's `out_ids` and `out_scores` make a batch of one row per source. pyarrow takes it
// with `pyarrow.RecordBatch._import_from_c`. The caller releases each struct once, as for
// `lodtensor_to_arrow`; a column moved out of the struct keeps its memory until its own release.
//
// Returns LODTENSOR_NULL_ARGUMENT (`columns`, `names`, a column or a name, `out_schema`,
// `out_array`), LODTENSOR_INVALID_ARGUMENT (`num_columns` 0; a 0-d column; a column whose entries
// are not as many as `columns[0]`'s; a name that is not UTF-8), LODTENSOR_UNSUPPORTED (a CUDA
// column: lend the batch with `lodtensor_to_arrow_device_record_batch`; bfloat16),
// LODTENSOR_OUT_OF_MEMORY (no memory for the list of columns or a column's bool bits). Errors
// name the column (`columns[i]`). On failure neither struct is written.
lodtensor_status_t lodtensor_to_arrow_record_batch(const struct lodtensor_t *const *columns, const char *const *names, size_t num_columns, struct ArrowSchema *out_schema, struct ArrowArray *out_array);

// `lodtensor_to_arrow_record_batch` with a form for each column, so that a batch can hold text:
// `encodings[i]` LODTENSOR_ARROW_VALUES lends `columns[i]` as `lodtensor_to_arrow` lends a
// tensor, LODTENSOR_ARROW_UTF8 and LODTENSOR_ARROW_BINARY as `lodtensor_to_arrow_strings` does
// (a 1-d uint8 column with a LoD; its last level's sequences are the strings, UTF-8 checked
// string by string). `encodings` NULL lends every column as values, as
// `lodtensor_to_arrow_record_batch`. A decoder's output text (one level: a string a source) and
// its scores make one batch of a row per source.
//
// Returns what `lodtensor_to_arrow_record_batch` returns, and LODTENSOR_INVALID_ARGUMENT for an
// `encodings[i]` that is none of the three or a text column that `lodtensor_to_arrow_strings`
// refuses (the message naming `columns[i]`). On failure neither struct is written.
lodtensor_status_t lodtensor_to_arrow_record_batch_encoded(const struct lodtensor_t *const *columns, const char *const *names, const int32_t *encodings, size_t num_columns, struct ArrowSchema *out_schema, struct ArrowArray *out_array);

// Fills `*out_schema` and `*out_array` with `t`, a 1-d uint8 tensor with a LoD (bytes, such as
// text that `lodtensor_from_arrow` took from Arrow strings), as Arrow strings that share its
// memory, zero copy: its last LoD level's sequences are the strings, one `large_utf8` (`U`,
// `encoding` LODTENSOR_ARROW_UTF8) or `large_binary` (`Z`, LODTENSOR_ARROW_BINARY) array whose
// int64 offsets are that level's and whose bytes are `t`'s elements; the levels above it are
// `large_list`s as `lodtensor_to_arrow` makes them. So one level of sentences is a `large_utf8`
// of one string a sentence. UTF-8 is checked string by string, as Arrow's strings must be; binary
// takes any bytes. Released as `lodtensor_to_arrow`'s structs.
//
// Returns LODTENSOR_NULL_ARGUMENT (`t`, `out_schema`, `out_array`), LODTENSOR_UNSUPPORTED (a
// CUDA tensor: lend it with `lodtensor_to_arrow_device_strings`), LODTENSOR_INVALID_ARGUMENT (an
// `encoding` other than the two, LODTENSOR_ARROW_VALUES among them; a dtype other than uint8; a
// tensor that is not 1-d or has no LoD; for UTF-8, a string that is not UTF-8, the message naming
// its sequence and the byte where it breaks). On failure neither struct is written.
lodtensor_status_t lodtensor_to_arrow_strings(const struct lodtensor_t *t, int32_t encoding, struct ArrowSchema *out_schema, struct ArrowArray *out_array);

// Lends `t`'s elements as a new DLPack managed tensor (`*out`) that shares its memory, zero
// copy: DLPack version 1.0, `flags` 0 (writable: writes are seen through `t` and every handle
// sharing its memory), `shape` and compact row-major `strides` (in elements) set,
// `byte_offset` 0, `data` the address of `t`'s first element (a device address for a CUDA
// tensor, written by the work queued on the device's stream: synchronise, or order your stream
// after `lodtensor_cuda_stream`'s, before reading it). DLPack has no LoD: read it from `t`. The
// consumer calls `(*out)->deleter(*out)` exactly once when done, from any thread; the memory
// stays until then, also after `t` is destroyed.
//
// Returns LODTENSOR_NULL_ARGUMENT (`t`, `out`).
lodtensor_status_t lodtensor_to_dlpack(const struct lodtensor_t *t, struct DLManagedTensorVersioned **out);

// `lodtensor_to_dlpack` for a consumer of DLPack before version 1.0: the same managed tensor as
// a `DLManagedTensor` (no version, no flags; `dl_tensor`, `manager_ctx` and `deleter` as there).
// Such a consumer cannot be told that a tensor is read-only, and none of the library's is.
//
// Returns LODTENSOR_NULL_ARGUMENT (`t`, `out`).
lodtensor_status_t lodtensor_to_dlpack_legacy(const struct lodtensor_t *t, struct DLManagedTensor **out);

// A new handle holding a copy of `t` (elements and LoD) on `place`. It is always a copy with its
// own memory, also when `t` is already on `place` (`lodtensor_share` shares instead). A copy to
// the CPU waits until the device's queued work is done; a copy to a device is queued on that
// device's stream (later calls on the device see it; call `lodtensor_synchronize` before reading
// device memory by other means). `t` and the memory under it may be changed, destroyed or
// reused as soon as this returns: a copy of up to 1 MiB is made from a page-locked ring of the
// library's; a larger one from page-locked host memory (a pinned buffer given to
// `lodtensor_from_buffer`, a `kDLCUDAHost` DLPack tensor, an ARROW_DEVICE_CUDA_HOST array) or
// managed memory, which the device reads by itself after the call, is waited for. The caller
// destroys `*out` with `lodtensor_destroy`.
//
// Returns LODTENSOR_NULL_ARGUMENT (`t`, `out`), LODTENSOR_INVALID_ARGUMENT (a `place` that is not
// CPU with device_id 0 or CUDA with device_id >= 0; a CUDA device_id beyond the device count),
// LODTENSOR_UNSUPPORTED (`place` or `t` on a CUDA device in a build without CUDA, without a
// driver or without a device), LODTENSOR_OUT_OF_MEMORY, LODTENSOR_INTERNAL (a CUDA driver
// failure, named in the message).
lodtensor_status_t lodtensor_to_place(const struct lodtensor_t *t, struct lodtensor_place_t place, struct lodtensor_t **out);

// The top-k over the last axis of `x`: `*out_values` (x's dtype) and `*out_indices` (int64)
// have x's shape with the last dim replaced by `k` and x's LoD. Values are sorted, descending
// when `largest`, else ascending; NaN ranks above every number (first when `largest`, last
// otherwise); equal values come in index order. One pass over each row, no sort. Any dtype but
// bool. The caller destroys both new tensors.
// Returns LODTENSOR_NULL_ARGUMENT (`x`, `out_values`, `out_indices`), LODTENSOR_INVALID_ARGUMENT
// (0-d `x`, 1-D `x` with a LoD, `k` == 0, `k` greater than the last dim),
// LODTENSOR_UNSUPPORTED (bool; memory on a CUDA device in a build without CUDA),
// LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t lodtensor_topk(const struct lodtensor_t *x, size_t k, bool largest, struct lodtensor_t **out_values, struct lodtensor_t **out_indices);

// The library version as "MAJOR.MINOR.PATCH" (static storage; never NULL). Compare with
// `LODTENSOR_VERSION_STRING` to detect a header/library mismatch.
const char *lodtensor_version(void);

// Paddle's `lod_rank_table`: ranks the sequences of LoD level `level` of `x` by length (entries
// of the level below, rows for the last level), longest first, equal lengths in index order.
// The caller destroys the table with `rank_table_destroy`.
// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_INVALID_ARGUMENT (`level` >= number of LoD levels
// of `x`; so `x` needs a LoD), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t rank_table_create(const struct lodtensor_t *x, size_t level, struct rank_table_t **out);

// Destroys a table. NULL is accepted and ignored.
void rank_table_destroy(struct rank_table_t *table);

// Copies the items in rank order: `indices[k]` = the original index of the k-th longest
// sequence, `lengths[k]` its length; `*out_len` = the number of items. Either buffer may be NULL
// (not copied); with both NULL only `*out_len` is written. A non-NULL buffer must hold at least
// as many values (`buf_len`) as there are items.
// Returns LODTENSOR_NULL_ARGUMENT (`table`, `out_len`), LODTENSOR_BUFFER_TOO_SMALL.
lodtensor_status_t rank_table_items(const struct rank_table_t *table, size_t *indices, size_t *lengths, size_t buf_len, size_t *out_len);

// The LoD level the table ranks. Returns LODTENSOR_NULL_ARGUMENT.
lodtensor_status_t rank_table_level(const struct rank_table_t *table, size_t *out);

// Paddle's `max_sequence_len`: the longest length (item 0's), 0 for an empty table.
// Returns LODTENSOR_NULL_ARGUMENT.
lodtensor_status_t rank_table_max_sequence_len(const struct rank_table_t *table, size_t *out);

// Paddle's `reorder_lod_tensor_by_rank`: a new tensor whose unit k is unit `indices[k]` of `x`
// (units: top-level sequences with all nested levels, or rows without LoD); only the table's
// indices are used. The caller destroys it.
// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_INVALID_ARGUMENT (the table's size differs from
// `x`'s unit count, so its indices are not a permutation of `x`'s units; 0-d `x`),
// LODTENSOR_UNSUPPORTED (memory on a CUDA device in a build without CUDA), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t rank_table_reorder(const struct rank_table_t *table, const struct lodtensor_t *x, struct lodtensor_t **out);

// Paddle's `shrink_rnn_memory`: the RNN state for time step `step`, i.e. the first n units of
// `x` (in rank order), n = the number of sequences longer than `step`. Units are top-level
// sequences (nested levels kept) if `x` has a LoD, else rows. n = 0 gives a 0-row tensor without
// LoD. The new handle shares `x`'s memory; the caller destroys it.
// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_INVALID_ARGUMENT (`x` has fewer than n units, or is
// 0-d), LODTENSOR_OUT_OF_MEMORY (no memory for the new LoD).
lodtensor_status_t rank_table_shrink_rnn_memory(const struct rank_table_t *table, const struct lodtensor_t *x, size_t step, struct lodtensor_t **out);

// The number of items (sequences at the ranked level). Returns LODTENSOR_NULL_ARGUMENT.
lodtensor_status_t rank_table_size(const struct rank_table_t *table, size_t *out);

// Concatenates `count` (>= 2) tensors sequence by sequence: output sequence `i` holds the rows
// of sequence `i` (LoD level 0) of `xs[0]`, then of `xs[1]`, ... Every input needs a LoD with
// the same number of level-0 sequences, the same dtype (any) and the same row width (product of
// `dims[1..]`); the output takes `xs[0]`'s trailing dims and has one LoD level whose sequence
// lengths are the sums of the inputs' row counts. Level 0 is read as absolute rows, so
// multi-level inputs work too (Paddle reads its offsets as rows). `*out` is a new tensor on the
// inputs' place (the CPU or one CUDA device).
//
// Returns LODTENSOR_NULL_ARGUMENT (`xs`, any `xs[i]`, `out`), LODTENSOR_INVALID_ARGUMENT
// (`count` < 2, dtype or row width differing from `xs[0]`'s, inputs on different places),
// LODTENSOR_INVALID_LOD (an input without LoD, or with a different number of sequences),
// LODTENSOR_UNSUPPORTED (a CUDA place this build cannot use), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t sequence_concat(const struct lodtensor_t *const *xs, size_t count, struct lodtensor_t **out);

// Paddle's `sequence_conv`: for each row `r` of `x` (`[T, N]`, exactly one LoD level), the
// `context_length` rows `p = r + context_start + j` (j = 0 .. context_length-1) of r's own
// sequence side by side, times `filter` (`[context_length * N, M]`); `*out` is a new `[T, M]`
// tensor with `x`'s LoD. Context rows outside the sequence are zeros, or, with
// `padding_trainable`, rows of `padding_data` (`[up_pad + down_pad, N]`, `up_pad =
// max(0, -context_start)`, `down_pad = max(0, context_start + context_length - 1)`):
// `padding_data[up_pad + p]` before the sequence, `padding_data[up_pad + p - len]` after it.
// `padding_data` may be NULL, and is ignored, unless `padding_trainable`. float32 or float64
// (`x`, `filter` and `padding_data` alike). `*out` is on the inputs' place; on a CUDA device
// the sums run in the CPU's order without fused multiply-adds.
//
// Returns LODTENSOR_NULL_ARGUMENT (`x`, `filter`, `out`; `padding_data` when
// `padding_trainable`), LODTENSOR_INVALID_LOD (`x` has not exactly one LoD level),
// LODTENSOR_INVALID_ARGUMENT (`x` not rank 2, `context_length` < 1, `context_stride` not 1,
// `padding_trainable` with `context_start` 0 and `context_length` 1, |`context_start`| or
// `context_length` >= 2^62, `filter` or `padding_data` of the wrong dims or a dtype other than
// `x`'s, inputs on different places), LODTENSOR_UNSUPPORTED (not float32/float64, a CUDA place
// this build cannot use), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t sequence_conv(const struct lodtensor_t *x, const struct lodtensor_t *filter, const struct lodtensor_t *padding_data, int64_t context_length, int64_t context_start, int64_t context_stride, bool padding_trainable, struct lodtensor_t **out);

// Sliding windows within sequences: `out[r][k] = x[r + k]` while row `r + k` belongs to the
// same sequence of `x`'s last LoD level as row `r`, else `pad_value`. `x` is int32 or int64 with
// one element per row (`[N]` or `[N, 1]`) and a LoD; `win_size` >= 2; `pad_value` must fit `x`'s
// dtype. `*out` is a new `[N, win_size]` tensor with `x`'s LoD and place.
//
// Returns LODTENSOR_NULL_ARGUMENT (`x`, `out`), LODTENSOR_INVALID_LOD (`x` has no LoD),
// LODTENSOR_INVALID_ARGUMENT (`x` not one element per row, `win_size` < 2, `pad_value` out of
// the dtype's range), LODTENSOR_UNSUPPORTED (dtype not int32/int64, a CUDA place this build
// cannot use), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t sequence_enumerate(const struct lodtensor_t *x, int64_t win_size, int64_t pad_value, struct lodtensor_t **out);

// Removes every element of `x` equal to one of `tokens[0..tokens_len]` (NULL allowed when
// `tokens_len` is 0, which copies `x`). `x` is int32 or int64 with one element per row (`[N]` or
// `[N, 1]`) and a LoD. `*out` is a new tensor of `x`'s rank with the surviving rows; every LoD
// level but the last is copied, the last is recomputed from the surviving counts. `*out` is on
// `x`'s place; on a CUDA device `x` is copied to the host (the output's size depends on it)
// and the surviving rows are gathered on the device.
//
// Returns LODTENSOR_NULL_ARGUMENT (`x`, `out`, `tokens` NULL with `tokens_len` > 0),
// LODTENSOR_INVALID_LOD (`x` has no LoD), LODTENSOR_INVALID_ARGUMENT (`x` not one element per
// row), LODTENSOR_UNSUPPORTED (dtype not int32/int64, a CUDA place this build cannot use),
// LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t sequence_erase(const struct lodtensor_t *x, const int64_t *tokens, size_t tokens_len, struct lodtensor_t **out);

// Paddle's `sequence_expand` (spec §2.1): repeats whole sequences of `x` as a level of `y`'s LoD
// says. With `R` = level `ref_level` of `y`'s LoD (-1 = the last level), sequence `i` of `x` (its
// level-0 sequences, or each row when `x` has no LoD) is written `R[i+1] - R[i]` times, in order
// (a count of entries of the level below, or of rows for the last level; 0 drops the sequence).
// `x`: rank >= 2, at most 1 LoD level. `y`: at least 1 LoD level; its data is not read, but it
// must be on `x`'s place (the CPU or a CUDA device, where the result is made).
// `*out` is a new tensor with its own memory, `x`'s dtype and trailing dims; with `x` having a
// LoD, its LoD is one level of `x`'s sequence lengths, each repeated; without, no LoD (also when
// the result has zero sequences). Every dtype works.
// Returns LODTENSOR_NULL_ARGUMENT (`x`, `y`, `out`), LODTENSOR_INVALID_ARGUMENT (`x` rank < 2;
// `x` without LoD whose rows differ from the number of sequences of level `ref_level`),
// LODTENSOR_INVALID_LOD (`x` with more than 1 LoD level; `y` without LoD; `x`'s sequence count
// differs from level `ref_level`'s), LODTENSOR_OUT_OF_RANGE (`ref_level` not -1 and not a level
// of `y`), LODTENSOR_UNSUPPORTED (a CUDA place this build cannot use), LODTENSOR_OUT_OF_MEMORY.
// LODTENSOR_INVALID_ARGUMENT also when `x` and `y` are on different places (naming both).
lodtensor_status_t sequence_expand(const struct lodtensor_t *x, const struct lodtensor_t *y, int64_t ref_level, struct lodtensor_t **out);

// Paddle's `sequence_expand_as` (spec §2.2): row `h` of `x` is written `L[h+1] - L[h]` times,
// where `L` is `y`'s one-level LoD. `x`: rank >= 2 (its LoD is ignored), as many rows as `y` has
// sequences. `y`: exactly 1 LoD level; its data is not read, but it must be on `x`'s place (the
// CPU or a CUDA device, where the result is made). `*out` is a new tensor with its own
// memory, `L.back()` rows, `x`'s dtype and trailing dims, and `y`'s LoD. Every dtype works.
// Returns LODTENSOR_NULL_ARGUMENT (`x`, `y`, `out`), LODTENSOR_INVALID_ARGUMENT (`x` rank < 2,
// rows of `x` != sequences of `y`, `x` and `y` on different places), LODTENSOR_INVALID_LOD (`y`
// without exactly 1 LoD level), LODTENSOR_UNSUPPORTED (a CUDA place this build cannot use),
// LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t sequence_expand_as(const struct lodtensor_t *x, const struct lodtensor_t *y, struct lodtensor_t **out);

// Paddle's `sequence_first_step`: `sequence_pool` with LODTENSOR_POOL_FIRST and pad value 0
// (the first row of each last-level sequence; 0 for an empty one). Statuses as `sequence_pool`'s
// except for `pool_type`.
lodtensor_status_t sequence_first_step(const struct lodtensor_t *x, struct lodtensor_t **out);

// Paddle's `sequence_last_step`: `sequence_pool` with LODTENSOR_POOL_LAST and pad value 0 (the
// last row of each last-level sequence; 0 for an empty one). Statuses as `sequence_pool`'s
// except for `pool_type`.
lodtensor_status_t sequence_last_step(const struct lodtensor_t *x, struct lodtensor_t **out);

// The mask of lengths: `y[..., j] = (j < x[...]) ? 1 : 0` for `j` in `[0, maxlen)`. `y` has
// `x`'s dims plus `[maxlen]`, dtype `out_dtype` (any of the ten, bool included) and no LoD.
// `maxlen` < 0 means `max(0, max over x of trunc(x))`, and 0 when `x` is empty; `maxlen` 0 is
// an error. `x` may be any numeric dtype (not bool). `*out` is a new tensor on `x`'s place; on a
// CUDA device with `maxlen` < 0, `x` is copied to the host to find its maximum.
//
// Returns LODTENSOR_NULL_ARGUMENT (`x`, `out`), LODTENSOR_INVALID_ARGUMENT (`maxlen` 0, `x`
// already has `LODTENSOR_MAX_DIMS` dims), LODTENSOR_UNSUPPORTED (`x` bool, an unknown
// `out_dtype`, a CUDA place this build cannot use), LODTENSOR_OUT_OF_MEMORY (the mask is too large).
lodtensor_status_t sequence_mask(const struct lodtensor_t *x, int64_t maxlen, struct lodtensor_dtype_t out_dtype, struct lodtensor_t **out);

// Paddle's `sequence_pad` (spec §6): `*out` is a new `[sequences, padded_length, x.dims[1..]...]`
// tensor (no LoD) whose slot `i` holds sequence `i` of `x` followed by padding steps, and
// `*out_length` (may be NULL when not wanted) a new int64 `[sequences]` tensor of the lengths.
// `x`: rank >= 2, exactly 1 LoD level (our rule; Paddle's multi-level result is inconsistent).
// `pad_value`: `x`'s dtype, either 1 element (every element of a padding step) or dims
// `x.dims[1..]` (one whole step); its LoD is ignored. `padded_length`: -1 for the longest
// sequence, else at least the longest sequence. Every dtype works. On a CUDA device (`x` and
// `pad_value` both there) the padding runs there and both outputs are on that device. On failure
// neither output is written.
// Returns LODTENSOR_NULL_ARGUMENT (`x`, `pad_value`, `out`), LODTENSOR_INVALID_ARGUMENT (`x` rank
// < 2 or of 9 dims; `pad_value` dtype or dims; `padded_length` < -1 or shorter than a sequence;
// `x` and `pad_value` on different places), LODTENSOR_INVALID_LOD (`x` without exactly 1 LoD
// level), LODTENSOR_UNSUPPORTED (a CUDA place in a build without CUDA), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t sequence_pad(const struct lodtensor_t *x, const struct lodtensor_t *pad_value, int64_t padded_length, struct lodtensor_t **out, struct lodtensor_t **out_length);

// Paddle's `sequence_pool` (spec §6): one output row per sequence of `x`'s last LoD level, reduced
// column by column (trailing dims flattened) as `pool_type` (a `LODTENSOR_POOL_*` value) says.
// `x`: 1 or 2 LoD levels; float32, float64, float16 or bfloat16 (sums are accumulated in double
// and rounded once). An empty sequence gives `pad_value` (converted to `x`'s dtype) in every
// column. `*out`: a new `[sequences, x.dims[1..]...]` tensor with LoD `[L[0]]` for a 2-level `x`,
// none for 1 level. `out_max_index` may be NULL; otherwise `*out_max_index` is, for MAX and MIN,
// a new int32 tensor of `*out`'s dims (no LoD) holding the absolute row of `x` each value came
// from (-1 for an empty sequence), and NULL for the other pool types. With `x` on a CUDA device
// the pooling runs there (results equal to the host's bit for bit, NaN payloads of sums aside) and
// the outputs are on that device.
// Returns LODTENSOR_NULL_ARGUMENT (`x`, `out`), LODTENSOR_INVALID_ARGUMENT (unknown
// `pool_type`; a finite `pad_value` that `x`'s dtype would round to infinity),
// LODTENSOR_INVALID_LOD (`x` with no LoD or more than 2 levels), LODTENSOR_OUT_OF_RANGE
// (MAX/MIN on more than 2^31-1 rows), LODTENSOR_UNSUPPORTED (another dtype; a CUDA place in a
// build without CUDA), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t sequence_pool(const struct lodtensor_t *x, int32_t pool_type, double pad_value, struct lodtensor_t **out, struct lodtensor_t **out_max_index);

// The elements of `x` (`[N, M]`, exactly one LoD level, any dtype) as a new tensor of
// `[N * M / new_dim, new_dim]` in the same row-major order. Every sequence's element count
// `len * M` must be a multiple of `new_dim`; the output LoD has lengths `len * M / new_dim`.
// `*out` is on `x`'s place.
//
// Returns LODTENSOR_NULL_ARGUMENT (`x`, `out`), LODTENSOR_INVALID_LOD (not exactly one LoD
// level), LODTENSOR_INVALID_ARGUMENT (rank not 2, `new_dim` < 1, a sequence whose element
// count is not a multiple of `new_dim`, naming it), LODTENSOR_UNSUPPORTED (a CUDA place this
// build cannot use), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t sequence_reshape(const struct lodtensor_t *x, int64_t new_dim, struct lodtensor_t **out);

// The rows of each sequence of `x` in reverse order. `x` has rank >= 2, exactly one LoD level,
// any dtype. `*out` is a new tensor with `x`'s dims, LoD and place.
//
// Returns LODTENSOR_NULL_ARGUMENT (`x`, `out`), LODTENSOR_INVALID_LOD (not exactly one LoD
// level), LODTENSOR_INVALID_ARGUMENT (rank < 2), LODTENSOR_UNSUPPORTED (a CUDA place this build
// cannot use), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t sequence_reverse(const struct lodtensor_t *x, struct lodtensor_t **out);

// Paddle's `sequence_scatter` (spec §3): `*out` is a new tensor (own memory, `x`'s dims and
// dtype, no LoD) equal to `x` plus the updates: for every id `p` in sequence `i` of `ids`,
// `out[i][ids[p]] += updates[p]` (each row of `x` flattened; duplicates accumulate in id order,
// integers wrap). `ids`: int64 or int32, exactly 1 LoD level, one id per row (`[M]` or `[M, 1]`).
// `updates`: `x`'s dtype, exactly 1 LoD level (its offsets are not compared with `ids`', as in
// Paddle), one value per id. An empty sequence leaves its row alone; rows past the last
// sequence are copied unchanged. dtypes of `x`: every numeric type (not bool). Runs on the
// inputs' place (the CPU or one CUDA device, which checks `ids` itself, copying them to the host
// only to name one out of range, and sorts them by target with device scratch of about 42 bytes
// per id); `*out` is on that place.
// Returns LODTENSOR_NULL_ARGUMENT (`x`, `ids`, `updates`, `out`), LODTENSOR_INVALID_ARGUMENT
// (0-d `x`; `ids` or `updates` not one value per id; `updates` dtype != `x`'s; inputs on
// different places),
// LODTENSOR_INVALID_LOD (`ids` or `updates` without exactly 1 LoD level),
// LODTENSOR_OUT_OF_RANGE (an id outside `[0, row width of x)`; more `ids` sequences than rows of
// `x`), LODTENSOR_UNSUPPORTED (`ids` not int32/int64; `x` bool; a CUDA place this build cannot
// use), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t sequence_scatter(const struct lodtensor_t *x, const struct lodtensor_t *ids, const struct lodtensor_t *updates, struct lodtensor_t **out);

// `sequence_scatter` in place: adds the updates into `x`'s own memory (its dims and LoD stay).
// The writes go through `x`'s memory, so every handle sharing it (`lodtensor_share`,
// `lodtensor_slice`, split pieces, the caller's buffer of `lodtensor_from_buffer`) sees them; no
// other thread may use that memory during the call. Arguments, rules and statuses as in
// `sequence_scatter`, plus LODTENSOR_INVALID_ARGUMENT when `ids` or `updates` use `x`'s memory.
// On failure `x` is unchanged (no write happens before every check has passed, on a device too).
lodtensor_status_t sequence_scatter_inplace(struct lodtensor_t *x, const struct lodtensor_t *ids, const struct lodtensor_t *updates);

// Rows `[L[i] + offset[i], L[i] + offset[i] + length[i])` of each sequence `i` of `x`, whose LoD
// `L` has exactly one level, concatenated; the output LoD is `[[0, cumsum(length)]]`. `offset`
// and `length` are int64 (or int32) tensors of dims `[N, 1]` or `[N]`, `N` = the number of
// sequences. `x` may be of any dtype. `*out` is a new tensor on the inputs' place; on a CUDA
// device `offset` and `length` are copied to the host to be checked.
//
// Returns LODTENSOR_NULL_ARGUMENT (`x`, `offset`, `length`, `out`), LODTENSOR_INVALID_LOD (`x`
// has no LoD or more than one level), LODTENSOR_INVALID_ARGUMENT (`offset`/`length` not `[N]` or
// `[N, 1]`; a negative offset or length, naming the sequence), LODTENSOR_OUT_OF_RANGE (a slice
// ending past its sequence: `L[i] + offset[i] + length[i] > L[i + 1]`, naming the sequence),
// LODTENSOR_UNSUPPORTED (`offset`/`length` not int32/int64, a CUDA place this build cannot
// use), LODTENSOR_INVALID_ARGUMENT also for inputs on different places, LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t sequence_slice(const struct lodtensor_t *x, const struct lodtensor_t *offset, const struct lodtensor_t *length, struct lodtensor_t **out);

// Softmax within each sequence of `x`'s last LoD level, with the sequence's maximum subtracted
// (so large inputs do not overflow, unlike Paddle's CPU kernel). `x` holds one element per row
// (`[N]` or `[N, 1]`) of float32, float64, float16 or bfloat16 (exponentials in float, or double
// for float64; sums in double). On success
// `*out` is a new tensor with `x`'s dims and LoD, on `x`'s place (on a CUDA device it is computed
// there, equal to the host's to float rounding), destroyed by the caller.
//
// Returns LODTENSOR_NULL_ARGUMENT (`x`, `out`), LODTENSOR_INVALID_LOD (`x` has no LoD),
// LODTENSOR_INVALID_ARGUMENT (`x` has more than one element per row),
// LODTENSOR_UNSUPPORTED (dtype not a float, or a CUDA place in a build without CUDA),
// LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t sequence_softmax(const struct lodtensor_t *x, struct lodtensor_t **out);

// Paddle's `sequence_unpad` (spec §6): `*out` is a new tensor holding the first `length[i]` steps
// of row `i` of `x`, concatenated: dims `[sum, x.dims[2..]...]` (`[sum, 1]` for a 2-D `x`), LoD
// one level of `length` (no LoD when `x` has 0 rows). `x`: `[N, L, ...]`, rank >= 2, LoD ignored.
// `length`: int64 or int32, dims `[N]`, each value in `[0, L]`. Every dtype of `x` works. On a
// CUDA device (`x` and `length` both there) the copy runs there; `length` is copied to the host
// to be checked (a small copy that waits for the device's queued work).
// Returns LODTENSOR_NULL_ARGUMENT (`x`, `length`, `out`), LODTENSOR_INVALID_ARGUMENT (`x` rank <
// 2; `length` dims; a length negative or more than `L`; different places),
// LODTENSOR_UNSUPPORTED (`length` not int32/int64; a CUDA place in a build without CUDA),
// LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t sequence_unpad(const struct lodtensor_t *x, const struct lodtensor_t *length, struct lodtensor_t **out);

// Removes every element (size 0). Returns LODTENSOR_NULL_ARGUMENT.
lodtensor_status_t tensor_array_clear(struct tensor_array_t *a);

// Creates an empty array. The caller destroys it with `tensor_array_destroy`.
// Returns LODTENSOR_NULL_ARGUMENT.
lodtensor_status_t tensor_array_create(struct tensor_array_t **out);

// Destroys an array and its elements (memory still used by handles read from it stays alive).
// NULL is accepted and ignored.
void tensor_array_destroy(struct tensor_array_t *a);

// Runs a whole dynamic RNN over the sequences of LoD level `level` of `x` and returns the packed
// step outputs in `*out` (a new tensor the caller destroys).
//
// The sequences are ranked by length; `x` is unpacked into time steps; the state starts as
// `init_state` (one unit — row, or top-level sequence if it has a LoD — per sequence of `level`,
// in the original order), reordered by rank. For each step the driver shrinks the state to the
// live sequences, calls `step_fn(step, step_input, prev_state, &step_output, &new_state,
// user_data)` (see `tensor_array_step_fn` for ownership), keeps the step output and continues
// from the new state. The outputs are packed back in the original order: `*out`'s LoD is `x`'s
// levels down to `level` followed by the step outputs' own levels. Every handle the driver
// creates or receives is destroyed before it returns, on success and on failure. `step_fn` runs
// on the calling thread and may call the library.
//
// `x` and `init_state` must be on one place; on a CUDA device the step's inputs are there too
// (the step function runs on the host and calls the library on them as on any device tensor).
//
// Returns LODTENSOR_NULL_ARGUMENT (`x`, `init_state`, `step_fn`, `out`),
// LODTENSOR_INVALID_ARGUMENT (`init_state` on another place than `x`; `level` >= number of LoD
// levels of `x`; every sequence empty, so the output shape is unknown; `init_state` without one
// unit per sequence; step outputs on different places; a step function
// result that is NULL, is one of the borrowed inputs, or has the wrong number of units; step
// outputs with different dtypes or row shapes), LODTENSOR_INVALID_LOD (step outputs with
// different numbers of LoD levels), LODTENSOR_CALLBACK_FAILED (`step_fn` returned non-zero; the
// message gives its status and the step), LODTENSOR_UNSUPPORTED (memory on a CUDA device in a
// build without CUDA), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t tensor_array_dynamic_rnn(const struct lodtensor_t *x, size_t level, const struct lodtensor_t *init_state, tensor_array_step_fn step_fn, void *user_data, struct lodtensor_t **out);

// Paddle's `array_to_lod_tensor`: packs time steps back into a new tensor (the inverse of
// `tensor_array_unpack` with the same table): the sequences in their original order, each the
// concatenation of its unit (top-level sequence, or row without LoD) of elements 0 .. length-1.
// The LoD is the table's levels above r, the ranked level, then the elements' own levels.
// Elements from the longest length on are not read. The caller destroys the tensor.
// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_INVALID_ARGUMENT (empty array; an element whose
// dtype, dims[1..] or place differ from element 0's, or that is 0-d; a sequence longer than the
// array; element t not holding exactly one unit per sequence longer than t),
// LODTENSOR_INVALID_LOD (elements with different numbers of LoD levels),
// LODTENSOR_UNSUPPORTED (memory on a CUDA device in a build without CUDA), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t tensor_array_pack(const struct tensor_array_t *a, const struct rank_table_t *table, struct lodtensor_t **out);

// Element `index` as a new handle: with `copy` false it shares the element's memory (writes
// through one are seen by the other), with `copy` true it has its own copy on the element's place
// (a device element is copied on its device). The LoD is the element's. The caller destroys the
// handle.
// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_OUT_OF_RANGE (`index` >= size),
// LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t tensor_array_read(const struct tensor_array_t *a, size_t index, bool copy, struct lodtensor_t **out);

// The number of elements. Returns LODTENSOR_NULL_ARGUMENT.
lodtensor_status_t tensor_array_size(const struct tensor_array_t *a, size_t *out);

// Paddle's `tensor_array_to_tensor`: concatenates (`use_stack` false) or stacks (`use_stack`
// true) the elements along `axis` into a new tensor without LoD, owned by the caller. A negative
// axis counts from the end: concat takes `axis` in [-ndim, ndim), stack in [-(ndim+1), ndim].
// Concat needs every element to have element 0's dims except along `axis`; stack needs equal
// dims; both need one dtype and place. If `sizes` is not NULL it receives each element's size
// along `axis` (Paddle's OutIndex; 1 when stacking at axis == ndim) and must hold `sizes_len` >=
// the array size entries; NULL skips them.
// Returns LODTENSOR_NULL_ARGUMENT (`a`, `out`), LODTENSOR_INVALID_ARGUMENT (empty array, axis
// out of range, mismatched dims or dtype, concat of 0-d tensors, more than 9 dims),
// LODTENSOR_BUFFER_TOO_SMALL (`sizes_len`), LODTENSOR_UNSUPPORTED (memory on a CUDA device in a build without CUDA),
// LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t tensor_array_to_tensor(const struct tensor_array_t *a, int64_t axis, bool use_stack, struct lodtensor_t **out, size_t *sizes, size_t sizes_len);

// Paddle's `lod_tensor_to_array`: unpacks `x` into time steps by `table` (level r). Element t of
// the new array holds, for each sequence of level r longer than t, in rank order, its t-th entry
// of level r+1 (its t-th row when r is the last level) with the LoD levels below r+1; there are
// `rank_table_max_sequence_len` elements (none for an empty table). The elements share one new
// allocation. The caller destroys the array.
// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_INVALID_ARGUMENT (`x` has no LoD level r, or
// `table` does not rank `x`'s sequences: another count or other lengths),
// LODTENSOR_UNSUPPORTED (memory on a CUDA device in a build without CUDA), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t tensor_array_unpack(const struct lodtensor_t *x, const struct rank_table_t *table, struct tensor_array_t **out);

// Splits `x` along `axis` (in [-ndim, ndim)) into a new array of dims[axis] tensors with `x`'s
// dims without that axis, each with its own memory and no LoD (the inverse of stacking).
// The caller destroys the array.
// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_INVALID_ARGUMENT (0-d `x`, axis out of range),
// LODTENSOR_UNSUPPORTED (memory on a CUDA device in a build without CUDA), LODTENSOR_OUT_OF_MEMORY.
lodtensor_status_t tensor_array_unstack(const struct lodtensor_t *x, int64_t axis, struct tensor_array_t **out);

// Stores `t` (its elements and LoD) at `index`: with `copy` false the element shares `t`'s memory,
// with `copy` true it holds a copy on `t`'s place. `t` stays the caller's. Writing at or past the
// end grows the array to `index + 1`; the slots in between become 0-row tensors of `t`'s dtype,
// row shape (dims[1..]; dims [0] for a 0-d `t`) and place, without LoD.
// Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_OUT_OF_MEMORY (the array cannot grow to
// `index + 1`; no memory for the copy).
lodtensor_status_t tensor_array_write(struct tensor_array_t *a, size_t index, const struct lodtensor_t *t, bool copy);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* LODTENSOR_H */
