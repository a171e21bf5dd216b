/* static.link: the smallest program linked against liblodtensor.a.
 *
 * It proves that the static library plus the system libraries listed by the
 * lodtensor::lodtensor_static target are enough to link and run, before (and
 * independently of) the full test programs. Nothing is declared here: every
 * declaration comes from the public header. */
#include <stdio.h>

#include <lodtensor.h>

int main(void) {
    const char *version = lodtensor_version();
    const char *ok = lodtensor_status_str(0);
    if (version == NULL || version[0] == '\0' || ok == NULL || ok[0] == '\0') {
        fprintf(stderr, "static.link: empty version or status text\n");
        return 1;
    }
    printf("lodtensor %s (static), status 0: %s\n", version, ok);
    return 0;
}
