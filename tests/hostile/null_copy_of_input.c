// class: null candidate
// expect: wrong
// why: copies the input to the output
#include <stdint.h>
#include <string.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    memcpy(y, x, (size_t)(rows * cols) * sizeof(float));
}
