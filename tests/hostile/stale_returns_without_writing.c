// class: stale output
// expect: wrong
// reason: non-finite
// why: returns at once and leaves y as it found it; the NaN poison must show through
#include <stdint.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    (void)x; (void)y; (void)rows; (void)cols;
}
