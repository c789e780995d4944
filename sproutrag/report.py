"""The summary of one index run: counts, failures, timings (the `runs` row, CLI, artifact)."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sproutrag.corpus import Failure


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

    def add_time(self, stage: str, seconds: float) -> None:
        self.timings[stage] = self.timings.get(stage, 0.0) + seconds

    def finish(self) -> RunSummary:
        self.finished_at = datetime.now(UTC)
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

    def to_row(self) -> dict[str, Any]:
        """The row of the `runs` table."""
        return {
            "run_id": self.run_id, "corpus": self.corpus,
            "started_at": self.started_at, "finished_at": self.finished_at or datetime.now(UTC),
            "n_new": self.n_new, "n_changed": self.n_changed, "n_deleted": self.n_deleted,
            "n_unchanged": self.n_unchanged, "n_failed": self.n_failed,
            "n_chunks": self.n_chunks, "n_nodes": self.n_nodes, "n_chars": self.n_chars,
            "failures_json": json.dumps([f.__dict__ for f in self.failures]),
            "timings_json": json.dumps({k: round(v, 3) for k, v in self.timings.items()}),
            "seconds": round(self.seconds, 3), "index_fingerprint": self.fingerprint,
        }

    def to_text(self) -> str:
        secs = max(self.seconds, 1e-9)
        lines = [
            f"run {self.run_id}: {self.corpus}",
            f"  documents: {self.n_new} new, {self.n_changed} changed, {self.n_deleted} deleted,"
            f" {self.n_unchanged} unchanged, {self.n_failed} failed",
            f"  indexed: {self.n_chunks} chunks, {self.n_nodes} nodes, {self.n_chars} chars"
            f" in {secs:.1f} s ({self.n_chars / secs:,.0f} chars/s)",
            "  stages: " + ", ".join(f"{k} {v:.1f} s" for k, v in self.timings.items()),
        ]
        lines += [f"  FAILED {f.doc_id}: {f.reason}" for f in self.failures]
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
            rows += [f"| `{f.doc_id}` | {f.reason.replace('|', '/')} |" for f in self.failures]
        return f"# Index run {self.run_id}\n\nCorpus: `{self.corpus}`\n\n" + "\n".join(rows)
