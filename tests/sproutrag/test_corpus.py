from __future__ import annotations

import json

import pytest

from sproutrag.corpus import CorpusNotFoundError, content_hash, discover


def test_folder_is_discovered_recursively_with_relative_ids(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text("Alpha text.", encoding="utf-8")
    (tmp_path / "sub" / "b.md").write_text("# Beta\n\nBody.", encoding="utf-8")
    (tmp_path / "ignored.pdf").write_bytes(b"%PDF")
    docs, failures = _pair(discover(str(tmp_path)))
    assert [d.doc_id for d in docs] == ["a.txt", "sub/b.md"]
    assert failures == []
    assert docs[0].content_hash == content_hash("Alpha text.")
    assert docs[1].source.endswith("sub/b.md")


def test_bad_files_are_reported_not_fatal(tmp_path):
    (tmp_path / "good.txt").write_text("Fine.", encoding="utf-8")
    (tmp_path / "empty.txt").write_text("  \n", encoding="utf-8")
    (tmp_path / "binary.txt").write_bytes(b"\x00\x01\x02abc")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    docs, failures = _pair(discover(str(tmp_path)))
    assert [d.doc_id for d in docs] == ["good.txt"]
    reasons = {f.doc_id: f.reason for f in failures}
    assert "empty" in reasons["empty.txt"]
    assert "binary" in reasons["binary.txt"]
    assert "UTF-8" in reasons["latin1.txt"] and "offset 3" in reasons["latin1.txt"]


def test_jsonl_with_duplicates_and_bad_lines(tmp_path):
    path = tmp_path / "corpus.jsonl"
    lines = [
        json.dumps({"doc_id": "d1", "text": "One."}),
        "not json",
        json.dumps({"doc_id": "d2"}),
        json.dumps({"doc_id": "d1", "text": "Again."}),
        "",
        json.dumps({"doc_id": 7, "text": "Numeric id."}),
    ]
    path.write_text("\n".join(lines), encoding="utf-8")
    docs, failures = _pair(discover(str(path)))
    assert [d.doc_id for d in docs] == ["7", "d1"]
    assert docs[1].text == "One."
    assert len(failures) == 3
    assert any("duplicate doc_id" in f.reason for f in failures)
    assert any("missing field" in f.reason for f in failures)


def test_single_file_and_missing_corpus(tmp_path):
    f = tmp_path / "one.txt"
    f.write_text("Just one.", encoding="utf-8")
    docs, _ = _pair(discover(str(f)))
    assert [d.doc_id for d in docs] == ["one.txt"]
    with pytest.raises(CorpusNotFoundError, match="does not exist"):
        discover(str(tmp_path / "nope"))
    (tmp_path / "emptydir").mkdir()
    with pytest.raises(CorpusNotFoundError, match="no .txt or .md"):
        discover(str(tmp_path / "emptydir"))


def test_invalid_doc_ids_and_unattributed_lines(tmp_path):
    path = tmp_path / "c.jsonl"
    lines = [
        json.dumps({"doc_id": "ok", "text": "Fine."}),
        json.dumps({"doc_id": "nul\x00", "text": "Text."}),
        json.dumps({"doc_id": "tab\there", "text": "Text."}),
        json.dumps({"doc_id": "  ", "text": "Text."}),
        json.dumps({"doc_id": "lone", "text": "\ud800 broken"}),
        json.dumps({"doc_id": "notext"}),
        '{"doc_id": "cut", "text": "trunc',
        json.dumps(["not", "an", "object"]),
        json.dumps({"doc_id": None, "text": "Text."}),
    ]
    path.write_text("\n".join(lines), encoding="utf-8")
    docs, failures = _pair(discover(str(path)))
    assert [d.doc_id for d in docs] == ["ok"]
    known = {f.doc_id: f.reason for f in failures if f.doc_id_known}
    assert set(known) == {"nul\x00", "tab\there", "  ", "lone", "notext"}
    assert "U+0000" in known["nul\x00"] and "U+0009" in known["tab\there"]
    assert "empty" in known["  "] and "missing field 'text'" in known["notext"]
    unknown = [f.doc_id for f in failures if not f.doc_id_known]
    assert unknown == ["line 7", "line 8", "line 9"]
    assert [f.shown for f in failures][:2] == ["'nul\\x00'", "'tab\\there'"]


def test_file_names_with_control_characters_fail_alone(tmp_path):
    (tmp_path / "good.txt").write_text("Fine.", encoding="utf-8")
    (tmp_path / "bad\nname.txt").write_text("Also fine text.", encoding="utf-8")
    docs, failures = _pair(discover(str(tmp_path)))
    assert [d.doc_id for d in docs] == ["good.txt"]
    [failure] = failures
    assert failure.doc_id == "bad\nname.txt" and failure.doc_id_known
    assert "U+000A" in failure.reason


def _pair(found):
    """(documents, failures) of a `Discovery`."""
    return found.docs, found.failures


def test_symlinks_are_followed_only_inside_the_corpus_folder(tmp_path):
    corpus, outside = tmp_path / "corpus", tmp_path / "private"
    (corpus / "sub").mkdir(parents=True)
    outside.mkdir()
    (corpus / "a.txt").write_text("Alpha text.", encoding="utf-8")
    (outside / "passwd.txt").write_text("root:x:0:0:secret", encoding="utf-8")
    (corpus / "sub" / "same.txt").symlink_to(corpus / "a.txt")  # inside: followed
    (corpus / "leak.txt").symlink_to(outside / "passwd.txt")  # outside: skipped
    (corpus / "up.md").symlink_to("../private/passwd.txt")  # relative, outside
    found = discover(str(corpus))
    assert [d.doc_id for d in found.docs] == ["a.txt", "sub/same.txt"]
    assert found.failures == []
    assert [s.doc_id for s in found.skipped] == ["leak.txt", "up.md"]
    assert all("outside the corpus folder" in s.reason and str(outside) in s.reason
               for s in found.skipped)
    allowed = discover(str(corpus), allow_external_symlinks=True)
    assert [d.doc_id for d in allowed.docs] == ["a.txt", "leak.txt", "sub/same.txt", "up.md"]
    assert allowed.skipped == []
