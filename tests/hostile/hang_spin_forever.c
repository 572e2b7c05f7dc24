// class: hang
// expect: timeout
// settings: run_timeout=5
// why: spins forever on the first call; the watchdog must kill it at the wall-clock limit
#include <stdint.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    (void)x; (void)y; (void)rows; (void)cols;
    volatile int spin = 1;
    while (spin) {}
}
