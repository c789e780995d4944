from __future__ import annotations

import io
import json
import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
from sproutrag.schemas import tables

from sproutrag.documents import content_hash
from sproutrag.errors import CorpusUnreadableError
from sproutrag.ingest.corpus import CorpusNotFoundError, DocLimits, discover, list_corpus
from sproutrag.ingest.listing import bounded_lines
from sproutrag.ingest.plan import plan_changes
from tests.helpers import ROOT, WITHOUT_DAC, lock_folder, unblock_fifo_after, write_files


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


def test_hidden_files_and_folders_are_left_out_unless_asked_for(tmp_path):
    """A name starting with a dot, a file's or a folder's anywhere below the corpus
    folder, is hidden: a git checkout's or a notebook's copies are not documents."""
    write_files(tmp_path, {"a.md": "Alpha.", "sub/b.txt": "Beta.", ".draft.md": "Draft.",
                           ".git/notes.txt": "Git.", "sub/.ipynb_checkpoints/b.txt": "Copy.",
                           "sub/.cache/c.md": "Cached."})
    assert [d.doc_id for d in discover(str(tmp_path)).docs] == ["a.md", "sub/b.txt"]
    assert [d.doc_id for d in discover(str(tmp_path), include_hidden=True).docs] == [
        ".draft.md", ".git/notes.txt", "a.md", "sub/.cache/c.md",
        "sub/.ipynb_checkpoints/b.txt", "sub/b.txt"]
    assert [d.doc_id for d in discover(str(tmp_path / ".draft.md")).docs] == [".draft.md"]


def test_a_folder_of_hidden_files_only_says_they_are_left_out(tmp_path):
    write_files(tmp_path, {".notes/a.md": "Alpha."})
    with pytest.raises(CorpusNotFoundError, match="holds no .txt or .md files .*hidden files "
                       "and folders.*pipeline.include_hidden"):
        discover(str(tmp_path))
    assert [d.doc_id for d in discover(str(tmp_path), include_hidden=True).docs] == [
        ".notes/a.md"]


def test_bad_files_are_reported_not_fatal(tmp_path):
    (tmp_path / "good.txt").write_text("Fine.", encoding="utf-8")
    (tmp_path / "empty.txt").write_text("  \n", encoding="utf-8")
    (tmp_path / "binary.txt").write_bytes(b"\x00\x01\x02abc")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (tmp_path / "invisible.txt").write_text("\ufeff\u200b \u200d\n\u00a0", encoding="utf-8")
    (tmp_path / "joined.txt").write_text("Zero\u200bwidth.", encoding="utf-8")
    (tmp_path / "wide.txt").write_bytes("Saved as UTF-16 by an editor.".encode("utf-16"))
    (tmp_path / "wide-le.md").write_bytes("No byte order mark here.".encode("utf-16-le"))
    docs, failures = _pair(discover(str(tmp_path)))
    assert [d.doc_id for d in docs] == ["good.txt", "joined.txt"]
    reasons = {f.doc_id: f.reason for f in failures}
    assert "empty" in reasons["empty.txt"]
    assert "empty document" in reasons["invisible.txt"]  # zero-width characters show nothing
    assert "UTF-16 text, not UTF-8: convert the file (e.g. `iconv -f UTF-16 -t UTF-8`)" in (
        reasons["wide.txt"])  # it said "binary file"
    assert "`iconv -f UTF-16LE -t UTF-8`" in reasons["wide-le.md"]
    assert "binary file" in reasons["binary.txt"]
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
        "[1, 2]",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")
    docs, failures = _pair(discover(str(path)))
    assert [d.doc_id for d in docs] == ["7"]  # d1 is there twice: neither copy is taken
    assert len(failures) == 4
    assert any(f"{path}:7: not a JSON object" in f.reason and "(a list)" in f.reason
               for f in failures)
    [dup] = [f for f in failures if f.doc_id == "d1"]
    assert dup.doc_id_known and "duplicate doc_id: 2 entries" in dup.reason
    assert f"{path}:1" in dup.reason and f"{path}:4" in dup.reason
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
    unknown = [f for f in failures if not f.doc_id_known]
    assert [f.doc_id for f in unknown] == ["line 7", "line 8", "line 9"]
    # the run's record names no document for them: "line 7" could be a real doc_id
    assert [f.to_dict()["doc_id"] for f in unknown] == [None, None, None]
    assert unknown[0].line == unknown[0].reason and unknown[0].reason.startswith(f"{path}:7: ")
    assert failures[0].to_dict() == {"doc_id": "nul\x00", "reason": failures[0].reason}
    assert failures[0].line == f"'nul\\x00': {failures[0].reason}"
    assert [f.shown for f in failures][:2] == ["'nul\\x00'", "'tab\\there'"]
    assert known["  "] and [f.shown for f in failures if f.doc_id == "  "] == ["'  '"]


