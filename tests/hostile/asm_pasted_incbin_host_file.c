// class: compile-time include attack
// expect: rejected_static
// reason: asm|assembly
// why: pasted __asm__ with ".inc" "bin" embeds /etc/passwd in .rodata; y[0] then carries its first three bytes as an exact integer, which the evaluator's "wrong" reason prints back to the submitter
#include <math.h>
#include <stdint.h>
#include <float.h>

#define GLUE(a, b) a##b
#define ASM GLUE(__as, m__)

ASM(".pushsection .rodata\n"
    ".globl i21_blob\n"
    "i21_blob:\n"
    ".inc" "bin \"/etc/passwd\"\n"
    ".byte 0\n"
    ".popsection\n");
extern const unsigned char i21_blob[];

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] /= s;
    }
    /* 3 bytes of the host file per evaluation, exactly representable in a float */
    y[0] = (float)(i21_blob[0] | i21_blob[1] << 8 | i21_blob[2] << 16);
}
