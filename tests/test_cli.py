"""The command line contract of ../shared/DESIGN.md, at the parser level (no model)."""

from __future__ import annotations

import os

import pytest
from sproutrag.flows.cli import build_parser, main

from tests.helpers import CLI


def test_query_doc_ids_take_several_values_or_repeat():
    parse = build_parser().parse_args
    one = parse(["query", "--db", "DB", "free text question", "--k", "3", "--doc-id", "a", "b"])
    assert one.question == "free text question" and one.k == 3 and one.doc_id == ["a", "b"]
    assert parse(["query", "--db", "DB", "q", "--doc-id", "a", "--doc-id", "b"]).doc_id == [
        "a", "b"]
    batch = parse(["query", "--db", "DB", "--queries", "Q.jsonl", "--out", "R.jsonl",
                   "--k", "5", "--mode", "flat", "--beam", "5"])
    assert (batch.queries, batch.out, batch.mode, batch.beam, batch.question) == (
        "Q.jsonl", "R.jsonl", "flat", 5, None)


def test_index_train_evaluate_forms_parse():
    parse = build_parser().parse_args
    assert parse(["index", "CORPUS", "--db", "DB", "--config", "F"]).config == "F"
    assert not parse(["index", "CORPUS", "--db", "DB"]).allow_mass_delete
    assert parse(["index", "CORPUS", "--db", "DB", "--allow-mass-delete"]).allow_mass_delete
    train = parse(["train", "--docs", "D.jsonl", "--queries", "Q.jsonl", "--out", "M"])
    assert not train.finetune_encoder and not train.learn_margin
    assert parse(["evaluate", "--docs", "D", "--queries", "Q", "--k", "1", "3", "5"]).k == [1, 3, 5]


