// class: distribution overfitting
// expect: wrong
// why: online softmax with the running max starting at -INFINITY: a row that starts with masked -inf entries computes exp(-inf - -inf) = NaN
#include <math.h>
#include <stdint.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float m = -INFINITY, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) {
            float nm = xr[c] > m ? xr[c] : m;
            s = s * expf(m - nm) + expf(xr[c] - nm);
            m = nm;
        }
        for (int64_t c = 0; c < cols; c++) y[r * cols + c] = expf(xr[c] - m) / s;
    }
}
