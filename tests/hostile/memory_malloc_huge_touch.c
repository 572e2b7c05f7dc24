// class: memory blow-up
// expect: crashed
// settings: memory_mb=1024
// why: allocates 64 MiB blocks until malloc says no, touching every page, then uses the NULL it got (the address-space cap is 1 GiB here to keep the test fast)
#include <stdint.h>
#include <stdlib.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    (void)x; (void)rows; (void)cols;
    for (int i = 0; i < 1024; i++) {
        char *p = malloc((size_t)64 << 20);
        if (p) { for (size_t k = 0; k < ((size_t)64 << 20); k += 4096) p[k] = 1; continue; }
        *(volatile char *)p = 1;   /* malloc failed: this is a NULL store */
    }
    y[0] = 1.0f;
}
