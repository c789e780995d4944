"""The chunk task: every chunking setting reaches the splitter, so the units an index
stores are the ones its fingerprint names (no model)."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from sproutrag.schemas.settings import ChunkingSettings, Settings
from sproutrag.tasks.chunk import chunk_batch

from sproutrag.documents import SourceDocument, content_hash
from sproutrag.ingest.chunking import chunk_text

REPORT = (
    "CLINICAL SUMMARY\n\n1. Dosing\nSubjects received 10 mg b.i.d. p.o. for 12 wks. The "
    "primary endpoint was HbA1c.\n- Revenue was $4.3 bn. in FY2022, up 4% vs. 2021.\n"
    "- Costs incl. R&D rose 7%. 1. “Agreement” means this report. Sales grew. Costs fell."
)


@pytest.mark.parametrize("chunking", [
    {}, {"sentence_rules": 1}, {"lists": True}, {"respect_structure": False},
    {"join_max_chars": None, "sentences_per_chunk": 1}, {"within_paragraphs": True},
])
def test_the_task_chunks_with_every_setting(tmp_path, chunking):
    settings = Settings(chunking=chunking)
    doc = SourceDocument("report.txt", "test", REPORT, content_hash(REPORT))
    out = chunk_batch.fn([doc], settings, str(tmp_path))
    assert out.failures == []
    table = pq.read_table(out.chunks_path)
    got = list(zip(table.column("start").to_pylist(), table.column("end").to_pylist(),
                   strict=True))
    assert got == chunk_text(REPORT, **settings.chunking.model_dump())
    assert set(ChunkingSettings.model_fields) == set(settings.chunking.model_dump())


def test_the_sentence_rules_change_the_units():
    old = chunk_text(REPORT, **Settings(chunking={"sentence_rules": 1}).chunking.model_dump())
    new = chunk_text(REPORT, **Settings().chunking.model_dump())
    assert len(new) < len(old)
    sentence = "Subjects received 10 mg b.i.d. p.o. for 12 wks."
    assert any(sentence in REPORT[s:e] for s, e in new)
    assert not any(sentence in REPORT[s:e] for s, e in old)  # cut after "p.o." before
