"""Limit BLAS to one thread around a block of numpy work."""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager
from typing import Any

from threadpoolctl import ThreadpoolController

_controller: ThreadpoolController | None = None
_modules_seen = 0


def one_blas_thread() -> AbstractContextManager[Any]:
    """BLAS on one thread inside the ``with`` block.

    Used where a second BLAS thread only adds contention: memory-bound matrix-vector
    products (dense search: 15 ms on one thread vs 23 ms on two at 100k chunks) and code
    that already runs one worker per core (the fp32 embedder). The controller is kept: building
    one scans the loaded libraries (~ms), which would dominate a query. It is built again when
    modules were imported since, because an import can load another BLAS (scipy's, torch's)
    that a controller built before it would leave at its own thread count (the injection
    encoder runs early in a process since v12, before such imports).
    """
    global _controller, _modules_seen
    if _controller is None or len(sys.modules) != _modules_seen:
        _controller = ThreadpoolController()
        _modules_seen = len(sys.modules)
    return _controller.limit(limits=1, user_api="blas")
