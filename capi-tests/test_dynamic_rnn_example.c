/* test_dynamic_rnn_example: examples-c/dynamic_rnn.c as a test (plainly, under valgrind and
 * statically linked): the dynamic-RNN driver against a plain per-sequence loop. The example's
 * main returns non-zero on any mismatch. */
#include "../examples-c/dynamic_rnn.c"
