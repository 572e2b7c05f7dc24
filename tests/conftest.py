import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The suite's goals ask for quick evaluations (2 seeds, a few timed calls, NumPy alone): the
# host's floor allows it here (kernels/harness/settings.py); tests of the harness's own
# defaults build EvalSettings directly or set the floor back to "harness".
os.environ.setdefault("INT21_EVAL_GOAL_FLOOR", "fast")
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session", autouse=True)
def _each_test_password_hashed_once():
    """The suite's users share a handful of passwords. Each is hashed once, by the production
    hasher at its full work factor (~0.25 s here), and that hash is reused for every user given
    the same password, rather than hashed again for each of the ~4 users hundreds of tests
    create. Logins still check passwords against real hashes; only the salt repeats."""
    from django.contrib.auth import base_user, models
    real, memo = base_user.make_password, {}

    def make_password(password, salt=None, hasher="default"):
        if not isinstance(password, str) or salt is not None or hasher != "default":
            return real(password, salt, hasher)
        if password not in memo:
            memo[password] = real(password)
        return memo[password]

    base_user.make_password = models.make_password = make_password   # set_password, create_user
    yield
    base_user.make_password = models.make_password = real


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory):
    """Compiled kernels and host ceilings go to a per-session cache, not the user's."""
    if "INT21_TEST_KEEP_CACHE" not in os.environ:
        os.environ["INT21_CACHE_DIR"] = str(tmp_path_factory.mktemp("int21-cache"))
    yield
