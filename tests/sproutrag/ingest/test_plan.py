"""The diff of a corpus with the database: what is deleted, kept or held back."""

from __future__ import annotations

import pytest

from sproutrag.documents import Failure, SourceDocument, content_hash
from sproutrag.ingest.plan import MassDeleteError, check_deletions, plan_changes


def _doc(doc_id: str, text: str = "text") -> SourceDocument:
    return SourceDocument(doc_id, doc_id, text, content_hash(text))


INDEXED = {d: (content_hash("text"), "fp") for d in ("a", "b", "c", "d")}


def test_only_documents_really_gone_are_deleted():
    plan = plan_changes([_doc("a"), _doc("b", "new"), _doc("e")], INDEXED, "fp",
                        failures=[Failure("c", "not valid UTF-8")])
    assert ([d.doc_id for d in plan.new], [d.doc_id for d in plan.changed]) == (["e"], ["b"])
    assert (plan.unchanged, plan.deleted, plan.kept, plan.held) == (["a"], ["d"], ["c"], [])


def test_a_failure_without_doc_id_holds_every_deletion_back():
    line = Failure("line 3", "corpus.jsonl:3: not a JSON line", doc_id_known=False)
    plan = plan_changes([_doc("a")], INDEXED, "fp", failures=[line])
    assert (plan.deleted, plan.held) == ([], ["b", "c", "d"])
    assert "line 3" in plan.held_reason and "3 indexed documents" in plan.held_reason


def test_mass_deletions_refuse_unless_allowed():
    half = plan_changes([_doc("a"), _doc("b")], INDEXED, "fp")
    check_deletions(half, 4, corpus="c", max_share=0.5, allow=False)  # 2 of 4: at most half
    most = plan_changes([_doc("a")], INDEXED, "fp")
    with pytest.raises(MassDeleteError, match="3 of 4 .*max_delete_share = 50%"):
        check_deletions(most, 4, corpus="c", max_share=0.5, allow=False)
    check_deletions(most, 4, corpus="c", max_share=0.5, allow=True)
    check_deletions(most, 4, corpus="c", max_share=1.0, allow=False)
    empty = plan_changes([], INDEXED, "fp")
    with pytest.raises(MassDeleteError, match="holds no documents"):
        check_deletions(empty, 4, corpus="c", max_share=1.0, allow=False)
    check_deletions(plan_changes([], {}, "fp"), 0, corpus="c", max_share=0.5, allow=False)


def test_an_unlistable_folder_holds_back_only_the_deletions_below_it():
    indexed = {d: (content_hash("text"), "fp") for d in ("a", "locked/b", "locked/c", "d")}
    folder = Failure("locked/", "cannot list the folder locked/", doc_id_known=False,
                     folder="locked/")
    plan = plan_changes([_doc("a")], indexed, "fp", failures=[folder])
    assert (plan.deleted, plan.held) == (["d"], ["locked/b", "locked/c"])
    assert "2 indexed documents below folders that could not be listed (locked/)" in (
        plan.held_reason)
    line = Failure("line 3", "corpus.jsonl:3: not a JSON line", doc_id_known=False)
    both = plan_changes([_doc("a")], indexed, "fp", failures=[folder, line])
    assert (both.deleted, both.held) == ([], ["d", "locked/b", "locked/c"])
