"""Progress of long work (ingest, reindex, eval) on stderr: a bar on a terminal, lines in logs.

A progress bar redrawn in place is useless in a CI log or a ``2> ingest.log`` file: it is
either hidden (tqdm disables itself off a terminal) or a wall of carriage returns. So the
``auto`` mode draws a bar on a terminal and otherwise writes one plain line every few
seconds with what a person watching a log wants: items done of the total, chunks,
embeddings per second and the time remaining.

    ingest: 128/500 files (26%), 250 read, 3400 chunks, 85.2 embeddings/s, ETA 1m12s

An item is done when its outcome is final: for an ingest, when the batch holding its
document is committed (or it came out unchanged, skipped or failed). Files read and waiting
for their batch's commit are shown apart ("250 read"), since a crash or Ctrl-C loses them,
and the share and the time remaining count done items only. The rate appears once something
was embedded. A run that fails ends with a line that says so, never "done".

Modes: ``auto`` (bar on a TTY, lines otherwise), ``bar``, ``lines``, ``none``. ``True``,
``False`` and ``None`` are accepted as the older spelling (bar-or-nothing, none, auto). A
terminal that reports 0 columns (``script`` under a pipe) gets lines: tqdm draws nothing there.
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
    stream = stream if stream is not None else sys.stderr
    if progress == "auto":
        try:
            tty = stream.isatty()
        except (AttributeError, ValueError):  # a closed or odd stream
            tty = False
        progress = "bar" if tty else "lines"
    return "lines" if progress == "bar" and _reports_no_columns(stream) else str(progress)


def _reports_no_columns(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal that says it is 0 columns wide, where tqdm draws nothing
    (a pseudo-terminal nobody sized, as ``script -qc`` under a pipe makes)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns == 0
    except (AttributeError, ValueError, OSError):  # not a terminal, or no file descriptor
        return False


def plural(n: int, noun: str) -> str:
    """``1 chunk``, ``2 chunks``, ``3 queries``."""
    return f"{n} {noun_for(n, noun)}"


def noun_for(n: int, noun: str) -> str:
    """``noun`` as ``n`` of it are written: ``chunk``, ``chunks``, ``queries``."""
    if n == 1:
        return noun
    return f"{noun[:-1]}ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else f"{noun}s"


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
        #: Items handled (read), and of those the ones whose outcome waits for a commit.
        self.done = self.waiting = 0
        self.chunks = self.embedded = 0
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

    @property
    def finished(self) -> int:
        """Items whose outcome is final (handled, and committed where they wait for a commit)."""
        return self.done - self.waiting

    def advance(self, n: int = 1, *, waiting: int = 0) -> None:
        """``n`` more items handled (whatever their outcome), ``waiting`` of them until a commit
        (:meth:`add_committed`) makes their outcome final."""
        with self._lock:
            self.done += n
            self.waiting += waiting
            self._update_bar()
            self._maybe_line()

    def add_chunks(self, n: int) -> None:
        with self._lock:
            self.chunks += n

    def add_embedded(self, n: int) -> None:
        with self._lock:
            self.embedded += n
            self._update_bar()
            self._maybe_line()

    def add_committed(self, n: int, *, settled: int = 0) -> None:
        """``n`` items written to the index for good; the commit settles ``settled`` of the
        items waiting for it (those written, and any it gave up on)."""
        with self._lock:
            self.committed = (self.committed or 0) + n
            self.waiting -= settled
            self._update_bar()

    def _update_bar(self) -> None:
        if self._bar is None:
            return
        postfix = {"read": self.done} if self.waiting else {}
        if self.chunks or self.embedded:
            postfix.update(chunks=self.chunks, embedded=self.embedded)
        self._bar.set_postfix(postfix, refresh=False)  # shown by the update's redraw
        self._bar.update(self.finished - self._bar.n)

    def close(self, *, interrupted: bool = False, failed: bool = False) -> None:
        """End the bar; in line mode write a last line, unless the work was too short to
        have earned one (a quick ingest stays quiet in a log). Interrupted (Ctrl-C) or
        failed, say so and what was kept instead of "done", in any mode that shows progress."""
        with self._lock:
            if self._bar is not None:
                self._bar.close()
                self._bar = None
            if (interrupted or failed) and self.mode != "none":
                self._write(self.interrupted_line() if interrupted else self.failed_line())
            elif self.mode == "lines" and (self._lines or self._clock() - self._start >= self._interval):
                self._write(self.line(final=True))

    def interrupted_line(self) -> str:
        return self._stopped_line("interrupted")

    def failed_line(self) -> str:
        return self._stopped_line("stopped by an error")

    def _stopped_line(self, how: str) -> str:
        line = (f"{self.desc}: {how} after {duration(self._clock() - self._start)}, "
                f"{self.finished}/{self.total} {self._units()}")
        if self.committed is not None:
            line += (f"; {self.committed} committed and kept, the rest not stored: run the same command again "
                     "to resume (committed files are not embedded again)")
        return line

    def _units(self) -> str:
        return noun_for(self.total, self.unit)

    def line(self, *, final: bool = False) -> str:
        elapsed = max(self._clock() - self._start, 1e-9)
        finished = self.finished
        share = f" ({100 * finished / self.total:.0f}%)" if self.total else ""
        parts = [f"{self.desc}: {finished}/{self.total} {self._units()}{share}"]
        if self.waiting:  # read, not final until their batch is committed
            parts.append(f"{self.done} read")
        if self.chunks or self.embedded:
            parts.append(plural(self.chunks, "chunk"))
        if self.embedded:  # no rate before anything was embedded (the first batch loads the model)
            parts.append(f"{self.embedded / elapsed:.1f} embeddings/s")
        if final:
            parts.append(f"done in {duration(elapsed)}")
        elif finished:
            parts.append(f"ETA {duration(elapsed / finished * (self.total - finished))}")
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
        interrupted = exc_type is not None and issubclass(exc_type, KeyboardInterrupt)
        # Not GeneratorExit: a loop that stops early over track() is no failure.
        self.close(interrupted=interrupted, failed=exc_type is not None and issubclass(exc_type, Exception))


def track(items: Iterable[T], total: int, *, desc: str, unit: str, progress: ProgressArg = None) -> Iterator[T]:
    """Iterate ``items`` with a :class:`Progress` advanced once per item (eval's query loops)."""
    with Progress(total, desc=desc, unit=unit, progress=progress) as shown:
        for item in items:
            yield item
            shown.advance()
