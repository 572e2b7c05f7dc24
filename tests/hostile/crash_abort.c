// class: crash
// expect: crashed
// reason: SIGABRT
// why: abort() is allowed by the audit on purpose (assertions); it must end as crashed
#include <stdint.h>
#include <stdlib.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    (void)x; (void)y;
    if (rows > 0 && cols > 0) abort();
}