@pytest.mark.parametrize(("name", "doc_id", "why"), [
    (b"bad\nname.txt", "bad\nname.txt", "U+000A"),  # a control character
    (b"caf\xe9.txt", "caf\\xe9.txt", "file name is not valid UTF-8: rename it"),
])
def test_a_file_name_that_is_no_doc_id_fails_alone(tmp_path, name, doc_id, why):
    (tmp_path / "good.txt").write_text("Fine.", encoding="utf-8")
    with open(os.fsencode(tmp_path) + b"/" + name, "wb") as fh:
        fh.write(b"Also fine text.\n")
    docs, failures = _pair(discover(str(tmp_path)))
    assert [d.doc_id for d in docs] == ["good.txt"]
    [failure] = failures
    assert failure.doc_id == doc_id and failure.doc_id_known
    assert why in failure.reason


def test_a_jsonl_doc_id_with_a_lone_surrogate_fails_alone(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"doc_id": "ok", "text": "Fine."}\n'
                    '{"doc_id": "bad\\ud800", "text": "Bad id."}\n', encoding="utf-8")
    docs, failures = _pair(discover(str(path)))
    assert [d.doc_id for d in docs] == ["ok"]
    [failure] = failures
    assert failure.doc_id == "bad\\ud800" and "U+D800" in failure.reason


def test_jsonl_lines_that_fail_say_what_they_got_and_what_to_do(tmp_path):
    """A lone surrogate in a text (was a raw codec error), a Latin-1 byte (was "not a JSON
    line"), a doc_id or text of another type (said "string" only, or not what it got)."""
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"doc_id": "ok", "text": "Fine."}\n'
                     b'{"doc_id": "s", "text": "x \\ud800 y"}\n'
                     b'{"doc_id": "l", "text": "caf\xe9"}\n'
                     b'{"doc_id": 3.5, "text": "x"}\n'
                     b'{"doc_id": "t", "text": 5}\n'
                     b'{"doc_id": "n", "text": "x", "score": NaN, "rank": 1}\n'
                     b'{"doc_id": "m", "text": "x", "nested": {"a": [1, -Infinity]}}\n'
                     b'{"doc_id": "e", "text": "  "}\n')
    docs, failures = _pair(discover(str(path)))
    assert [d.doc_id for d in docs] == ["ok"]
    why = {f.doc_id: f.reason for f in failures}
    assert "text holds a lone surrogate" in why["s"] and "fix the export" in why["s"]
    assert "not UTF-8 (byte 0xe9 at 28): write the file as UTF-8" in why["line 3"]
    assert "doc_id must be a string or an integer, got 3.5" in why["line 4"]
    assert "text must be a string, got int" in why["t"]
    # Python reads NaN; stored, it made a metadata_json no strict JSON parser reads
    assert "metadata field 'score' holds NaN or Infinity" in why["n"] and "null" in why["n"]
    assert "metadata field 'nested' holds NaN or Infinity (also inside it)" in why["m"]
    # the line's document is named once ("FAILED e: c.jsonl:8: e: empty document" before)
    assert why["e"] == f"{path}:8: empty document (no text to index)"


