"""Shared fixtures for own-ops tests: a private ops store, the problems imported once.

Importing a problem runs its capture in the sandbox (a forked child of the warmed-up
capture server: ~2 s each once the server is up), so the test problems are imported once
per session, lazily, and shared.
"""
import pytest

from tests.ownops.problem_files import source


@pytest.fixture(scope="session")
def ops_dir(tmp_path_factory):
    import os
    path = tmp_path_factory.mktemp("ops")
    old = os.environ.get("INT21_OPS_DIR")
    os.environ["INT21_OPS_DIR"] = str(path)
    yield path
    if old is None:
        os.environ.pop("INT21_OPS_DIR", None)
    else:
        os.environ["INT21_OPS_DIR"] = old


class Imports:
    def __init__(self, ops_dir):
        self.ops_dir, self.done = ops_dir, {}

    def __call__(self, name: str):
        if name not in self.done:
            from kernels.graph import service
            self.done[name] = service.import_problem(source(name), name=name, ops_dir=self.ops_dir)
        return self.done[name]


@pytest.fixture(scope="session")
def imported(ops_dir):
    """``imported(name)`` → the ImportResult of tests/ownops/problems/<name>.py (cached)."""
    return Imports(ops_dir)


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """An empty INT21_CACHE_DIR, and neither host probe's choice remembered in this process
    (the rows per matrix-vector pass, the deep Linears' GEMM form)."""
    from kernels.codegen import gemm_form, streaming
    probes = (streaming.host_rows_per_pass, gemm_form.host_gemm_form)
    monkeypatch.setenv("INT21_CACHE_DIR", str(tmp_path))
    for probe in probes:
        probe.cache_clear()
    yield tmp_path
    for probe in probes:
        probe.cache_clear()
