"""Lessons keyed by fusion-group signature: a second problem that contains a group already
tuned starts from what was learnt, and a group that matches a built-in workload starts from
that workload's tuned knowledge. Real generated programs (kernels.codegen) for two graphs;
the executor is the engine's seam, a synthetic landscape over the groups' knobs."""
import pytest

from kernels import workloads
from kernels.graph.ir import Graph, Node, Tensor
from kernels.graph.workload import in_memory
from kernels.spec import Shape
from swarm.events import ListSink
from swarm.generation import Engine
from swarm.knowledge import InMemoryKnowledge, groups
from swarm.store import InMemoryStore
from swarm.types import Budget, Goal, Lesson, Result

# Better than the defaults (THREADS=2, VEC=16, STAGE=1) at these small sizes: THREADS=1, VEC=8.
KNOB = {"THREADS": {1: 1.6, 2: 1.0}, "VEC": {0: 0.7, 8: 1.5, 16: 1.0}, "STAGE": {0: 0.9, 1: 1.0}}


def softmax_nodes(x: str, rows: int, cols: int, tag: str) -> list:
    return [Node(f"{tag}1", "amax", (x,), (rows, 1), {"dims": [1]}),
            Node(f"{tag}2", "sub", (x, f"{tag}1"), (rows, cols)),
            Node(f"{tag}3", "exp", (f"{tag}2",), (rows, cols)),
            Node(f"{tag}4", "sum", (f"{tag}3",), (rows, 1), {"dims": [1]}),
            Node(f"{tag}5", "div", (f"{tag}3", f"{tag}4"), (rows, cols))]


def problem_a() -> Graph:
    g = Graph((Tensor("x", (64, 256), "input"),), (), tuple(softmax_nodes("x", 64, 256, "s")), ("s5",))
    g.validate()
    return g


def problem_b() -> Graph:
    """Another problem: a softmax at other sizes beside an unrelated pointwise output."""
    nodes = softmax_nodes("x", 128, 512, "s") + [Node("t", "tanh", ("z",), (32, 32))]
    g = Graph((Tensor("x", (128, 512), "input"), Tensor("z", (32, 32), "input")), (), tuple(nodes), ("s5", "t"))
    g.validate()
    return g


class Landscape:
    """Scores a whole program by its groups' knobs (the same table for every group)."""

    def __init__(self):
        self.seen: list[dict] = []

    def evaluate(self, goal, candidates):
        for c in candidates:
            self.seen.append(c.params)
            score = 1.0
            for name, v in c.params.items():
                score *= KNOB.get(name.split("_", 1)[-1], {}).get(v, 1.0)
            yield c.id, Result(status="ok", reason="synthetic", score=score, median_ms=1.0 / score,
                               speedup={"torch": score}), None


@pytest.fixture
def two_problems(tmp_path, monkeypatch):
    wls = {"prob_a": in_memory("prob_a", problem_a(), {}, tmp_path / "a"),
           "prob_b": in_memory("prob_b", problem_b(), {}, tmp_path / "b")}
    real = workloads._imported
    monkeypatch.setattr(workloads, "_imported", lambda name: wls[name] if name in wls else real(name))
    return wls


def run(name: str, knowledge, budget: int, cold: bool = False):
    eng = Engine(InMemoryStore(), Landscape(), knowledge, ListSink(), fingerprint="host-a")
    wl = workloads.get(name)
    shape = "x".join(str(v) for _, v in wl.shapes.typical[0].dims)
    rid = eng.start(Goal(workload=name, shapes=[shape], population=4, seed=1, cold=cold,
                         budget=Budget(evaluations=budget, stagnation_generations=None)))
    eng.run(rid)
    return eng, rid


def reduction_group(wl) -> dict:
    return next(g for g in wl.groups if g["family"] == "reduction")


def test_the_softmax_groups_of_two_problems_share_a_signature_key_but_not_their_sizes(two_problems):
    ga, gb = reduction_group(two_problems["prob_a"]), reduction_group(two_problems["prob_b"])
    assert ga["signature"]["matches"] == "softmax"
    assert groups.signature_key(ga["signature"]) == groups.signature_key(gb["signature"])
    assert groups.group_shape(ga["signature"]) != groups.group_shape(gb["signature"])
    point = next(g for g in two_problems["prob_b"].groups if g["family"] == "pointwise")
    assert groups.signature_key(point["signature"]) != groups.signature_key(gb["signature"])