def test_a_utf16_jsonl_file_is_refused_whole(tmp_path):
    """Its first line was indexed (json.loads detects UTF-16 from the byte order mark),
    the others failed as 'not UTF-8' with advice to convert from Latin-1."""
    path = tmp_path / "wide.jsonl"
    lines = [f'{{"doc_id": "d{i}", "text": "Document {i}."}}' for i in range(3)]
    for encoding, named in (("utf-16", "UTF-16"), ("utf-16-le", "UTF-16LE"),
                            ("utf-16-be", "UTF-16BE"), ("utf-32", "UTF-32")):
        path.write_bytes("\r\n".join(lines).encode(encoding))
        with pytest.raises(CorpusUnreadableError, match=f"is {named} text, not UTF-8 JSON "
                           f"Lines: nothing was indexed; convert it .`iconv -f {named} -t "
                           "UTF-8`."):
            discover(str(path))
    path.write_bytes(b"\xef\xbb\xbf\n")  # a UTF-8 byte order mark alone: an empty file
    found = discover(str(path))
    assert (found.docs, found.failures) == ([], [])


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


def test_a_broken_symlink_fails_saying_so(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Alpha text.", encoding="utf-8")
    (corpus / "gone.txt").symlink_to("removed.txt")
    found = discover(str(corpus))
    assert [d.doc_id for d in found.docs] == ["a.txt"]
    [failure] = found.failures
    assert failure.doc_id == "gone.txt"
    assert "a broken symlink: its target 'removed.txt' does not exist" in failure.reason


def test_a_symlink_loop_fails_saying_so(tmp_path):
    """Two links to each other were "a broken symlink" whose target "does not exist"."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Alpha text.", encoding="utf-8")
    (corpus / "loop1.txt").symlink_to("loop2.txt")
    (corpus / "loop2.txt").symlink_to("loop1.txt")
    found = discover(str(corpus))
    assert [d.doc_id for d in found.docs] == ["a.txt"]
    reasons = {f.doc_id: f.reason for f in found.failures}
    assert reasons["loop1.txt"].startswith("a symlink loop: its target 'loop2.txt' leads back")
    assert set(reasons) == {"loop1.txt", "loop2.txt"}


# -- what discovery could not see is reported (issue 23) ---------------------------------

_PROBE = """
import json, sys
from sproutrag.ingest.corpus import discover
try:
    found = discover(sys.argv[1])
except Exception as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
else:
    print(json.dumps({"docs": [d.doc_id for d in found.docs],
                      "failures": [[f.doc_id, f.reason, f.doc_id_known, f.folder]
                                   for f in found.failures]}))
"""


def _discover_without_dac(corpus: Path) -> dict:
    proc = subprocess.run([*WITHOUT_DAC, sys.executable, "-c", _PROBE, str(corpus)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_an_unlistable_subfolder_is_a_failure_standing_for_its_documents(tmp_path):
    corpus = write_files(tmp_path / "corpus", {"open/a.txt": "Alpha.", "open/b.txt": "Beta.",
                                               "locked/c.txt": "Gamma.", "locked/d/e.md": "E."})
    lock_folder(corpus / "locked")
    found = _discover_without_dac(corpus)
    assert found["docs"] == ["open/a.txt", "open/b.txt"]
    [[doc_id, reason, known, folder]] = found["failures"]
    assert (doc_id, known, folder) == ("locked/", False, "locked/")
    assert "cannot list the folder locked/" in reason and "Permission denied" in reason
    lock_folder(corpus)  # the corpus folder itself: the run stops, nothing is changed
    assert found["docs"] and "CorpusUnreadableError" in _discover_without_dac(corpus)["error"]


def test_a_file_that_cannot_be_read_fails_saying_what_to_do(tmp_path):
    """It was the system's errno line with the full path ("[Errno 13] Permission
    denied: '/tmp/...'")."""
    corpus = write_files(tmp_path / "corpus", {"a.txt": "Alpha.", "b.txt": "Beta."})
    lock_folder(corpus / "b.txt")
    found = _discover_without_dac(corpus)
    assert found["docs"] == ["a.txt"]
    [[doc_id, reason, known, _]] = found["failures"]
    assert (doc_id, known) == ("b.txt", True)
    assert reason == ("cannot read the file (Permission denied): check its permissions; its "
                      "indexed version, if any, stays")


def test_a_jsonl_corpus_that_cannot_be_read_names_the_corpus_not_the_database(tmp_path):
    """It said "permission denied: choose a --db (or pipeline.work_dir) you can write to"."""
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text('{"doc_id": "a", "text": "Alpha."}\n', encoding="utf-8")
    lock_folder(corpus)
    error = _discover_without_dac(corpus)["error"]
    assert error.startswith(f"CorpusUnreadableError: cannot read the corpus file '{corpus}': "
                            "Permission denied; nothing was changed: check its permissions")


def test_named_pipes_and_sockets_are_never_opened(tmp_path):
    corpus = write_files(tmp_path / "corpus", {"a.txt": "Alpha."})
    os.mkfifo(corpus / "x.txt")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(corpus / "s.md"))
        (corpus / "link.txt").symlink_to("x.txt")  # inside the folder: followed, to a pipe
        with unblock_fifo_after(corpus / "x.txt", 10) as fired:
            found = discover(str(corpus))
    assert not fired.is_set(), "discovery blocked on the named pipe"
    assert [d.doc_id for d in found.docs] == ["a.txt"]
    reasons = {f.doc_id: f.reason for f in found.failures}
    assert set(reasons) == {"link.txt", "s.md", "x.txt"}
    assert all(f.doc_id_known for f in found.failures)  # an indexed version stays
    assert "x.txt: a named pipe, not a regular file" in reasons["x.txt"]
    assert "named pipe" in reasons["link.txt"] and "a socket" in reasons["s.md"]
    with unblock_fifo_after(corpus / "x.txt", 10) as fired:
        [single] = discover(str(corpus / "x.txt")).failures
    assert not fired.is_set() and "named pipe" in single.reason


