"""Lessons are written from any history, including results that were never timed."""
from kernels.spec import Shape
from swarm.knowledge.distil import distil
from swarm.types import Candidate, Result


def test_a_correct_result_without_a_time_still_makes_a_lesson_not_a_crash():
    c = Candidate(id=1, run_id=1, generation=0, key="k", params={"VEC": 8}, agent="explorer", rationale="",
                  source="", result=Result(status="ok", reason="Correct on 20 cases; not timed.", score=1.0))
    lessons = distil([c], workload="softmax", target="cpu", fingerprint="", shapes=[Shape.of(rows=256, cols=1024)])
    assert lessons and "not timed" in lessons[0].text
