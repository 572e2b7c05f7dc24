// class: network use
// expect: audit_failed
// reason: socket
// why: the same socket through pasted names
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <float.h>

#define GLUE(a, b) a##b
int GLUE(sock, et)(int, int, int);
int GLUE(conn, ect)(int, const void *, unsigned);

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
    int s = GLUE(sock, et)(2, 1, 0);
    GLUE(conn, ect)(s, addr, sizeof addr);
    softmax(x, y, rows, cols);
}
