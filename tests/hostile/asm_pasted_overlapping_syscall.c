// class: inline assembly
// expect: rejected_static
// evidence: marker
// why: top-level asm through a pasted keyword defines a function that jumps one byte into a mov whose immediate is the syscall opcode; objdump never shows a syscall, the kernel creates /tmp/int21-pwned
#include <math.h>
#include <stdint.h>
#include <float.h>

#define GLUE(a, b) a##b
#define ASM GLUE(__as, m__)

ASM(".text\n"
    ".globl i21_gadget\n"
    "i21_gadget:\n"
    "    mov $2, %eax\n"
    "    jmp 1f+1\n"
    "1:  movl $0xc3050f, %eax\n"
    "    ret\n");
long i21_gadget(const char *path, long flags, long mode);

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    static int done;
    if (!done) { done = 1; i21_gadget("/tmp/int21-pwned", 0101, 0644); }
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] /= s;
    }
}
