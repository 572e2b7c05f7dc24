// class: null candidate
// expect: wrong
// why: writes zeros everywhere (finite, so only the value check can catch it)
#include <stdint.h>
#include <string.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    (void)x;
    memset(y, 0, (size_t)(rows * cols) * sizeof(float));
}
