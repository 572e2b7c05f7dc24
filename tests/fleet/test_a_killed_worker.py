"""kill -9 of a worker in the middle of an evaluation: the candidate is re-queued under the
next attempt, evaluated by the survivor, the run completes with no duplicate or missing rows,
and the run's event stream records the retry."""
import time


def test_a_worker_killed_mid_evaluation_is_replaced_by_the_survivor(stack):
    stack.worker("cpu1", "target.cpu")
    stack.worker("cpu2", "target.cpu")
    stack.worker("orch", "orchestrate")
    stack.wait_workers("cpu1", "cpu2", "orch")
    # Evaluations of about a second, so there is a middle to kill it in.
    run_id = stack.launch(budget=8, population=4, eval_settings={
        "seeds": 2, "min_calls": 20, "max_calls": 400, "timing_budget_s": 1.0, "recheck": False})

    victim = stack.node("cpu1")
    deadline = time.monotonic() + 120
    claimed = []
    while time.monotonic() < deadline and not claimed:
        claimed = stack.sql("select candidate_id from runs_evaluation where worker = %s and finished_at is null",
                            victim)
        time.sleep(0.05)
    assert claimed, "cpu1 never started an evaluation\n" + stack.logs()
    stack.kill("cpu1")      # SIGKILL to the whole worker: main process and its pool child
    (killed_candidate,) = claimed[0]

    stack.wait_finished(run_id, timeout=180, watch=["cpu2", "orch"])
    done = stack.assert_each_candidate_evaluated_once(run_id, budget=8)

    lost = stack.sql("select candidate_id, attempt, worker from runs_evaluation where lost_at is not null")
    assert (killed_candidate, 1, victim) in lost
    final = {cid: (attempt, worker) for cid, attempt, worker in done}
    assert final[killed_candidate] == (2, stack.node("cpu2"))
    retried = [d for _, _, d in stack.events(run_id, "candidate_evaluated") if d["candidate_id"] == killed_candidate]
    assert len(retried) == 1 and retried[0]["attempt"] == 2 and retried[0]["retry"] is True

    # and the registry notices: cpu1 goes stale, cpu2 stays live
    stack.wait(lambda: "stale" in stack.shell(
        "from int21web.fleet import selectors\n"
        f"print([w['status'] for w in selectors.workers() if w['name'] == {victim!r}])"), 30, "cpu1 to go stale")