def test_a_second_problem_starts_from_the_group_lessons_of_the_first(two_problems):
    knowledge = InMemoryKnowledge()
    eng_a, rid_a = run("prob_a", knowledge, budget=16)
    best_id = eng_a.store.load_run(rid_a).best_id
    best = next(c.params for c in eng_a.store.candidates(rid_a) if c.id == best_id)
    ga = reduction_group(two_problems["prob_a"])
    key = groups.signature_key(ga["signature"])
    stored = [lsn for lsn in knowledge.lessons if lsn.workload == key]
    assert any(lsn.kind == "best_config" for lsn in stored), [lsn.workload for lsn in knowledge.lessons]
    rank1 = next(lsn for lsn in stored if lsn.data["subject"] == "rank1")
    assert rank1.data["params"] == {k[len("G0_"):]: v for k, v in best.items() if k.startswith("G0_")}
    assert rank1.shape_bucket == "2^6x2^8"

    eng_b, rid_b = run("prob_b", knowledge, budget=4)
    gb = reduction_group(two_problems["prob_b"])
    p = groups.prefix(gb)
    first = sorted(eng_b.store.candidates(rid_b), key=lambda c: c.id)
    seeded = [c for c in first if c.agent == "seeded"]
    assert seeded, [c.agent for c in first]
    assert "composed from what is known of its groups" in seeded[0].rationale
    assert {k: seeded[0].params[p + k] for k in rank1.data["params"]} == rank1.data["params"]
    # the composed config is a real point of B's space: its other group keeps its defaults
    space = two_problems["prob_b"].template("cpu").space
    assert not space.violations(seeded[0].params, [two_problems["prob_b"].shapes.typical[0]])


def test_a_cold_run_is_not_seeded_by_group_lessons(two_problems):
    knowledge = InMemoryKnowledge()
    run("prob_a", knowledge, budget=8)
    eng_b, rid_b = run("prob_b", knowledge, budget=4, cold=True)
    assert not [c for c in eng_b.store.candidates(rid_b) if c.agent == "seeded"]


def test_a_group_matching_a_builtin_starts_from_its_tuned_configs(two_problems):
    """softmax's own lesson (ALGO=staged, VEC=8, THREADS=8 at 64x256) becomes the group's
    STAGE=1, VEC=8; THREADS=8 is not a value the group takes, so it keeps its default."""
    knowledge = InMemoryKnowledge()
    knowledge.record(Lesson(kind="best_config", workload="softmax", target="cpu", fingerprint="host-a",
                            shape_bucket="2^6x2^8", text="softmax rank1",
                            data={"subject": "rank1", "params": {"ALGO": "staged", "VEC": 8, "THREADS": 8,
                                                                 "CHUNK": 4}, "score": 3.1}))
    wl = two_problems["prob_a"]
    space = wl.template("cpu").space
    out = groups.seeds(list(wl.groups), space, knowledge, "cpu", "host-a", [wl.shapes.typical[0]])
    composed = [lsn for lsn in out if lsn.kind == "best_config"]
    assert composed and "built-in softmax" in composed[0].text
    params = composed[0].data["params"]
    assert params["G0_VEC"] == 8 and params["G0_STAGE"] == 1 and params["G0_THREADS"] == space.default()["G0_THREADS"]
    assert not space.violations(params, [wl.shapes.typical[0]])


def test_library_champions_of_the_builtin_seed_the_group_too(two_problems):
    wl = two_problems["prob_a"]
    space = wl.template("cpu").space
    out = groups.seeds(list(wl.groups), space, InMemoryKnowledge(), "cpu", "host-a", [wl.shapes.typical[0]],
                       champions=lambda name, target: [("2^6x2^8", {"VEC": 8, "THREADS": 1})] if name == "softmax"
                       else [])
    assert out[0].data["params"]["G0_VEC"] == 8 and out[0].data["params"]["G0_THREADS"] == 1
    assert "library champion" in out[0].text


