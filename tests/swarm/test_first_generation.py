"""Where a cold run starts: the target's natural values on this host (one thread per core,
the widest vectors) for the hardware knobs, a space-filling deal for the rest; and lessons
learnt before a template grew a knob still seed a warm run."""
import random

from kernels import targets, workloads
from kernels.spec import Shape
from swarm import registry
from swarm.agents.base import Context
from swarm.types import Goal
from tests.swarm.test_agents_contract import LESSON, make_ctx

WL = workloads.get("softmax")
TPL = WL.template("cpu")
CPU = targets.get("cpu")
ZEN4 = {"cores": 2, "cpu_flags": ["avx", "avx2", "avx512f", "fma"]}
ZEN3 = {"cores": 3, "cpu_flags": ["avx", "avx2", "fma"]}
OLD = {"cores": 16, "cpu_flags": ["sse4_2"]}


def test_the_cpu_targets_natural_values_follow_the_hosts_cores_and_widest_vectors():
    assert CPU.natural_values(TPL.space, ZEN4) == {"THREADS": 2, "VEC": 16}
    # 3 cores: the largest thread count the space offers that does not oversubscribe them
    assert CPU.natural_values(TPL.space, ZEN3) == {"THREADS": 2, "VEC": 8}
    assert CPU.natural_values(TPL.space, OLD) == {"THREADS": 8, "VEC": 1}
    matmul = workloads.get("matmul").template("cpu").space   # no VEC knob: only THREADS
    assert CPU.natural_values(matmul, ZEN4) == {"THREADS": 2}
    assert targets.get("cuda").natural_values(workloads.get("softmax").template("cuda").space) == {}


def _cold_ctx(natural):
    shapes = [Shape.of(rows=512, cols=4096)]
    return Context(goal=Goal(workload="softmax"), workload=WL, template=TPL, space=TPL.space, shapes=shapes,
                   history=[], elites=[], lessons=[], rng=random.Random(3), generation=0, natural=natural)


def test_the_explorers_first_deal_starts_the_hardware_knobs_at_their_natural_values():
    drafts = registry.get("explorer").propose(_cold_ctx({"THREADS": 2, "VEC": 16}), 6)
    assert len(drafts) == 6
    assert all(d.params["THREADS"] == 2 and d.params["VEC"] == 16 for d in drafts)
    assert all("natural THREADS=2 VEC=16" in d.rationale for d in drafts)
    # ...and the other knobs are still dealt across their values
    assert {d.params["ALGO"] for d in drafts} == {"two_pass", "online", "staged"}
    assert len({d.params["CHUNK"] for d in drafts}) == 4


def test_once_anything_is_measured_the_explorer_deals_the_hardware_knobs_too():
    ctx = make_ctx()
    ctx.natural = {"THREADS": 2, "VEC": 16}
    drafts = registry.get("explorer").propose(ctx, 8)
    assert {d.params["THREADS"] for d in drafts} != {2} and {d.params["VEC"] for d in drafts} != {16}


def test_a_lesson_learnt_before_the_template_grew_a_knob_still_seeds_a_run():
    assert "NT" not in LESSON.data["params"] and "NT" in TPL.space.names
    ctx = make_ctx(lessons=[LESSON])
    drafts = registry.get("seeded").propose(ctx, 3)
    first = drafts[0]
    assert first.params == {**TPL.space.default(), **LESSON.data["params"]}
    assert first.params["NT"] == 0 and first.params["PF"] == 0    # the kernel as it was


def test_a_cold_runs_explorer_starts_from_this_hosts_natural_values_through_the_engine():
    from tests.swarm.test_engine import engine, goal
    eng, _sink = engine()
    natural = CPU.natural_values(TPL.space)   # this host's fingerprint
    assert set(natural) == {"THREADS", "VEC"}
    rid = eng.start(goal())
    eng.run(rid, max_generations=1)
    explored = [c for c in eng.store.candidates(rid) if c.agent == "explorer"]
    assert explored and all(c.params["THREADS"] == natural["THREADS"] and c.params["VEC"] == natural["VEC"]
                            for c in explored)


def test_a_cold_run_over_a_single_template_space_starts_from_the_programs_defaults():
    """A generated program (an own op, an engine phase) has one template, so no variant agent
    proposes its defaults: the explorer's first draft is them, then its deal."""
    from kernels.spec import DesignSpace, Param
    space = DesignSpace((Param("G0_THREADS", "choice", choices=(1, 2), default=2),
                         Param("G0_ALGO", "choice", choices=(0, 1, 2), default=2),
                         Param("G1_JB", "choice", choices=(16, 32, 64), default=32)), ())
    tpl = TPL.__class__(**{**TPL.__dict__, "space": space, "variant_param": None})
    ctx = Context(goal=Goal(workload="softmax"), workload=WL, template=tpl, space=space, shapes=[],
                  history=[], elites=[], lessons=[], rng=random.Random(3), generation=0, natural={})
    drafts = registry.get("explorer").propose(ctx, 4)
    assert drafts[0].params == space.default() and "defaults" in drafts[0].rationale
    assert len(drafts) == 4 and len({tuple(sorted(d.params.items())) for d in drafts}) == 4
    # a multi-template space leaves its defaults to the variant agent, as before
    multi = registry.get("explorer").propose(_cold_ctx({}), 4)
    assert all("defaults" not in d.rationale for d in multi)
