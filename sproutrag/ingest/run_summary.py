"""The summary of one index run: counts, failures, timings (the `runs` row, CLI, artifact).

A run's row is written when it starts (status "running", no finished_at) and completed
at its end: "completed", "failed" (it stopped on an error, or more documents failed than
tolerated) or "interrupted" (SIGTERM / SIGINT). A row left "running" is a run that was
killed. The `RunOutcome` exceptions carry the row of a run that did all it could but did
not succeed, so callers (the CLI, a flow's final state) still get the counts.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sproutrag.documents import Failure
from sproutrag.errors import (  # noqa: F401 - also importable from here
    DocumentsFailedError,
    QueriesFailedError,
    RunInterruptedError,
    RunOutcome,
)


def too_many_failed(n_failed: int, n_total: int, max_share: float) -> bool:
    """More than `max_share` of `n_total` failed (with share 0: any failure)."""
    return n_failed > max_share * n_total


@dataclass
class RunSummary:
    corpus: str
    fingerprint: str
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    finished_at: datetime | None = None
    n_new: int = 0
    n_changed: int = 0
    n_deleted: int = 0
    n_unchanged: int = 0
    n_chunks: int = 0
    n_nodes: int = 0
    n_chars: int = 0
    failures: list[Failure] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    status: str = "running"
    message: str | None = None  # why it failed or stopped; notes (held-back deletions)
    flow_run_id: str | None = None  # the Prefect flow run, when there is one

    def add_time(self, stage: str, seconds: float) -> None:
        self.timings[stage] = self.timings.get(stage, 0.0) + seconds

    def note(self, text: str) -> None:
        self.message = f"{self.message}; {text}" if self.message else text

    def finish(
        self, status: str = "completed", message: str | None = None,
        *, max_failed_share: float = 0.0,
    ) -> RunSummary:
        """Set the final status; a completed run with more failed documents than
        `max_failed_share` of the corpus tolerates, or with a corpus folder it could not
        list, is "failed"."""
        self.finished_at = datetime.now(UTC)
        total = self.n_documents + self.n_failed
        unlisted = [f.shown for f in self.failures if f.folder is not None]
        if status == "completed" and unlisted:  # part of the corpus was not seen at all
            status = "failed"
            message = (f"{len(unlisted)} folders of the corpus could not be listed "
                       f"({', '.join(unlisted[:5])}): their documents were neither updated "
                       "nor deleted")
        elif status == "completed" and too_many_failed(self.n_failed, total, max_failed_share):
            status = "failed"
            message = (f"{self.n_failed} of {total} documents failed, more than "
                       f"pipeline.max_failed_share ({max_failed_share:.0%}) tolerates")
        self.status = status
        if message:
            self.note(message)
        return self

    @property
    def seconds(self) -> float:
        end = self.finished_at or datetime.now(UTC)
        return (end - self.started_at).total_seconds()

    @property
    def n_failed(self) -> int:
        return len(self.failures)

    @property
    def n_documents(self) -> int:
        return self.n_new + self.n_changed + self.n_unchanged

    def outcome(self) -> RunOutcome | None:
        """The exception that says why this finished run did not succeed, if it did not."""
        if self.status == "interrupted":
            return RunInterruptedError(
                f"run {self.run_id} {self.message}: the documents stored so far stay, "
                "the next run goes on", self.to_row())
        if self.status == "failed":
            others = ("the other documents were indexed" if self.n_new + self.n_changed
                      else "no other document was new or changed")
            first = (f"; {len(self.failures)} failed, the first: {_clip(self.failures[0].line)}"
                     if self.failures else "")
            return DocumentsFailedError(
                f"run {self.run_id}: {self.message}; {others}{first}", self.to_row())
        return None

    def to_row(self) -> dict[str, Any]:
        """The row of the `runs` table."""
        return {
            "run_id": self.run_id, "corpus": self.corpus,
            "started_at": self.started_at, "finished_at": self.finished_at,
            "n_new": self.n_new, "n_changed": self.n_changed, "n_deleted": self.n_deleted,
            "n_unchanged": self.n_unchanged, "n_failed": self.n_failed,
            "n_chunks": self.n_chunks, "n_nodes": self.n_nodes, "n_chars": self.n_chars,
            "failures_json": json.dumps([f.to_dict() for f in self.failures]),
            "timings_json": json.dumps({k: round(v, 3) for k, v in self.timings.items()}),
            "seconds": round(self.seconds, 3), "index_fingerprint": self.fingerprint,
            "status": self.status, "message": self.message, "flow_run_id": self.flow_run_id,
        }

    def to_text(self) -> str:
        secs = max(self.seconds, 1e-9)
        lines = [
            f"run {self.run_id} ({self.status}): {self.corpus}",
            f"  documents: {self.n_new} new, {self.n_changed} changed, {self.n_deleted} deleted,"
            f" {self.n_unchanged} unchanged, {self.n_failed} failed",
            f"  indexed: {self.n_chunks} chunks, {self.n_nodes} nodes, {self.n_chars} chars"
            f" in {secs:.1f} s ({self.n_chars / secs:,.0f} chars/s)",
            "  stages: " + ", ".join(f"{k} {v:.1f} s" for k, v in self.timings.items()),
        ]
        lines += [f"  note: {self.message}"] if self.message else []
        lines += [f"  FAILED {f.line}" for f in self.failures]
        return "\n".join(lines)

    def to_markdown(self) -> str:
        secs = max(self.seconds, 1e-9)
        rows = [
            "| new | changed | deleted | unchanged | failed | chunks | nodes | chars | seconds |",
            "|---|---|---|---|---|---|---|---|---|",
            f"| {self.n_new} | {self.n_changed} | {self.n_deleted} | {self.n_unchanged} "
            f"| {self.n_failed} | {self.n_chunks} | {self.n_nodes} | {self.n_chars} "
            f"| {secs:.1f} |",
            "",
            "| stage | seconds |",
            "|---|---|",
        ]
        rows += [f"| {k} | {v:.2f} |" for k, v in self.timings.items()]
        if self.failures:
            rows += ["", "| failed document | reason |", "|---|---|"]
            rows += [f"| {_cell(f)} | {f.reason.replace('|', '/')} |" for f in self.failures]
        head = f"# Index run {self.run_id}\n\nCorpus: `{self.corpus}`\n\nStatus: {self.status}"
        if self.message:
            head += f" ({self.message})"
        return head + "\n\n" + "\n".join(rows)


def _cell(failure: Failure) -> str:
    """The doc_id cell of the artifact's failures table (a line naming no document: none)."""
    return "(none)" if failure.reported_id is None else f"`{failure.shown}`"


def _clip(line: str, limit: int = 300) -> str:
    """LINE, or its first LIMIT characters and "..." (a state's message stays short)."""
    return line if len(line) <= limit else line[: limit - 3] + "..."
