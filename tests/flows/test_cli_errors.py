"""`sproutrag query` and `evaluate` refuse bad arguments early and clearly: numbers past
the search's limits, an --out that would overwrite the input or cannot be written, a
database that does not exist (and no folder created for it); an emptied database is
reported as empty in every mode."""

from __future__ import annotations

import os

import numpy as np
import pytest
from sproutrag.flows.cli import main

from sproutrag.documents import SourceDocument, content_hash
from sproutrag.encoder.loading import PACKAGED_MODEL_ID
from sproutrag.storage.store import IndexedDocument, Store
from sproutrag.trees.tree import build_tree


@pytest.mark.parametrize("question, why", [
    ("", "query is empty"), ("   ", "query is empty"),
    (os.fsdecode(b"bad \xff utf8"), "not valid text: a lone surrogate U+DCFF"),
])
def test_a_question_that_is_not_text_exits_2_before_any_work(tmp_path, capsys, question, why):
    db = tmp_path / "db"
    code = main(["query", "--db", str(db), question])
    err = capsys.readouterr().err
    assert code == 2 and why in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1 and not db.exists()


@pytest.mark.parametrize("argv, flag, limit", [
    (["query", "q", "--k", "5000000000", "--mode", "flat"], "--k", "between 1 and 2147483647"),
    (["query", "q", "--beam", "99999999999"], "--beam", "between 1 and 2147483647"),
    (["query", "q", "--threshold", "1.5"], "--threshold", "between -1 and 1"),
    (["query", "q", "--lexical-weight", "1e300"], "--lexical-weight", "between 0 and 1e+06"),
    (["query", "q", "--margin", "3"], "--margin", "between 0 and 2"),
    (["query", "q", "--margin", "nan"], "--margin", "between 0 and 2"),
    (["evaluate", "--docs", "D", "--queries", "Q", "--k", "1", "5000000000"], "--k",
     "between 1 and 2147483647"),
])
def test_numbers_past_the_limits_exit_2_naming_flag_and_limit(tmp_path, capsys, argv, flag,
                                                             limit):
    db = tmp_path / "db"
    if argv[0] == "query":
        argv = [*argv, "--db", str(db)]
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2, err
    assert f"argument {flag}: must be" in err and limit in err and "Traceback" not in err
    assert not db.exists()


def test_a_database_that_does_not_exist_is_not_created(tmp_path, capsys):
    db = tmp_path / "nowhere" / "db"
    assert main(["query", "--db", str(db), "a question"]) == 1
    err = capsys.readouterr().err
    assert f"database {db} does not exist; run `sproutrag index CORPUS --db {db}` first" in err
    assert "Traceback" not in err and len(err.splitlines()) == 1
    assert not (tmp_path / "nowhere").exists()


def test_out_that_would_overwrite_the_input_or_cannot_be_written_exits_2(tmp_path, capsys):
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"qid": "a", "query": "notice period"}\n', encoding="utf-8")
    (tmp_path / "link.jsonl").symlink_to(queries)
    os.link(queries, tmp_path / "hard.jsonl")
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("x", encoding="utf-8")
    db = tmp_path / "db"  # a database (old code overwrote the input); never read
    _emptied_database(db)
    for out, why in ((queries, "would overwrite the queries"),
                     (tmp_path / "sub" / ".." / "q.jsonl", "would overwrite the queries"),
                     (tmp_path / "link.jsonl", "would overwrite the queries"),
                     (tmp_path / "hard.jsonl", "would overwrite the queries"),
                     (tmp_path / "folder", "is a folder"),
                     (tmp_path / "file" / "r.jsonl", "is not a folder"),
                     ("s3://bucket/r.jsonl", "writes a local file")):
        code = main(["query", "--db", str(db), "--queries", str(queries), "--out", str(out)])
        err = capsys.readouterr().err
        assert code == 2, (out, err)
        assert f"--out {out}" in err and why in err and "Traceback" not in err
    assert queries.read_text(encoding="utf-8") == '{"qid": "a", "query": "notice period"}\n'


