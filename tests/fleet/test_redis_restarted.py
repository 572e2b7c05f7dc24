"""Redis restarted mid-run (a private redis-server without persistence, so its queues are
really forgotten): workers reconnect, the orchestrator publishes again what no worker had
claimed, the run completes with every candidate evaluated exactly once."""
import shutil
import subprocess
import time

import pytest

from fleet_stack import Stack, free_port


def redis_server(port: int, tmp_path) -> subprocess.Popen:
    p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                          "--appendonly", "no", "--dir", str(tmp_path)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    import redis
    client = redis.Redis(port=port, socket_timeout=1)
    for _ in range(100):
        try:
            client.ping()
            return p
        except Exception:
            time.sleep(0.05)
    p.kill()
    raise AssertionError("redis-server did not start")


def test_a_run_survives_a_redis_restart_with_nothing_lost(tmp_path):
    if shutil.which("redis-server") is None:
        pytest.skip("needs the redis-server program to run a Redis of its own")
    port = free_port()
    redis = redis_server(port, tmp_path)
    stack = Stack(tmp_path, redis_url=f"redis://127.0.0.1:{port}/0")
    try:
        stack.worker("cpu1", "target.cpu")
        stack.worker("cpu2", "target.cpu")
        stack.worker("orch", "orchestrate")
        stack.wait_workers("cpu1", "cpu2", "orch")
        run_id = stack.launch(budget=12, population=6)
        stack.wait(lambda: len(stack.finished_evaluations(run_id)) >= 2, 120, "two evaluations")

        redis.terminate()
        redis.wait(timeout=10)
        time.sleep(2)
        redis = redis_server(port, tmp_path)

        stack.wait_finished(run_id, timeout=180, watch=["cpu1", "cpu2", "orch"])
        stack.assert_each_candidate_evaluated_once(run_id, budget=12)
    finally:
        stack.close()
        redis.terminate()
        redis.wait(timeout=10)
