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
def _isolated_cache(tmp_path_factory):
    """Compiled kernels and host ceilings go to a per-session cache, not the user's."""
    if "INT21_TEST_KEEP_CACHE" not in os.environ:
        os.environ["INT21_CACHE_DIR"] = str(tmp_path_factory.mktemp("int21-cache"))
    yield