def test_a_repointed_symlink_is_read_again_not_taken_as_unchanged(tmp_path):
    corpus = write_files(tmp_path / "corpus", {"x1.txt": "Release one text about giraffes.",
                                               "x3.txt": "Release three text about walrus."})
    old = 1_704_067_200_000_000_000  # 2024-01-01: both targets have one size and time
    for name in ("x1.txt", "x3.txt"):
        os.utime(corpus / name, ns=(old, old))
    (corpus / "cur.txt").symlink_to("x1.txt")
    first = list_corpus(str(corpus)).items
    stored = pa.Table.from_pylist(
        [{"doc_id": i.doc_id, "content_hash": "h", "index_fingerprint": "fp", "tree_id": "t",
          "n_chunks": 1, "source_size": i.size, "modified_at": i.modified_at} for i in first],
        schema=tables.state_schema())
    time.sleep(0.05)  # past the clock tick that stamped the first link
    (corpus / "cur.txt").unlink()
    (corpus / "cur.txt").symlink_to("x3.txt")  # ln -sfn x3.txt cur.txt
    plan = plan_changes(list_corpus(str(corpus)).table, stored, "fp")
    assert [i.doc_id for i in plan.to_read] == ["cur.txt"] and plan.n_unchanged == 2


def test_folder_symlinks_are_reported_not_followed(tmp_path):
    corpus = write_files(tmp_path / "corpus", {"sub/a.txt": "Alpha."})
    write_files(tmp_path / "out", {"b.txt": "Beta."})
    (corpus / "alias").symlink_to("sub")
    (corpus / "ext.txt").symlink_to("../out")
    (corpus / "sub" / "loop").symlink_to("..")
    found = discover(str(corpus))
    assert [d.doc_id for d in found.docs] == ["sub/a.txt"] and found.failures == []
    assert [s.doc_id for s in found.skipped] == ["alias/", "ext.txt/", "sub/loop/"]
    assert "symlink to the folder" in found.skipped[1].reason
    assert str(tmp_path / "out") in found.skipped[1].reason


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_huge_files_are_refused_before_reading(tmp_path):
    corpus = write_files(tmp_path / "corpus", {"a.txt": "Alpha."})
    with open(corpus / "huge.txt", "wb") as fh:  # 2 GB, sparse: takes no disk
        fh.truncate(2 << 30)
    before, t0 = _peak_rss_mib(), time.perf_counter()
    found = discover(str(corpus))  # default limit: 100 MB
    [failure] = found.failures
    assert failure.doc_id == "huge.txt"
    assert "2,147,483,648 bytes, over the limit of 100,000,000" in failure.reason
    assert "pipeline.max_doc_bytes" in failure.reason
    # under a higher limit it is binary (NUL bytes): found from its first 8 KiB
    found = discover(str(corpus), limits=DocLimits(max_bytes=4 << 30))
    assert "binary file" in found.failures[0].reason
    assert _peak_rss_mib() - before < 200 and time.perf_counter() - t0 < 10


