/* test_paddle_file_example: examples-c/paddle_file.c as a test (plainly, under valgrind and
 * statically linked): a save_combine file of two tensors written and read back record by record.
 * The example's main returns non-zero when a tensor does not come back as written. */
#include "../examples-c/paddle_file.c"
