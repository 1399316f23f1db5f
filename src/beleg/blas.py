"""Limit BLAS to one thread around a block of numpy work."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from threadpoolctl import ThreadpoolController

_controller: ThreadpoolController | None = None


def one_blas_thread() -> AbstractContextManager[Any]:
    """BLAS on one thread inside the ``with`` block.

    Used where a second BLAS thread only adds contention: memory-bound matrix-vector
    products (dense search: 15 ms on one thread vs 23 ms on two at 100k chunks) and code
    that already runs one worker per core (the fp32 embedder). The controller is created
    once: building one scans the loaded libraries (~ms), which would dominate a query.
    """
    global _controller
    if _controller is None:
        _controller = ThreadpoolController()
    return _controller.limit(limits=1, user_api="blas")
