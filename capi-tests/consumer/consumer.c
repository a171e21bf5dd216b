/* A program outside this repository's build: it sees lodtensor only through an
 * installed prefix (find_package or pkg-config). Built and run by install_test.sh. */
#include <stdio.h>

#include <lodtensor.h>

int main(void) {
    const char *ok = lodtensor_status_str(0);
    printf("lodtensor %s\n", lodtensor_version());
    return (ok != NULL && ok[0] != '\0') ? 0 : 1;
}
