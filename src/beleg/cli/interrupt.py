"""Ctrl-C and SIGTERM during a long command (ingest, reindex): finish the batch, or stop at once.

Python's own Ctrl-C raises KeyboardInterrupt in the main thread, and only between bytecodes:
while the main thread is inside a model call (the first batch, embedded there) nothing
happens until the call returns, and when the exception comes, the batch the embedding
thread is working on is waited for and then thrown away. SIGTERM (``docker stop``,
systemd) kills the process outright, without a word. Here both set a stop event instead:
the ingest takes no new file, commits the batch being embedded and ends with its
"interrupted ... N committed" line. A second signal ends the process at once
(``os._exit``): the index is crash-safe (a write transaction cut short is rolled back on the
next open; ``tests/test_crash_safety.py`` kills ingests with SIGKILL), and claims and a
reindex's ``LOCK`` left behind name a process that is gone, so the next run takes them over.

Signals are read by a thread of their own through :func:`signal.set_wakeup_fd`: the C-level
handler writes the signal's number to a pipe the moment it arrives, so the message comes
at once even while the main thread is in a model call that Python cannot interrupt.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import TracebackType
from typing import TextIO

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: The first signal a :class:`StopOnSignals` received in this process (None: none), for the exit status.
received: int | None = None


def exit_status() -> int:
    """128 + the signal that stopped the command, as a shell reports it (130 for Ctrl-C); read
    once, so a later command in the same process does not report it again."""
    global received
    status, received = 128 + (received or signal.SIGINT), None
    return status


def _name(signum: int) -> str:
    return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name


class StopOnSignals:
    """While active, the first SIGINT or SIGTERM sets :attr:`stop` and says so on ``stream``;
    the second ends the process with status 128 + its number.

    Only the main thread can install signal handlers; entered from another thread (a program
    calling ``beleg.cli.main.main`` there) it installs none, and signals keep their handlers.
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.stop = threading.Event()
        self._installed = False

    def __enter__(self) -> threading.Event:
        global received
        received = None
        if threading.current_thread() is not threading.main_thread():
            return self.stop
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)  # set_wakeup_fd requires it: a signal handler must never block
        self._previous_fd = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        # The Python-level handler only keeps Python from raising KeyboardInterrupt; the watcher acts.
        self._previous = {s: signal.signal(s, lambda signum, frame: None) for s in _SIGNALS}
        self._watcher = threading.Thread(target=self._watch, name="beleg-signals", daemon=True)
        self._watcher.start()
        self._installed = True
        return self.stop

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        global received
        if exc_type is None:  # the work finished although a signal came (during its last commit)
            received = None
        if not self._installed:
            return
        signal.set_wakeup_fd(self._previous_fd)
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        os.write(self._write, b"\0")  # no signal is numbered 0: it tells the watcher to end
        self._watcher.join()
        os.close(self._read)
        os.close(self._write)
        self._installed = False

    def _watch(self) -> None:
        global received
        count = 0
        while True:
            data = os.read(self._read, 1)
            if not data or data[0] == 0:
                return
            signum = data[0]
            if signum not in _SIGNALS:
                continue
            count += 1
            if count == 1:
                received = signum
                self.stop.set()
                self._say(f"beleg: {_name(signum)}: stopping; the batch being embedded is committed first and "
                          f"nothing new is started ({_name(signum)} again stops at once, keeping what is committed)")
            else:
                self._say(f"beleg: {_name(signum)} again: stopped at once; what was committed is kept, "
                          "run the same command again to resume")
                os._exit(128 + signum)

    def _say(self, line: str) -> None:
        try:
            print(line, file=self.stream, flush=True)
        except (OSError, ValueError):  # stderr closed: the stop must still happen
            pass
