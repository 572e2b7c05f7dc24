"""Units shared by a range of a dim (kernels.codegen.dynamic): which units may share one, and
that the shared unit, read at a member's value, is that member's own unit."""
import re

import pytest

from kernels.codegen import dynamic

UNIT = """static void @PREFIX@g0(const float *in, float *out) {{
    for (int64_t i = 0; i < {n}; i++) out[i * {stride} + 3] = in[{row} + i] * 0.5f;
}}
#define @PREFIX@ARENA_VALUES {arena}
"""


def unit(p, **over):
    values = dict(n=p + 1, stride=16 * p + 16, row=64 * p, arena=100 * p + 7) | over
    return UNIT.format(**values)


def test_literals_affine_in_the_dim_share_one_unit_over_the_range_the_members_span():
    pasts = [5, 17, 30, 63]
    shared = dynamic.find([unit(p) for p in pasts], [(1, p) for p in pasts], ["BATCH", "PAST"])
    assert [s.to_json() for s in shared] == [{"dim": "PAST", "lo": 5, "hi": 63, "members": [0, 1, 2, 3],
                                             "affine_literals": 4}]
    text = dynamic.render(shared[0], "sd0_", "V")
    assert "i < (V + 1)" in text and "i * (16 * V + 16) + 3" in text and "in[(64 * V) + i]" in text
    assert "#define sd0_ARENA_VALUES 6307" in text          # the arena at the largest member: one allocation
    assert "0.5f" in text


@pytest.mark.parametrize("why,units", [
    ("two members fit any line", [unit(5), unit(9)]),
    ("not affine (a square)", [unit(p, n=p * p) for p in (3, 5, 9)]),
    ("not integer", [unit(p, n=p // 2) for p in (3, 5, 9)]),
    ("a float differs", [unit(p).replace("0.5f", f"{p}.5f") for p in (3, 5, 9)]),
    ("on a preprocessor line", [unit(p) + f"#if X == {p}\n#endif\n" for p in (3, 5, 9)]),
    ("the arena shrinks as the dim grows", [unit(p, arena=1000 - p) for p in (3, 5, 9)]),
])
def test_units_that_do_not_fit_are_left_alone(why, units):
    dims = [(p,) for p in (3, 5, 9)[:len(units)]]
    assert dynamic.find(units, dims, ["PAST"]) == [], why


def test_members_fed_other_params_do_not_share():
    pasts = [3, 5, 9]
    assert dynamic.find([unit(p) for p in pasts], [(p,) for p in pasts], ["PAST"], ["a", "b", "a"]) == []
    assert len(dynamic.find([unit(p) for p in pasts], [(p,) for p in pasts], ["PAST"], ["a", "a", "a"])) == 1


def test_an_irregular_short_member_is_left_out_of_the_run():
    pasts = [1, 4, 7, 8]
    units = [unit(p, stride=999) if p == 1 else unit(p) for p in pasts]
    (s,) = dynamic.find(units, [(p,) for p in pasts], ["PAST"])
    assert (s.lo, s.hi, s.members) == (4, 8, [1, 2, 3])


def test_a_decoders_decode_step_shares_one_unit_that_reads_as_each_members_own():
    """Real units: a tiny decoder's decode step captured at three cache lengths. Read at each
    member's value, the shared unit is that member's unit but for the arena's size."""
    pytest.importorskip("torch")
    from kernels.codegen import program
    from kernels.graph import capture as cap
    from kernels.models.decoder import DecoderConfig
    from kernels.models.problem import problem_source
    cfg = DecoderConfig(hidden=64, heads=4, kv_heads=2, ffn=128, layers=1, vocab=64, max_seq=12)
    pasts = [4, 7, 11]
    src = problem_source(cfg, "decode", batch=1, past=11)
    graphs = [cap.capture(src, overrides={"PAST": p}).graph for p in pasts]
    texts = [re.sub(rf"\bs{k}_", dynamic.PREFIX_MARK, program.generate(g, prefix=f"s{k}_").unit.text)
             for k, g in enumerate(graphs)]
    (s,) = dynamic.find(texts, [(p,) for p in pasts], ["PAST"])
    assert (s.lo, s.hi) == (4, 11) and len(s.fits) > 10
    shared = dynamic.render(s, "Z_", "V")

    def at(p):
        def value(m):
            a, sign, b = int(m.group(1) or 1), m.group(2), int(m.group(3) or 0)
            return str(a * p + (-b if sign == "-" else b))
        return re.sub(r"\((?:(\d+) \* )?V(?: ([+-]) (\d+))?\)", value, shared)
    arena = re.compile(r"#define Z_ARENA_VALUES \d+")
    for p, text in zip(pasts, texts):
        own = text.replace(dynamic.PREFIX_MARK, "Z_")
        assert arena.sub("", at(p)) == arena.sub("", own)