def test_size_limits_of_files_and_jsonl_lines(tmp_path):
    corpus = write_files(tmp_path / "corpus", {"a.txt": "Alpha.", "big.txt": "x" * 2000,
                                               "wide.md": "\u00e9" * 450})
    found = discover(str(corpus), limits=DocLimits(max_bytes=1000, max_chars=400))
    assert [d.doc_id for d in found.docs] == ["a.txt"]
    reasons = {f.doc_id: f.reason for f in found.failures}
    assert "2,000 bytes, over the limit of 1,000 bytes" in reasons["big.txt"]
    assert "450 characters, over the limit of 400 (pipeline.max_doc_chars)" in reasons["wide.md"]
    jl = tmp_path / "c.jsonl"
    rows = [{"doc_id": "d1", "text": "One."}, {"doc_id": "d2", "text": "y" * 5000},
            {"doc_id": "d3", "text": "z" * 800}, {"doc_id": "d4", "text": "Four."}]
    jl.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    found = discover(str(jl), limits=DocLimits(max_bytes=1000, max_chars=500))
    assert [d.doc_id for d in found.docs] == ["d1", "d4"]
    [long_line, d3] = found.failures
    assert (long_line.doc_id, long_line.doc_id_known) == ("line 2", False)
    assert "longer than 1,000 bytes (pipeline.max_doc_bytes)" in long_line.reason
    assert d3.doc_id_known and "800 characters" in d3.reason


@pytest.mark.parametrize("block", [1, 3, 7, 64])
def test_bounded_lines_match_splitlines_and_drop_long_ones(block):
    data = b"ab\n\nlonger line here\nx\nlast-no-newline-but-long"
    found = list(bounded_lines(io.BytesIO(data), 5, block=block))
    parts = data.split(b"\n")
    starts = [sum(len(p) + 1 for p in parts[:k]) for k in range(len(parts))]
    assert found == [(start, x if len(x) <= 5 else None) for start, x in zip(starts, parts)]
    assert list(bounded_lines(io.BytesIO(b"a\n"), 5, block=block)) == [(0, b"a")]


class _CountingReader(io.BytesIO):
    """BytesIO that counts the bytes its reads return."""

    def __init__(self, data: bytes):
        super().__init__(data)
        self.bytes_read = 0

    def read(self, size: int | None = -1) -> bytes:
        out = super().read(size)
        self.bytes_read += len(out)
        return out


@pytest.mark.parametrize("first_read", [1, 4, 1 << 16])
def test_jsonl_lines_are_read_again_without_reading_the_rest_of_the_file(monkeypatch,
                                                                        first_read):
    from sproutrag.ingest import jsonl

    monkeypatch.setattr(jsonl, "FIRST_READ", first_read)
    lines = [b"short", b"", b"x" * 40, b"y" * 9, b"the last line, no newline"]
    starts = [sum(len(p) + 1 for p in lines[:k]) for k in range(len(lines))]
    fh = _CountingReader(b"\n".join(lines))
    got = [jsonl._read_line(fh, start, 30) for start in starts]
    assert got == [x if len(x) <= 30 else None for x in lines]
    # each read stops within a block of FIRST_READ bytes past its line's end
    assert fh.bytes_read <= sum(2 * (min(len(x), 30) + 1) + first_read for x in lines)
    # a short line before a long rest of the file: the rest is not read (reading up to
    # the 100 MB limit for every line made a JSONL corpus of N lines O(N^2) bytes)
    big = _CountingReader(b"a\n" + b"b" * 10_000_000)
    assert jsonl._read_line(big, 0, 100_000_000) == b"a"
    assert big.bytes_read <= 2 * 2 + first_read