def _emptied_database(path, *, delete: bool = True) -> str:
    """A database of the packaged encoder that held one document "a", now deleted (with
    DELETE)."""
    store = Store(str(path), encoder_id=PACKAGED_MODEL_ID, dim=384)
    text = "one two three"
    rng = np.random.default_rng(0)
    tree = build_tree(rng.normal(size=(3, 384)).astype(np.float32), np.arange(2),
                      np.arange(1, 3), np.ones(2, np.float32))
    doc = SourceDocument("a", "mem://a", text, content_hash(text))
    store.write([IndexedDocument(doc, np.array([[0, 3], [4, 7], [8, 13]]), tree)], "fp")
    if delete:
        store.delete(["a"])
    return str(path)


@pytest.mark.model
def test_a_question_s_failure_is_said_without_an_internal_qid(tmp_path, capsys):
    db = _emptied_database(tmp_path / "db", delete=False)
    assert main(["query", "--db", db, "termination notice", "--doc-id", "nope"]) == 3
    err = capsys.readouterr().err
    assert ("sproutrag query: the question failed: none of the doc_ids ['nope'] is in the "
            "database") in err and "query q " not in err


@pytest.mark.model
def test_an_emptied_database_is_reported_empty_in_every_mode(tmp_path, capsys):
    db = _emptied_database(tmp_path / "db")
    message = (f"no evidence found: the database {db} holds no documents (none indexed, or "
               f"all deleted): run `sproutrag index CORPUS --db {db}` first")
    for mode in ("tree", "flat"):
        assert main(["query", "--db", db, "--mode", mode, "termination notice"]) == 0
        out = capsys.readouterr().out
        assert message in out and "--threshold" not in out, (mode, out)
    # A context says it too, under its totals (it printed "(0 spans, ...)" alone).
    assert main(["query", "--db", db, "termination notice", "--budget-chars", "100"]) == 0
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "(0 spans, 0 of 100 characters)", message]
    # A batch says it too, and its --out folder is created.
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"qid": "a", "query": "notice period"}\n', encoding="utf-8")
    out = tmp_path / "new" / "folder" / "r.jsonl"
    assert main(["query", "--db", db, "--queries", str(queries), "--out", str(out)]) == 0
    assert message in capsys.readouterr().err
    assert out.read_text(encoding="utf-8") == '{"qid": "a", "results": []}\n'


