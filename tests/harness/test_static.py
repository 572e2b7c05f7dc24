import pytest

from kernels.harness.static import check_source

GOOD = "#include <math.h>\n#include <stdint.h>\nvoid kernel(const float *x, float *y, int64_t r, int64_t c) {}\n"


def rules(src):
    return [f.rule for f in check_source(src, "c")]


def test_a_plain_kernel_passes():
    assert check_source(GOOD, "c") == []


@pytest.mark.parametrize("include", ['#include "/etc/passwd"', "#include </dev/zero>", "%:include <stdio.h>",
                                     "#inc\\\nlude <stdio.h>", "??=include <stdio.h>", "#include_next <math.h>"])
def test_it_refuses_includes_outside_the_allowlist(include):
    assert "include" in rules(include + "\n" + GOOD)


def test_a_variable_named_like_a_function_is_fine():
    assert check_source(GOOD.replace("{}", "{ int time = 3; int read = time; (void)read; }"), "c") == []


def test_calls_to_forbidden_functions_are_found_around_comments():
    src = GOOD.replace("{}", "{ system /* hi */ (\"x\"); }")
    assert "starts processes" in rules(src)


def test_a_missing_entry_point_is_reported():
    assert "entry point" in rules("#include <math.h>\nvoid other(void) {}\n")


def test_findings_point_at_the_real_line():
    src = GOOD + "\n\nvoid helper(void) { fork(); }\n"
    finding = next(f for f in check_source(src, "c") if f.rule == "starts processes")
    assert finding.line == 6


def test_cuda_entry_points_may_put_launch_bounds_either_side_of_void():
    for decl in ('extern "C" __global__ void __launch_bounds__(256, 2) kernel(float *y) {}',
                 'extern "C" __global__ __launch_bounds__((BM * BN) / 64) void kernel(float *y) {}'):
        assert check_source(decl, "cuda") == [], decl
