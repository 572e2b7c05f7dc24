// class: output flood
// expect: audit_failed
// reason: puts
// why: floods stdout through a pasted puts; the import audit stops it before it can run
#include <stdint.h>

#define GLUE(a, b) a##b
int GLUE(pu, ts)(const char *);

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    (void)x; (void)y;
    for (int64_t i = 0; i < rows * cols * 100000; i++) GLUE(pu, ts)("all work and no play makes jack a dull boy");
}
