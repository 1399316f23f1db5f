"""Whether the process that left a lock or a claim still runs.

A pid alone is not enough: after a restart (a container's, a machine's) pids are handed out
again, and a lock or claim naming a reused pid looked held for as long as that unrelated
process lived. So owners record their process's start time too, and an owner counts as alive
only while a process with that pid *and* that start time runs.
"""

from __future__ import annotations

import os
from pathlib import Path


def process_started(pid: int) -> str | None:
    """The start time of process ``pid`` (Linux ``/proc``, in clock ticks since boot), or None
    where it cannot be read (no such process, another system)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[19]  # field 22 (starttime), counted after the command name


def pid_alive(pid: int, started: str | None = None) -> bool:
    """Whether process ``pid`` runs (one owned by another user counts), and, given the start time
    its owner recorded, whether it is still that process."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists, owned by someone else; anything else: assume alive
        pass
    return started is None or process_started(pid) in (None, started)
