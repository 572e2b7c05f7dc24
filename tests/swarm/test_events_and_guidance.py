import pytest

from kernels import workloads
from swarm.events import EventError, make_event
from swarm.guidance import GuidanceError, Steering, validate

SPACE = workloads.get("softmax").template("cpu").space
TEAM = ["explorer", "tuner"]


def test_an_event_has_a_literal_kind_and_only_its_fields():
    e = make_event("run_paused", reason="lunch")
    assert e.to_json() == {"kind": "run_paused", "reason": "lunch"}
    with pytest.raises(EventError, match="unknown event kind"):
        make_event("run_exploded", reason="x")
    with pytest.raises(EventError, match="unknown"):
        make_event("run_paused", reason="x", extra=1)
    with pytest.raises(EventError, match="missing"):
        make_event("run_paused")
    with pytest.raises(EventError, match="not JSON"):
        make_event("run_paused", reason=object())


@pytest.mark.parametrize("directive, field", [
    ({"op": "explode"}, "op"),
    ({"op": "pin", "param": "NOPE", "value": 1}, "param"),
    ({"op": "pin", "param": "VEC", "value": 3}, "value"),
    ({"op": "narrow", "param": "VEC", "values": []}, "values"),
    ({"op": "mute", "agent": "nobody"}, "agent"),
    ({"op": "target", "speedup": -1}, "speedup"),
    ({"op": "note", "text": "  "}, "text"),
])
def test_a_bad_directive_names_the_field(directive, field):
    with pytest.raises(GuidanceError) as err:
        validate(directive, SPACE, TEAM)
    assert str(err.value).startswith(field)


def test_pins_and_forbids_narrow_the_space_the_agents_see():
    s = Steering()
    s.apply(validate({"op": "pin", "param": "VEC", "value": 16}, SPACE, TEAM), SPACE)
    s.apply(validate({"op": "forbid", "param": "THREADS", "value": 1}, SPACE, TEAM), SPACE)
    narrowed = s.restrict(SPACE)
    assert narrowed.param("VEC").values() == [16]
    assert 1 not in narrowed.param("THREADS").values()
    assert s.permits({"VEC": 16, "THREADS": 2}) and not s.permits({"VEC": 8, "THREADS": 2})


def test_a_directive_that_would_empty_a_param_is_ignored_with_a_reason():
    s = Steering()
    s.apply({"op": "pin", "param": "VEC", "value": 16}, SPACE)
    assert "no legal value" in s.apply({"op": "forbid", "param": "VEC", "value": 16}, SPACE)
    assert s.restrict(SPACE).param("VEC").values() == [16]
