"""The run page's guidance form, parsed into a directive (runs.forms.directive_from); the
service validates it against the run's space and team (test_api.py's guidance tests)."""
from int21web.runs.forms import directive_from


def test_pin_and_forbid_take_a_param_and_a_number():
    assert directive_from({"op": "pin", "param": " VEC ", "value": "16"}) == {"op": "pin", "param": "VEC", "value": 16}
    assert directive_from({"op": "forbid", "param": "ALGO", "value": "online"}) == \
        {"op": "forbid", "param": "ALGO", "value": "online"}


def test_narrow_takes_a_comma_separated_list_and_target_a_speedup():
    assert directive_from({"op": "narrow", "param": "THREADS", "value": "1, 2,"}) == \
        {"op": "narrow", "param": "THREADS", "values": [1, 2]}
    assert directive_from({"op": "target", "value": "2.5"}) == {"op": "target", "speedup": 2.5}


def test_the_text_is_a_note_or_the_reason_given_with_another_op():
    assert directive_from({"op": "note", "text": " try wider vectors "}) == {"op": "note", "text": "try wider vectors"}
    assert directive_from({"op": "mute", "agent": "tuner", "text": "x" * 600}) == \
        {"op": "mute", "agent": "tuner", "note": "x" * 500}
