"""The arena planner (kernels.codegen.program.plan_arena): a pure function over a schedule
of buffers, each live from the step that writes it to the last step that reads it."""
import itertools

from kernels.codegen.program import Buffer, plan_arena


def overlapping(a: Buffer, b: Buffer) -> bool:
    return not (a.last < b.first or b.last < a.first)


def assert_no_live_overlap(plan, buffers):
    for a, b in itertools.combinations(buffers, 2):
        if overlapping(a, b):
            oa, ob = plan.offsets[a.name], plan.offsets[b.name]
            assert oa + a.size <= ob or ob + b.size <= oa, (a, b, oa, ob)
    for b in buffers:
        assert 0 <= plan.offsets[b.name] and plan.offsets[b.name] + b.size <= plan.floats


def test_a_chain_reuses_memory_once_a_buffer_is_dead():
    # g0 writes t0; g1 reads t0, writes t1; g2 reads t1, writes t2; g3 reads t2, writes t3
    chain = [Buffer(f"t{k}", k, k + 1, 64) for k in range(4)]
    plan = plan_arena(chain)
    assert_no_live_overlap(plan, chain)
    assert plan.floats_no_reuse == 256
    assert plan.floats == 128                      # two buffers live at a time
    assert plan.offsets["t0"] == plan.offsets["t2"]  # t2 takes t0's place once t0 is dead
    assert plan.to_json()["bytes"] == 512 and plan.to_json()["bytes_no_reuse"] == 1024


def test_buffers_live_at_the_same_step_never_share():
    # a residual: x lives across the whole block while q, k, v come and go
    sched = [Buffer("x", 0, 6, 32), Buffer("q", 1, 3, 16), Buffer("k", 1, 3, 16), Buffer("v", 2, 3, 16),
             Buffer("attn", 3, 4, 16), Buffer("mlp", 4, 5, 48), Buffer("out", 5, 6, 32)]
    plan = plan_arena(sched)
    assert_no_live_overlap(plan, sched)
    assert plan.floats < plan.floats_no_reuse
    # at step 3 x, q, k, v and attn are all live: the arena cannot be smaller than that
    assert plan.floats >= 32 + 16 * 4


def test_the_plan_does_not_depend_on_the_order_given():
    sched = [Buffer(f"b{k}", k % 5, k % 5 + (k % 3), 16 * (1 + k % 4)) for k in range(20)]
    a, b = plan_arena(sched), plan_arena(list(reversed(sched)))
    assert a.offsets == b.offsets and a.floats == b.floats
    assert_no_live_overlap(a, sched)


def test_an_empty_schedule_needs_no_arena():
    plan = plan_arena([])
    assert plan.floats == 0 and plan.floats_no_reuse == 0 and plan.to_json()["reuse"] is None
