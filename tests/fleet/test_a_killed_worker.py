"""kill -9 in the middle of an evaluation: the candidate is re-queued under the next attempt
and evaluated once more, the run completes with no duplicate or missing rows, and the run's
event stream records the retry. Either the whole worker dies (a lost host: the survivor takes
over) or only the pool process running the evaluation (Celery rejects the message back to the
queue; the redelivery finds the attempt claimed, and the stale heartbeat re-queues it)."""
import os
import signal
import time
from pathlib import Path

EVAL = {"seeds": 2, "min_calls": 20, "max_calls": 400, "timing_budget_s": 1.0}


def started_run(stack):
    stack.worker("cpu1", "target.cpu")
    stack.worker("cpu2", "target.cpu")
    stack.worker("orch", "orchestrate")
    stack.wait_workers("cpu1", "cpu2", "orch")
    # Evaluations of about a second, so there is a middle to kill them in.
    return stack.launch(budget=8, population=4, eval_settings=EVAL)


def first_claim_by(stack, node: str) -> int:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        claimed = stack.sql("select candidate_id from runs_evaluation where worker = %s and finished_at is null", node)
        if claimed:
            return claimed[0][0]
        time.sleep(0.05)
    raise AssertionError(f"{node} never started an evaluation\n" + stack.logs())


def assert_retried_once(stack, run_id: int, candidate: int, victim: str) -> tuple:
    done = stack.assert_each_candidate_evaluated_once(run_id, budget=8)
    lost = stack.sql("select candidate_id, attempt, worker from runs_evaluation where lost_at is not null")
    assert (candidate, 1, victim) in lost
    final = {cid: (attempt, worker) for cid, attempt, worker in done}
    retried = [d for _, _, d in stack.events(run_id, "candidate_evaluated") if d["candidate_id"] == candidate]
    assert len(retried) == 1 and retried[0]["attempt"] == 2 and retried[0]["retry"] is True
    return final[candidate]


def test_a_worker_killed_mid_evaluation_is_replaced_by_the_survivor(stack):
    run_id = started_run(stack)
    victim = stack.node("cpu1")
    candidate = first_claim_by(stack, victim)
    stack.kill("cpu1")      # SIGKILL to the whole worker: main process and its pool child

    stack.wait_finished(run_id, timeout=180, watch=["cpu2", "orch"])
    assert assert_retried_once(stack, run_id, candidate, victim) == (2, stack.node("cpu2"))

    # and the registry notices: cpu1 goes stale, cpu2 stays live
    stack.wait(lambda: "stale" in stack.shell(
        "from int21web.fleet import selectors\n"
        f"print([w['status'] for w in selectors.workers() if w['name'] == {victim!r}])"), 30, "cpu1 to go stale")


def test_a_pool_process_killed_mid_evaluation_is_retried_once(stack):
    run_id = started_run(stack)
    victim = stack.node("cpu1")
    candidate = first_claim_by(stack, victim)
    main = stack.procs["cpu1"].pid
    children = Path(f"/proc/{main}/task/{main}/children").read_text().split()
    pool = [int(c) for c in children if "celery" in Path(f"/proc/{c}/cmdline").read_text(errors="replace")]
    assert pool, children
    os.kill(pool[0], signal.SIGKILL)   # the worker itself lives on and starts a new pool process

    stack.wait_finished(run_id, timeout=180, watch=["cpu1", "cpu2", "orch"])
    attempt, _worker = assert_retried_once(stack, run_id, candidate, victim)
    assert attempt == 2
    assert "WorkerLostError" in stack.log("cpu1") or "Worker exited prematurely" in stack.log("cpu1")