def test_a_remembered_setting_that_breaks_a_constraint_is_left_out():
    """A matmul group's remembered MR that the new space's constraint refuses is not composed."""
    sig = {"family": "matmul", "m": 64, "n": 64, "k": 64, "batch": 1, "epilogue": [], "transposed_b": False,
           "matches": "matmul"}
    from kernels.spec import Constraint, DesignSpace, Param
    space = DesignSpace((Param("G0_MR", "choice", choices=(4, 5), default=4),
                         Param("G0_MC", "choice", choices=(24, 48), default=48)),
                        (Constraint("G0_MC % G0_MR == 0", "MC must be a multiple of MR"),))
    knowledge = InMemoryKnowledge()
    knowledge.record(Lesson(kind="best_config", workload=groups.signature_key(sig), target="cpu",
                            fingerprint="host-a", shape_bucket="2^6x2^6x2^6", text="t",
                            data={"subject": "rank1", "params": {"MR": 4, "MC": 24}}))
    g = {"id": 0, "family": "matmul", "form": None, "fuse": None, "knobs": ["G0_MR", "G0_MC"], "signature": sig}
    shape = Shape.of(m=64, n=64, k=64)
    assert groups.seeds([g], space, knowledge, "cpu", "host-a", [shape])[0].data["params"] == {"G0_MR": 4,
                                                                                               "G0_MC": 24}
    knowledge.record(Lesson(kind="best_config", workload=groups.signature_key(sig), target="cpu",
                            fingerprint="host-a", shape_bucket="2^6x2^6x2^6", text="t",
                            data={"subject": "rank1", "params": {"MR": 5, "MC": 48}}))   # 48 % 5 != 0
    assert groups.seeds([g], space, knowledge, "cpu", "host-a", [shape]) == []


def test_a_remembered_form_of_a_fusable_edge_sets_its_fusion_bit():
    """Lessons about the unfused matmul (FUSE_0=0 in the teacher's best) compose FUSE_0=0 with
    those knobs, not the knobs under the default fused form."""
    from kernels.spec import DesignSpace, Param
    plain = {"family": "matmul", "m": 64, "n": 64, "k": 64, "batch": 1, "epilogue": [], "transposed_b": True,
             "matches": "matmul"}
    fused = {**plain, "epilogue": ["add"], "matches": None}
    space = DesignSpace((Param("FUSE_0", "bool", default=1), Param("G0_MR", "choice", choices=(4, 6), default=6)))
    forms = [{"id": 0, "family": "matmul", "form": "fused", "fuse": "FUSE_0", "knobs": ["G0_MR"], "signature": fused},
             {"id": 0, "family": "matmul", "form": "unfused", "fuse": "FUSE_0", "knobs": ["G0_MR"],
              "signature": plain}]
    knowledge = InMemoryKnowledge()
    knowledge.record(Lesson(kind="best_config", workload=groups.signature_key(plain), target="cpu",
                            fingerprint="host-a", shape_bucket="2^6x2^6x2^6", text="t",
                            data={"subject": "rank1", "params": {"MR": 4}}))
    out = groups.seeds(forms, space, knowledge, "cpu", "host-a", [Shape.of(m=64, n=64, k=64)])
    assert out[0].data["params"] == {"FUSE_0": 0, "G0_MR": 4}
    assert "(unfused)" in out[0].text
    # and projecting a run's best onto its groups keeps only the form that ran
    best = Lesson(kind="best_config", workload="p", target="cpu", fingerprint="host-a", shape_bucket="", text="",
                  data={"subject": "rank1", "params": {"FUSE_0": 1, "G0_MR": 6}, "score": 1.5})
    projected = groups.project(forms, [best])
    assert [lsn.workload for lsn in projected] == [groups.signature_key(fused)]


@pytest.mark.django_db
def test_group_lessons_go_through_the_django_knowledge_store(two_problems):
    """The same transfer with PostgreSQL's lesson table (the store the web app and workers use)."""
    from int21web.runs import models as m
    from int21web.runs import services

    def goal(name, shape):
        return Goal(workload=name, shapes=[shape], population=4, seed=2,
                    budget=Budget(evaluations=8, stagnation_generations=None))
    rid_a = services.run_start(goal=goal("prob_a", "64x256"), executor=Landscape())
    services.run_drive(run_id=rid_a, executor=Landscape())
    rows = m.Lesson.objects.filter(run_id=rid_a, workload__startswith="group:reduction:")
    assert rows.filter(kind="best_config").exists()
    assert "row reduction amax,sub,exp,sum,div at 64x256" in rows.first().text
    shape_b = "x".join(str(v) for _, v in two_problems["prob_b"].shapes.typical[0].dims)
    rid_b = services.run_start(goal=goal("prob_b", shape_b), executor=Landscape())
    services.run_drive(run_id=rid_b, executor=Landscape())
    seeded = m.Candidate.objects.filter(run_id=rid_b, agent="seeded").order_by("id").first()
    assert seeded is not None and "composed from what is known of its groups" in seeded.rationale
