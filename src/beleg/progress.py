"""Progress of long work (ingest, reindex, eval) on stderr: a bar on a terminal, lines in logs.

A progress bar redrawn in place is useless in a CI log or a ``2> ingest.log`` file: it is
either hidden (tqdm disables itself off a terminal) or a wall of carriage returns. So the
``auto`` mode draws a bar on a terminal and otherwise writes one plain line every few
seconds with what a person watching a log wants: items done of the total, chunks,
embeddings per second and the time remaining.

    ingest: 120/500 files (24%), 3400 chunks, 85.2 embeddings/s, ETA 1m12s

Modes: ``auto`` (bar on a TTY, lines otherwise), ``bar``, ``lines``, ``none``. ``True``,
``False`` and ``None`` are accepted as the older spelling (bar-or-nothing, none, auto).
The line interval is 5 s; ``BELEG_PROGRESS_INTERVAL`` (seconds) changes it.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal, TextIO, TypeVar

from beleg.errors import ConfigError

Mode = Literal["auto", "bar", "lines", "none"]
MODES: tuple[str, ...] = ("auto", "bar", "lines", "none")
DEFAULT_INTERVAL_S = 5.0
T = TypeVar("T")

#: What callers may pass as ``progress``: a mode, or the older bool/None.
ProgressArg = str | bool | None


def resolve_mode(progress: ProgressArg, stream: TextIO | None = None) -> str:
    """``bar``, ``lines`` or ``none`` for a ``progress`` argument and the stream it goes to."""
    if progress is None or progress is True:
        progress = "auto" if progress is None else "bar"
    elif progress is False:
        progress = "none"
    if progress not in MODES:
        raise ConfigError(f"progress mode {progress!r} is not one of {', '.join(MODES)}")
    if progress != "auto":
        return str(progress)
    stream = stream if stream is not None else sys.stderr
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream
        tty = False
    return "bar" if tty else "lines"


def interval_from_env() -> float:
    value = os.environ.get("BELEG_PROGRESS_INTERVAL")
    if value is None or value.strip() == "":
        return DEFAULT_INTERVAL_S
    try:
        seconds = float(value)
    except ValueError:
        raise ConfigError(f"BELEG_PROGRESS_INTERVAL={value!r} is not a number of seconds; "
                          f"unset it or give e.g. 5") from None
    return max(seconds, 0.0)


def duration(seconds: float) -> str:
    """``45s``, ``3m07s``, ``2h05m``: short enough for a log line."""
    seconds = max(int(round(seconds)), 0)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class Progress:
    """Counts items done (files, documents, queries), chunks and embeddings; shows them.

    Thread-safe: the ingest pipeline counts files in its reader thread and embeddings in
    the committing one. ``clock`` and ``interval_s`` are injectable for tests.
    """

    def __init__(self, total: int, *, desc: str = "ingest", unit: str = "file", progress: ProgressArg = None,
                 stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic,
                 interval_s: float | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.mode = resolve_mode(progress, self.stream)
        self.total, self.desc, self.unit = total, desc, unit
        self.done = self.chunks = self.embedded = 0
        #: Items written to the index for good (None: this work does not commit; eval, say).
        self.committed: int | None = None
        self._clock = clock
        self._interval = interval_from_env() if interval_s is None else interval_s
        self._start = clock()
        self._last_line = self._start
        self._lines = 0
        self._lock = threading.Lock()
        self._bar: Any = None
        if self.mode == "bar":
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=desc, unit=unit, leave=False, dynamic_ncols=True, file=self.stream)

    def advance(self, n: int = 1) -> None:
        """``n`` more items finished (whatever their outcome)."""
        with self._lock:
            self.done += n
            if self._bar is not None:
                self._bar.update(n)
            self._maybe_line()

    def add_chunks(self, n: int) -> None:
        with self._lock:
            self.chunks += n

    def add_embedded(self, n: int) -> None:
        with self._lock:
            self.embedded += n
            if self._bar is not None:
                self._bar.set_postfix(chunks=self.chunks, embedded=self.embedded, refresh=False)
            self._maybe_line()

    def add_committed(self, n: int) -> None:
        with self._lock:
            self.committed = (self.committed or 0) + n

    def close(self, *, interrupted: bool = False) -> None:
        """End the bar; in line mode write a last line, unless the work was too short to
        have earned one (a quick ingest stays quiet in a log). Interrupted (Ctrl-C), say
        what was kept instead of "done", in any mode that shows progress."""
        with self._lock:
            if self._bar is not None:
                self._bar.close()
                self._bar = None
            if interrupted and self.mode != "none":
                self._write(self.interrupted_line())
            elif self.mode == "lines" and (self._lines or self._clock() - self._start >= self._interval):
                self._write(self.line(final=True))

    def interrupted_line(self) -> str:
        line = f"{self.desc}: interrupted after {duration(self._clock() - self._start)}, {self.done}/{self.total} {self.unit}s"
        if self.committed is not None:
            line += (f"; {self.committed} committed and kept, the rest not stored: run the same command again "
                     "to resume (committed files are not embedded again)")
        return line

    def line(self, *, final: bool = False) -> str:
        elapsed = max(self._clock() - self._start, 1e-9)
        share = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        parts = [f"{self.desc}: {self.done}/{self.total} {self.unit}s{share}"]
        if self.chunks or self.embedded:
            parts.append(f"{self.chunks} chunks, {self.embedded / elapsed:.1f} embeddings/s")
        if final:
            parts.append(f"done in {duration(elapsed)}")
        elif self.done:
            parts.append(f"ETA {duration(elapsed / self.done * (self.total - self.done))}")
        else:
            parts.append("ETA unknown")
        return ", ".join(parts)

    def _maybe_line(self) -> None:
        if self.mode != "lines":
            return
        now = self._clock()
        if now - self._last_line >= self._interval:
            self._last_line = now
            self._write(self.line())

    def _write(self, text: str) -> None:
        self._lines += 1
        try:
            print(text, file=self.stream, flush=True)
        except (OSError, ValueError):  # stderr closed: progress must never end the work
            pass

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self.close(interrupted=exc_type is not None and issubclass(exc_type, KeyboardInterrupt))


def track(items: Iterable[T], total: int, *, desc: str, unit: str, progress: ProgressArg = None) -> Iterator[T]:
    """Iterate ``items`` with a :class:`Progress` advanced once per item (eval's query loops)."""
    with Progress(total, desc=desc, unit=unit, progress=progress) as shown:
        for item in items:
            yield item
            shown.advance()
