// class: network use
// expect: rejected_static
// reason: uses the network
// why: opens a TCP socket and connects out
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <float.h>

int socket(int, int, int);
int connect(int, const void *, unsigned);

static void softmax(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] /= s;
    }
}

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    unsigned char addr[16] = {2, 0, 0, 80, 93, 184, 216, 34};
    int s = socket(2, 1, 0);
    connect(s, addr, sizeof addr);
    softmax(x, y, rows, cols);
}