def test_out_without_queries_is_refused_not_ignored(tmp_path, capsys):
    db, out = tmp_path / "db", tmp_path / "r.jsonl"
    _emptied_database(db)
    code = main(["query", "--db", str(db), "a question", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and f"--out {out}: --out writes the results of --queries" in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()


def test_an_empty_queries_file_is_said_to_hold_no_queries(tmp_path, capsys):
    db, queries, out = tmp_path / "db", tmp_path / "q.jsonl", tmp_path / "r.jsonl"
    _emptied_database(db)
    queries.write_text("\n  \n", encoding="utf-8")
    code = main(["query", "--db", str(db), "--queries", str(queries), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0 and out.read_text(encoding="utf-8") == ""  # an empty batch is no error
    assert f"--queries {queries} holds no queries (an empty file, or blank lines" in err, err


def test_a_question_after_doc_id_is_explained_not_only_missed(tmp_path, capsys):
    """--doc-id takes every word after it, so a question written after it is one more id:
    the error says so and how to write it."""
    db = tmp_path / "db"
    _emptied_database(db)
    code = main(["query", "--db", str(db), "--doc-id", "a.md", "What is due?"])
    err = capsys.readouterr().err
    assert code == 2 and "give either a QUESTION or --queries FILE" in err, err
    assert "--doc-id took every word after it (a.md What is due?): put the QUESTION " in err
    assert "end its list with --" in err


def test_a_db_that_is_a_file_exits_1_saying_it_is_not_a_folder(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    assert main(["query", "--db", str(afile), "a question"]) == 1
    err = capsys.readouterr().err
    assert f"database {afile} is not a folder" in err and "File exists" not in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_queries_file_that_is_a_folder_is_named_a_folder(tmp_path, capsys):
    assert main(["query", "--db", str(tmp_path / "db"), "--queries", str(tmp_path),
                 "--out", str(tmp_path / "r.jsonl")]) == 2
    assert f"--queries {tmp_path}: a folder, not a file" in capsys.readouterr().err


@pytest.mark.parametrize("flags", [["--selection", "window"], ["--cutoff", "2"],
                                   ["--cutoff", "none", "--selection", "tree"]])
def test_context_flags_without_a_budget_are_refused_not_ignored(tmp_path, capsys, flags):
    assert main(["query", "--db", str(tmp_path / "db"), "a question", *flags]) == 2
    err = capsys.readouterr().err
    verb = "shape" if len(flags) == 4 else "shapes"  # --cutoff and --selection shape
    assert f"{verb} a budgeted context: add --budget-chars N" in err, err


@pytest.mark.parametrize("question", [["a question", "--budget-chars", "100"],
                                      ["--queries", "q.jsonl", "--out", "r.jsonl"]])
@pytest.mark.parametrize("selection", ["window", "tree"])
def test_a_selection_mode_flat_cannot_take_is_refused_before_any_work(
        tmp_path, capsys, monkeypatch, question, selection):
    """It failed each question as it ran (exit 3; every line of a batch) after the model
    loaded, where the README promises exit 2."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "q.jsonl").write_text('{"qid": "1", "query": "x"}\n', encoding="utf-8")
    assert main(["query", "--db", str(tmp_path / "db"), *question, "--mode", "flat",
                 "--selection", selection]) == 2
    assert f"--selection {selection} needs --mode tree or leaves" in capsys.readouterr().err


@pytest.mark.parametrize("flags", [[], ["--budget-chars", "200"]])
def test_a_tokenizer_without_a_token_budget_is_refused_not_ignored(tmp_path, capsys, flags):
    assert main(["query", "--db", str(tmp_path / "db"), "a question", "--tokenizer", "gpt2",
                 *flags]) == 2
    assert "--tokenizer counts --budget-tokens: add --budget-tokens N" in (
        capsys.readouterr().err)


def test_a_json_corpus_file_is_refused_not_indexed_as_one_document(tmp_path, capsys):
    """JSON Lines named .json were indexed as one text document, exit 0."""
    corpus = tmp_path / "data.json"
    corpus.write_text('{"doc_id": "a", "text": "One."}\n', encoding="utf-8")
    assert main(["index", str(corpus), "--db", str(tmp_path / "db")]) == 1
    err = capsys.readouterr().err
    assert "is a .json file: SproutRAG reads JSON Lines from a .jsonl file" in err, err
    assert not (tmp_path / "db").exists()


@pytest.mark.parametrize("argv, said", [
    (["query", "--db", "", "a question"], "--db is empty"),
    (["index", "", "--db", "x"], "CORPUS is empty"),
    (["check", "--db", "AFILE"], "no SproutRAG database at 'AFILE' (a file, not a folder)"),
])
def test_an_empty_path_or_a_file_for_a_database_is_named_so(tmp_path, capsys, argv, said):
    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    argv = [str(afile) if a == "AFILE" else a for a in argv]
    assert main(argv) == 2
    assert said.replace("AFILE", str(afile)) in capsys.readouterr().err


@pytest.mark.parametrize("work_dir, said", [
    ("AFILE/work", "pipeline.work_dir AFILE/work: AFILE is a file, not a folder"),
    ("/proc/work", "pipeline.work_dir /proc/work: cannot create or write the folder"),
])
def test_a_work_dir_that_cannot_be_written_is_refused_before_the_run(tmp_path, capsys,
                                                                     monkeypatch, work_dir,
                                                                     said):
    """It was found after the corpus was listed, in the system's bare words, and left a new
    database behind."""
    afile, corpus, db = tmp_path / "afile", tmp_path / "corpus", tmp_path / "db"
    afile.write_text("x", encoding="utf-8")
    corpus.mkdir()
    (corpus / "a.txt").write_text("One sentence here. And another.", encoding="utf-8")
    monkeypatch.setenv("SPROUTRAG_PIPELINE__WORK_DIR", work_dir.replace("AFILE", str(afile)))
    assert main(["index", str(corpus), "--db", str(db)]) == 2
    assert said.replace("AFILE", str(afile)) in capsys.readouterr().err
    assert not db.exists()
