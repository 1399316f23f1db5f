"""beleg.blas.one_blas_thread limits every BLAS the process has loaded, also one loaded after its first use."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import json
from threadpoolctl import ThreadpoolController
from beleg.blas import one_blas_thread

def most_threads():
    return max((lib.num_threads for lib in ThreadpoolController().select(user_api="blas").lib_controllers), default=1)

with one_blas_thread():  # the first use builds the controller: numpy's BLAS only
    pass
import scipy.linalg  # noqa: E402,F401  (scipy ships its own OpenBLAS)
outside = most_threads()
with one_blas_thread():
    inside = most_threads()
print(json.dumps([outside, inside]))
"""


def test_a_blas_loaded_after_the_first_use_is_limited_too() -> None:
    # Since detector v12 the injection encoder runs early in a process (it reads every field
    # value); a controller built then left a BLAS imported later at two threads (a test of the
    # embedder's one-thread path failed in CI after the detector had run in an earlier test).
    pytest.importorskip("scipy.linalg")
    src = Path(__file__).resolve().parents[1] / "src"
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"})
    outside, inside = json.loads(out.stdout.strip().splitlines()[-1])
    if outside < 2:
        pytest.skip("BLAS runs one thread here anyway: nothing to tell apart")
    assert inside == 1
