// class: output flood
// expect: rejected_static
// reason: file or terminal I/O
// why: prints a line per element (a chatty candidate must not deadlock or swamp the worker; here it never gets to run)
#include <math.h>
#include <stdint.h>
#include <float.h>

int printf(const char *, ...);

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t i = 0; i < rows * cols * 1000; i++) printf("%ld %f\n", (long)i, x[i % (rows * cols)]);
    (void)y;
}
