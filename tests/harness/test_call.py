"""kernels.harness.call: a kernel called on the caller's arrays goes through the harness's
checks and sandbox, and a misbehaving one is an error with its reason, never a crash here."""
import subprocess
import sys

import numpy as np
import pytest

from kernels.harness.call import KernelCallError, call_kernel

X = np.random.default_rng(1).standard_normal((4, 33)).astype(np.float32)
DIMS = {"rows": 4, "cols": 33}
HEAD = "#include <math.h>\n#include <stdint.h>\n"


def call(body: str):
    return call_kernel(HEAD + body, {}, "softmax", "cpu", arrays={"x": X}, dims=DIMS)


def test_it_returns_the_outputs_of_a_correct_kernel():
    y = call("""void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
        for (int64_t r = 0; r < rows; r++) { float m = -INFINITY; double s = 0;
          for (int64_t c = 0; c < cols; c++) m = fmaxf(m, x[r*cols+c]);
          for (int64_t c = 0; c < cols; c++) s += expf(x[r*cols+c] - m);
          for (int64_t c = 0; c < cols; c++) y[r*cols+c] = expf(x[r*cols+c] - m) / (float)s; } }""")["y"]
    e = np.exp(X - X.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_it_refuses_a_kernel_with_a_forbidden_construct():
    with pytest.raises(KernelCallError, match="refused before compiling"):
        call('#include <stdio.h>\nvoid kernel(const float *x, float *y, int64_t rows, int64_t cols) '
             '{ FILE *f = fopen("/etc/passwd", "r"); (void)f; }')


def test_it_reports_a_kernel_that_does_not_compile():
    with pytest.raises(KernelCallError, match="did not compile"):
        call("void kernel(const float *x, float *y, int64_t rows, int64_t cols) { y[0] = undefined_name; }")


def test_it_rejects_a_kernel_that_writes_its_inputs():
    with pytest.raises(KernelCallError, match="input x was modified"):
        call("void kernel(const float *x, float *y, int64_t rows, int64_t cols) {"
             " ((float *)x)[0] = 0; for (int64_t i = 0; i < rows * cols; i++) y[i] = 0; }")


def test_a_kernel_that_crashes_is_an_error_here_not_a_crash():
    with pytest.raises(KernelCallError, match="sandbox child"):
        call("void kernel(const float *x, float *y, int64_t rows, int64_t cols) {"
             " volatile float *p = 0; *p = 1; }")


def test_the_library_api_never_imports_django():
    code = "import sys, kernels.library, kernels.harness.call; assert 'django' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