def test_bad_arguments_exit_2_before_anything_loads(tmp_path, capsys, monkeypatch):
    """Refused at parse time or by the preflight: no Prefect, no model (exit 2)."""
    import subprocess
    import sys

    import pytest
    from sproutrag.flows.cli import main

    from tests.helpers import ROOT

    for argv in (["query", "--db", "DB", "q", "--k", "0"],
                 ["query", "--db", "DB", "q", "--threshold", "nan"],
                 ["query", "--db", "DB", "q", "--lexical-weight", "-1"],
                 ["query", "--db", "DB", "q", "--margin", "inf"],
                 ["query", "--db", "DB", "q", "--beam", "0"],
                 ["evaluate", "--docs", "D", "--queries", "Q", "--k", "1", "0"]):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2, argv
    assert "argument --k: must be an integer between 1 and" in capsys.readouterr().err
    assert main(["query", "--db", "DB"]) == 2  # neither a question nor --queries
    assert main(["query", "--db", "DB", "--queries", str(tmp_path / "none.jsonl"),
                 "--out", "o"]) == 2
    monkeypatch.setenv("SPROUTRAG_ENCODING__MODEL", str(tmp_path / "no-model"))
    assert main(["query", "--db", "DB", "q"]) == 2
    err = capsys.readouterr().err
    assert "encoding.model: no model folder" in err and "Traceback" not in err
    monkeypatch.delenv("SPROUTRAG_ENCODING__MODEL")
    bad = tmp_path / "bad.yaml"
    bad.write_text("pipeline: {batch_docs: 0}\n", encoding="utf-8")
    assert main(["index", str(tmp_path), "--db", str(tmp_path / "db"), "--config",
                 str(bad)]) == 2
    assert "pipeline.batch_docs" in capsys.readouterr().err
    assert not (tmp_path / "db").exists()
    # In a fresh process: refused without importing torch, Prefect or LanceDB.
    probe = (
        "import sys\nfrom sproutrag.flows.cli import main\n"
        f"assert main(['index', {str(tmp_path)!r}, '--db', 'x', '--config', {str(bad)!r}]) == 2\n"
        "print(sorted(m for m in ('torch', 'prefect', 'lancedb', 'transformers') "
        "if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stderr


def test_missing_corpus_fails_fast_without_creating_the_database(tmp_path, capsys):
    from sproutrag.flows.cli import main

    db = tmp_path / "db"
    assert main(["index", str(tmp_path / "nowhere"), "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert "corpus" in err and "does not exist" in err and "Traceback" not in err
    assert len(err.splitlines()) == 1 and not db.exists()


def test_check_exit_codes(tmp_path):
    """`sproutrag check`: 0 healthy, 1 problems, 2 no database (and no folder made)."""
    import subprocess

    from tests.helpers import ROOT, toy_document, toy_store

    def check(db):
        return subprocess.run([*CLI, "check", "--db", str(db)],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)

    db = tmp_path / "db"
    toy_store(db).write([toy_document("a", "one two")], "fp")
    ok = check(db)
    assert ok.returncode == 0 and ok.stdout.strip().endswith("healthy")
    next((db / "documents.lance" / "data").glob("*.lance")).unlink()
    bad = check(db)
    assert bad.returncode == 1 and bad.stdout.startswith("table 'documents' cannot be read")
    assert "1 problem found" in bad.stdout.splitlines()[-1]
    missing = check(tmp_path / "none")
    assert missing.returncode == 2 and "no SproutRAG database" in missing.stderr
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize("device, why", [
    ("tpu", "not a device: use cpu, cuda, cuda:N"),
    ("cuda:99", "encoding.device cuda:99"),
    ("mps", "encoding.device mps"),
])
def test_a_device_this_machine_cannot_use_is_refused_before_anything_is_written(
        tmp_path, capsys, monkeypatch, device, why):
    import torch

    if device == "cuda:99" and torch.cuda.device_count() > 99:
        pytest.skip("a machine with 100 CUDA devices")
    mps = getattr(torch.backends, "mps", None)
    if device == "mps" and mps is not None and mps.is_available():
        pytest.skip("this machine has an Apple GPU")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "a.txt").write_text("One sentence. Two.", encoding="utf-8")
    monkeypatch.setenv("SPROUTRAG_ENCODING__DEVICE", device)
    db = tmp_path / "db"
    assert main(["index", str(tmp_path / "c"), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert why in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not db.exists()
    from sproutrag.flows.parameters import flow_settings  # a deployment run: refused the same way
    from sproutrag.schemas.settings import SettingsError

    if device != "tpu":
        with pytest.raises(SettingsError, match=why):
            flow_settings(None, None)


@pytest.mark.parametrize("raised", [
    TypeError("unsupported operand"), KeyError("x"), ValueError("a bug's value error"),
])
def test_an_error_that_is_not_the_projects_shows_its_traceback(
        tmp_path, capsys, monkeypatch, raised):
    """Only the project's own errors (bad input, a refused run) are one line: anything
    else is a bug, printed with its traceback (exit 1)."""
    import sproutrag.flows.cli

    from sproutrag.errors import DatabaseNotFoundError

    def boom(args):
        raise raised

    monkeypatch.setattr(sproutrag.flows.cli, "cmd_check", boom)
    assert main(["check", "--db", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "internal error (a bug" in err
    assert type(raised).__name__ in err

    def ours(args):
        raise DatabaseNotFoundError("no SproutRAG database here")

    monkeypatch.setattr(sproutrag.flows.cli, "cmd_check", ours)
    assert main(["check", "--db", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "sproutrag check: error: no SproutRAG database here"


def test_version_names_the_changelog_s_newest_entry(capsys):
    from pathlib import Path

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    printed = capsys.readouterr().out.strip()
    changelog = (Path(__file__).parents[1] / "CHANGELOG.md").read_text(encoding="utf-8")
    newest = next(line[3:].strip() for line in changelog.splitlines()
                  if line.startswith("## "))
    assert printed == f"sproutrag {newest}"


def test_the_tokenizer_uses_every_core_unless_the_user_says_otherwise(monkeypatch):
    """The CLI turns the tokenizer's threads on (1.4-2x encoding on a GPU machine), and an
    environment that set the variable keeps its value."""
    from sproutrag.flows import cli

    env = {k: v for k, v in os.environ.items() if k != "TOKENIZERS_PARALLELISM"}
    monkeypatch.setattr(os, "environ", env)  # this process's own stays as it was
    cli._offline_env()
    assert env["TOKENIZERS_PARALLELISM"] == "true"
    env["TOKENIZERS_PARALLELISM"] = "false"
    cli._offline_env()
    assert env["TOKENIZERS_PARALLELISM"] == "false"


def test_printed_evidence_escapes_control_characters():
    """A document's escape sequences drove the terminal when a hit was printed."""
    from sproutrag.flows.query_command import _printable

    assert _printable("\x1b[31mRed\x1b[0m\tand \x7f") == "\\x1b[31mRed\\x1b[0m\tand \\x7f"
    assert _printable("Plain text, é and 中文.") == "Plain text, é and 中文."


def test_batch_refuses_the_flags_of_a_question(tmp_path, capsys):
    """--doc-id and --where restrict a QUESTION; a --queries batch's lines carry their own
    "doc_ids" and "where", so the command's flags are refused (exit 2), not ignored."""
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"qid": "1", "query": "payment terms"}\n', encoding="utf-8")
    batch = ["query", "--db", str(tmp_path / "db"), "--queries", str(queries),
             "--out", str(tmp_path / "r.jsonl")]
    assert main([*batch, "--doc-id", "a.txt"]) == 2
    assert 'give each line its own "doc_ids"' in capsys.readouterr().err
    assert main([*batch, "--where", "title = 'x'"]) == 2
    assert 'give each line its own "where"' in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()
