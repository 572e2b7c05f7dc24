"""A model's answer becomes a kernel only when it is exactly usable."""
import pytest

from kernels import workloads
from swarm.llm.answers import Unusable, kernel_from_answer, regions
from tests.swarm.llm_fakes import EDIT_NOT_APPLYING, EDIT_SCALE, GARBAGE, ONLINE, TWO_PASS, WRONG_ENTRY, fenced

WL = workloads.get("softmax")


def use(answer, parent=TWO_PASS, target="cpu"):
    return kernel_from_answer(answer, parent, WL, target)


def test_a_whole_kernel_in_one_code_block_is_taken():
    source, mode = use(fenced(ONLINE))
    assert mode == "whole" and source == ONLINE


def test_search_replace_edits_are_applied_to_the_parent():
    source, mode = use(EDIT_SCALE)
    assert mode == "edits" and "yr[c] = yr[c] * inv;" in source and "yr[c] *= inv;" not in source


@pytest.mark.parametrize("answer, reason", [
    (GARBAGE, "no code in the answer"),
    ("", "empty"),
    (EDIT_NOT_APPLYING, "does not match the kernel"),
    (WRONG_ENTRY, "wrong entry point"),
    (fenced(TWO_PASS.replace("int64_t rows", "int rows")), "wrong entry point: expected"),
    (fenced(TWO_PASS.replace("void kernel(", "static void kernel(")), "is static"),
    (fenced(TWO_PASS), "unchanged"),
    (fenced(ONLINE) + fenced(TWO_PASS), "2 code blocks"),
    ("<<<<<<< SEARCH\n    float inv = 1.0f / s;\n=======\n", "malformed"),
    ("<<<<<<< SEARCH\n    }\n=======\n    }\n>>>>>>> REPLACE\n", "matches"),
])
def test_an_unusable_answer_says_why(answer, reason):
    with pytest.raises(Unusable, match=reason):
        use(answer)


MARKED = TWO_PASS.replace("static void row(", "/* INT21-EDIT-BEGIN */\nstatic void row(").replace(
    "void kernel(", "/* INT21-EDIT-END */\nvoid kernel(")


def test_edits_must_stay_inside_the_marked_regions():
    assert len(regions(MARKED)) == 1
    source, _ = use(EDIT_SCALE, parent=MARKED)
    assert "yr[c] * inv" in source
    outside = ("<<<<<<< SEARCH\n        for (int64_t r = 0; r < rows; r++) row(x + r * cols, y + r * cols, cols, "
               "r + 1 < rows ? x + (r + 1) * cols : 0);\n"
               "=======\n        for (int64_t r = rows - 1; r >= 0; r--) row(x + r * cols, y + r * cols, cols, 0);\n"
               ">>>>>>> REPLACE\n")
    with pytest.raises(Unusable, match="outside the editable regions"):
        use(outside, parent=MARKED)


def test_a_whole_kernel_must_keep_the_text_outside_the_regions():
    changed = MARKED.replace("num_threads(THREADS)", "num_threads(64)")
    with pytest.raises(Unusable, match="outside the editable regions"):
        use(fenced(changed), parent=MARKED)
    with pytest.raises(Unusable, match="dropped the INT21-EDIT markers"):
        use(fenced(ONLINE), parent=MARKED)
    inside = MARKED.replace("float inv = 1.0f / s;", "const float inv = 1.0f / s;")
    assert use(fenced(inside), parent=MARKED)[0] == inside


def test_a_cuda_kernel_must_keep_extern_c_global():
    seed = WL.template("cuda").source("rowwise")
    with pytest.raises(Unusable, match="wrong entry point"):
        use(fenced(seed.replace('extern "C" ', "")), parent=seed, target="cuda")
