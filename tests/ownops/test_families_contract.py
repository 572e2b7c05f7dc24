"""Every registered fusion-group family, through the same checks: a problem that uses it is
split into a group of that family, the family's knobs are legal C macros with legal
defaults, and the generated kernel passes the harness at its default and at other legal
points of the design space."""
import random

import pytest

from kernels import workloads
from kernels.codegen import registry
from kernels.harness.evaluator import EvalSettings, Evaluator

USES = {
    "pointwise": "activations_zoo",
    "reduction": "log_softmax_middle",     # a strided (column) reduction
    "matmul": "matmul_plain",
    "attention": "attention_gqa_mask",
    "cat": "views_cat_slice",
    "scan": "cumsum_variants",
}


def test_every_family_has_a_problem_here():
    assert set(USES) == set(registry.names())


@pytest.mark.parametrize("family", registry.names())
def test_the_family_generates_correct_kernels(family, imported):
    name = USES[family]
    result = imported(name)
    assert result.ok
    assert family in {g["family"] for g in result.summary["groups"]}
    fam = registry.get(family)
    assert fam.name == family
    wl = workloads.get(name)
    template = wl.template("cpu")
    space = template.space
    default = space.default()
    assert not space.violations(default)
    mine = [p for p in space.params if any(p.name.startswith(f"G{g['id']}_") for g in result.summary["groups"]
                                           if g["family"] == family)]
    assert mine, "the family exposes knobs"
    src, _ = template.seeds()[0]
    rng = random.Random(family)
    points = [default] + [space.sample(rng) for _ in range(2)]
    for point in points:
        out = Evaluator(EvalSettings(timing=False, seeds=2)).evaluate(src, point, wl, "cpu")
        assert out.status == "ok", f"{point}: {out.reason}"
