"""The command line contract of ../shared/DESIGN.md, at the parser level (no model)."""

from __future__ import annotations

from sproutrag.cli import build_parser


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
