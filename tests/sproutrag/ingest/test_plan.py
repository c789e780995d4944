"""The diff of a corpus listing with the stored documents: what is read, deleted, kept or
held back, and what the listing's fast path decides without reading."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest
from sproutrag.schemas import tables

from sproutrag.documents import Failure, SourceDocument, content_hash
from sproutrag.ingest.plan import MassDeleteError, check_deletions, plan_changes
from sproutrag.ingest.sources import Listed

T0 = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
T1 = datetime(2026, 1, 3, tzinfo=UTC)


def _stored(ids=("a", "b", "c", "d"), text: str = "text", fp: str = "fp", size: int = 4,
            when: datetime | None = T0, etag: str | None = None) -> pa.Table:
    return pa.Table.from_pylist(
        [{"doc_id": d, "content_hash": content_hash(text), "index_fingerprint": fp,
          "tree_id": f"t-{d}", "n_chunks": 1, "source_size": size, "modified_at": when,
          "source_etag": etag, "source": d} for d in ids], schema=tables.state_schema())


def _file(doc_id: str, size: int = 4, when: datetime | None = T0) -> Listed:
    return Listed(doc_id, size, when)


def _line(doc_id: str, text: str = "text") -> Listed:
    return Listed(doc_id, len(text), content_hash=content_hash(text), offset=0, line=1)


def _read(doc_id: str, text: str = "text", size: int = 4, when=T0) -> SourceDocument:
    return SourceDocument(doc_id, doc_id, text, content_hash(text), size, when)


def test_files_the_listing_says_are_unchanged_are_not_read():
    plan = plan_changes([_file("a"), _file("b", size=9), _file("c", when=T1), _file("e")],
                        _stored(), "fp")
    assert [i.doc_id for i in plan.to_read] == ["b", "c", "e"]
    assert plan.n_unchanged == 1 and plan.deleted == ["d"]
    assert set(plan.stored) == {"b", "c"}  # what the verdict compares with
    assert plan.verdict(_read("e")) == "new"
    assert plan.verdict(_read("b", "new text", size=9)) == "changed"
    touched = _read("c", when=T1)  # same text, newer time: unchanged, its time updated
    assert plan.verdict(touched) == "unchanged" and plan.restat(touched)


def test_without_the_fast_path_or_with_full_every_file_is_read():
    slow = plan_changes([_file("a"), _file("b")], _stored(), "fp", fast_path=False)
    assert [i.doc_id for i in slow.to_read] == ["a", "b"] and slow.n_unchanged == 0
    assert slow.verdict(_read("a")) == "unchanged" and not slow.restat(_read("a"))
    full = plan_changes([_line("a"), _file("b")], _stored(), "fp", full=True)
    assert [i.doc_id for i in full.to_read] == ["a", "b"]
    assert full.verdict(_read("a")) == "changed"


def test_a_file_without_a_stored_time_or_an_object_by_etag():
    untimed = plan_changes([_file("a", when=None)], _stored(("a",), when=None), "fp")
    assert [i.doc_id for i in untimed.to_read] == ["a"]
    objects = _stored(("a", "b"), when=None, etag="e1")
    listed = [Listed("a", 4, None, "e1"), Listed("b", 4, None, "e2")]
    plan = plan_changes(listed, objects, "fp")
    assert [i.doc_id for i in plan.to_read] == ["b"] and plan.n_unchanged == 1


def test_jsonl_lines_compare_their_hashes_and_a_new_fingerprint_re_reads():
    plan = plan_changes([_line("a"), _line("b", "other")], _stored(), "fp")
    assert [i.doc_id for i in plan.to_read] == ["b"]
    assert plan.verdict(_read("b", "other")) == "changed"
    refit = plan_changes([_line("a"), _file("b")], _stored(), "fp2")
    assert [i.doc_id for i in refit.to_read] == ["a", "b"]
    assert refit.verdict(_read("b")) == "changed"


def test_damaged_documents_are_read_and_re_indexed():
    plan = plan_changes([_file("a"), _line("b")], _stored(), "fp", damaged={"b": "why"})
    assert [i.doc_id for i in plan.to_read] == ["b"]
    assert plan.verdict(_read("b")) == "changed"


def test_only_documents_really_gone_are_deleted():
    plan = plan_changes([_file("a"), _file("e")], _stored(), "fp",
                        failures=[Failure("c", "not valid UTF-8")])
    assert (plan.deleted, plan.kept, plan.held) == (["b", "d"], ["c"], [])


def test_a_failure_without_doc_id_holds_every_deletion_back():
    line = Failure("line 3", "corpus.jsonl:3: not a JSON line", doc_id_known=False)
    plan = plan_changes([_line("a")], _stored(), "fp", failures=[line])
    assert (plan.deleted, plan.held) == ([], ["b", "c", "d"])
    assert "line 3" in plan.held_reason and "3 indexed documents" in plan.held_reason


def test_the_held_back_reason_names_five_failed_lines_and_counts_the_rest():
    lines = [Failure(f"line {n}", f"corpus.jsonl:{n}: not a JSON line", doc_id_known=False)
             for n in range(1, 8)]
    plan = plan_changes([_line("a")], _stored(), "fp", failures=lines)
    assert "7 corpus entries failed" in plan.held_reason
    assert "line 5 and 2 more)" in plan.held_reason and "line 6" not in plan.held_reason


def test_mass_deletions_refuse_unless_allowed():
    half = plan_changes([_line("a"), _line("b")], _stored(), "fp")
    check_deletions(half, 4, corpus="c", max_share=0.5, allow=False)  # 2 of 4: at most half
    most = plan_changes([_line("a")], _stored(), "fp")
    with pytest.raises(MassDeleteError, match="3 of 4 .*max_delete_share = 50%"):
        check_deletions(most, 4, corpus="c", max_share=0.5, allow=False)
    check_deletions(most, 4, corpus="c", max_share=0.5, allow=True)
    check_deletions(most, 4, corpus="c", max_share=1.0, allow=False)
    empty = plan_changes([], _stored(), "fp")
    with pytest.raises(MassDeleteError, match="holds no documents"):
        check_deletions(empty, 4, corpus="c", max_share=1.0, allow=False)
    check_deletions(plan_changes([], _stored(()), "fp"), 0, corpus="c", max_share=0.5,
                    allow=False)


def test_many_deletions_under_the_refused_share_are_said():
    """676 of 5,000 documents (an emptied subfolder: an unmounted share) went without a
    word: 10% or more, and 10 documents or more, is said in the run's message."""
    from sproutrag.ingest.plan import Plan, deletion_note

    def plan(n):
        return Plan(fingerprint="fp", deleted=[f"d{i}" for i in range(n)])

    note = deletion_note(plan(676), 5000, 0.5)
    assert note.startswith("676 of 5000 indexed documents (14%) are missing from the corpus "
                           "and were deleted (a run refuses more than "
                           "pipeline.max_delete_share = 50%)")
    assert deletion_note(plan(499), 5000, 0.5) is None  # under 10%
    assert deletion_note(plan(9), 20, 0.5) is None  # fewer than 10 documents


