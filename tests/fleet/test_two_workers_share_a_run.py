"""Two CPU workers share one run; the run is driven once even when its driver is queued three
times; every candidate is evaluated exactly once; the registry shows both workers."""
import json


def test_two_cpu_workers_share_a_run_and_each_candidate_is_evaluated_once(stack):
    stack.worker("cpu1", "target.cpu")
    stack.worker("cpu2", "target.cpu")
    stack.worker("orch", "orchestrate", concurrency=2)
    stack.wait_workers("cpu1", "cpu2", "orch")

    run_id = stack.launch(budget=8, population=4)
    stack.dispatch(run_id)      # duplicates of the driver: a redelivery, a start-up re-dispatch
    stack.dispatch(run_id)
    stack.wait_finished(run_id, watch=["cpu1", "cpu2", "orch"])

    done = stack.assert_each_candidate_evaluated_once(run_id, budget=8)
    by_worker = {}
    for _cid, attempt, worker in done:
        assert attempt == 1
        by_worker[worker] = by_worker.get(worker, 0) + 1
    assert set(by_worker) == {stack.node("cpu1"), stack.node("cpu2")}, by_worker

    started = [d["generation"] for _, _, d in stack.events(run_id, "generation_started")]
    finished = [d["generation"] for _, _, d in stack.events(run_id, "generation_finished")]
    assert started == finished == [0, 1], "one driver: each generation started and finished once"
    assert stack.sql("select count(*) from runs_evaluation where lost_at is not null") == [(0,)]
    assert stack.sql("select lease_holder, lease_until from runs_run where id = %s", run_id) == [("", None)]


def test_the_registry_shows_each_worker_with_its_targets_and_fingerprint(stack):
    stack.worker("cpu1", "target.cpu")
    stack.wait_workers("cpu1")
    out = stack.shell("import json\nfrom int21web.fleet import selectors\n"
                      "w = selectors.workers()\n"
                      "print(json.dumps({'workers': w, 'cpu': [bool(selectors.live_worker_for('cpu')), "
                      "selectors.live_worker_for('cpu').reason], 'cuda': [bool(selectors.live_worker_for('cuda')), "
                      "selectors.live_worker_for('cuda').reason]}, default=str))")
    data = json.loads(out.splitlines()[-1])
    (w,) = data["workers"]
    assert w["name"] == stack.node("cpu1") and w["queues"] == ["target.cpu"] and w["targets"] == ["cpu"]
    assert w["status"] == "live" and w["fingerprint"]["cpu"]["cpu_model"] and w["fingerprint"]["cpu"]["compiler"]
    assert data["cpu"] == [True, f"1 live worker(s) on target.cpu: {stack.node('cpu1')}"]
    assert data["cuda"][0] is False and "no worker serves target.cuda" in data["cuda"][1]

    stack.stop("cpu1")      # a clean stop says goodbye
    rows = stack.sql("select stopped_at is not null from fleet_worker where name = %s", stack.node("cpu1"))
    assert rows == [(True,)]
