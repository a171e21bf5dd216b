/* test_translate_example: examples-c/translate.c as a test (plainly, under valgrind and statically
 * linked): n-best beam search with the decoder API around a toy recurrent model. The example's
 * main returns non-zero if scores are unsorted, a hypothesis is cut short, a score differs from
 * the model's own score of the sentence, or beam 1 differs from greedy decoding. */
#include "../examples-c/translate.c"
