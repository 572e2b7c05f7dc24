import pytest

from fleet_stack import Stack, drop_template


@pytest.fixture(scope="session", autouse=True)
def _template_database():
    yield
    drop_template()


@pytest.fixture
def stack(tmp_path):
    """A production-mode stack (real PostgreSQL, Redis, worker processes); skipped without them."""
    s = Stack(tmp_path)
    yield s
    s.close()