def test_an_unlistable_folder_holds_back_only_the_deletions_below_it():
    stored = _stored(("a", "locked/b", "locked/c", "d"))
    folder = Failure("locked/", "cannot list the folder locked/", doc_id_known=False,
                     folder="locked/")
    plan = plan_changes([_file("a")], stored, "fp", failures=[folder])
    assert (plan.deleted, plan.held) == (["d"], ["locked/b", "locked/c"])
    assert "2 indexed documents below folders that could not be listed (locked/)" in (
        plan.held_reason)
    line = Failure("line 3", "corpus.jsonl:3: not a JSON line", doc_id_known=False)
    both = plan_changes([_file("a")], stored, "fp", failures=[folder, line])
    assert (both.deleted, both.held) == ([], ["d", "locked/b", "locked/c"])


def test_a_jsonl_line_that_moved_is_read_so_its_source_is_updated():
    stored = _stored(("a", "b"))
    stored = stored.set_column(stored.schema.get_field_index("source"), "source",
                               pa.array(["c.jsonl:2", "c.jsonl:3"]))
    plan = plan_changes([_line("a"), _line("b")], stored, "fp",
                        sources=pa.array(["c.jsonl:1", "c.jsonl:3"]))
    assert [i.doc_id for i in plan.to_read] == ["a"] and plan.n_unchanged == 1
    moved = SourceDocument("a", "c.jsonl:1", "text", content_hash("text"), 4)
    assert plan.verdict(moved) == "unchanged" and plan.restat(moved)
