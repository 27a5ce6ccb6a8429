"""What a batch shows while it runs: a rich progress bar in a terminal, one line per instance otherwise."""

from __future__ import annotations

import sys
from typing import Any

from live_swe.session.store import RunStatus


class BatchProgress:
    """``mode``: "bar" (a terminal), "lines" (logs, CI), or "off"."""

    def __init__(self, total: int, *, skipped: int, enabled: bool, stream=None):
        self.stream = stream or sys.stderr
        self.total = total
        self.finished = skipped
        self.counts = {"done": 0, "submitted": 0, "failed": 0, "skipped": skipped}
        self.cost = 0.0
        is_tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.mode = "off" if not enabled else ("bar" if is_tty else "lines")
        self._progress = None
        self._task = None

    def __enter__(self) -> BatchProgress:
        if self.mode == "bar":
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                TextColumn("[bold]bench[/]"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[stats]}"),
                TimeElapsedColumn(),
                console=Console(file=self.stream),
                transient=False,
            )
            self._progress.start()
            self._task = self._progress.add_task("bench", total=self.total, completed=self.finished,
                                                 stats=self._stats())
        return self

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def _stats(self) -> str:
        c = self.counts
        return (f"done {c['done']}  submitted {c['submitted']}  failed {c['failed']}  "
                f"skipped {c['skipped']}  ${self.cost:.2f}")

    def finished_one(self, record: dict[str, Any]) -> None:
        status = record.get("status", "")
        if record.get("finished"):
            self.counts["done"] += 1
            if status == RunStatus.SUBMITTED:
                self.counts["submitted"] += 1
        else:
            self.counts["failed"] += 1
        self.cost += float(record.get("cost") or 0.0)
        self.finished += 1
        if self.mode == "bar" and self._progress is not None:
            self._progress.update(self._task, completed=self.finished, stats=self._stats())
        elif self.mode == "lines":
            reason = f" ({record['reason'][:200]})" if record.get("reason") else ""
            print(f"[{self.finished}/{self.total}] {record['instance_id']}: {status} after "
                  f"{record.get('steps', 0)} steps, ${float(record.get('cost') or 0):.4f}{reason}",
                  file=self.stream, flush=True)

    def note(self, text: str) -> None:
        if self.mode == "off":
            return
        if self._progress is not None:
            self._progress.console.print(text, markup=False, highlight=False)
        else:
            print(text, file=self.stream, flush=True)
