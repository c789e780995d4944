from __future__ import annotations

import json

import pytest

from sproutrag.learn.devsets import join_documents, main

DOCS = [{"doc_id": f"d{i}", "text": f"Document {i} text. Second sentence {i}."} for i in range(5)]


def _query(qid, doc, start, end, text=None):
    return {"qid": qid, "query": text or f"question {qid}", "doc_ids": [doc],
            "gold": [{"doc_id": doc, "start": start, "end": end}]}


def test_join_shifts_gold_into_the_joined_text():
    queries = [_query("a", "d3", 0, 10), _query("b", "d1", 19, 34)]
    joined, moved = join_documents(DOCS, queries, group=2, seed=1)
    assert sorted(len(j["sources"]) for j in joined) == [1, 2, 2]
    texts = {j["doc_id"]: j["text"] for j in joined}
    source = {d["doc_id"]: d["text"] for d in DOCS}
    for q, orig in zip(moved, queries):
        (g,), (o,) = q["gold"], orig["gold"]
        assert texts[g["doc_id"]][g["start"]:g["end"]] == source[o["doc_id"]][o["start"]:o["end"]]
        assert q["doc_ids"] == [g["doc_id"]] and q["merged_qids"] == [orig["qid"]]
    assert join_documents(DOCS, queries, group=2, seed=1) == (joined, moved)  # seeded
    with pytest.raises(ValueError, match="group"):
        join_documents(DOCS, queries, group=0)


def test_same_question_in_one_bundle_becomes_one_query_with_all_evidence():
    queries = [_query("d0:h1", "d0", 0, 8, "hypothesis"), _query("d1:h1", "d1", 0, 8,
                                                                  "hypothesis")]
    joined, moved = join_documents(DOCS[:2], queries, group=2)
    assert len(joined) == 1 and len(moved) == 1
    (q,) = moved
    assert sorted(q["merged_qids"]) == ["d0:h1", "d1:h1"] and len(q["gold"]) == 2
    text = joined[0]["text"]
    assert [text[g["start"]:g["end"]] for g in q["gold"]] == ["Document", "Document"]
    assert q["gold"][0]["start"] != q["gold"][1]["start"]


def test_command_writes_both_splits(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    for split in ("train", "dev"):
        (src / f"{split}.docs.jsonl").write_text("\n".join(json.dumps(d) for d in DOCS))
        (src / f"{split}.queries.jsonl").write_text(json.dumps(_query("a", "d2", 0, 8)))
    assert main(["--src", str(src), "--group", "3", "--out", str(tmp_path / "out")]) == 0
    rows = [json.loads(x) for x in (tmp_path / "out" / "dev.docs.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and "dev: 2 documents" in capsys.readouterr().out


def test_pool_adds_distractors_under_prefixed_ids(tmp_path, capsys):
    from sproutrag.learn.devsets import pool_documents

    other = [{"doc_id": "d0", "text": "An unrelated contract."}]
    pooled = pool_documents(DOCS[:2], {"nda": other})
    assert [d["doc_id"] for d in pooled] == ["d0", "d1", "nda/d0"]
    assert pooled[2]["text"] == "An unrelated contract."
    with pytest.raises(ValueError, match="twice"):
        pool_documents(DOCS[:1], {"nda": other + other})
    src = tmp_path / "src"
    src.mkdir()
    (src / "dev.docs.jsonl").write_text("\n".join(json.dumps(d) for d in DOCS))
    (src / "dev.queries.jsonl").write_text(json.dumps(_query("a", "d2", 0, 8)))
    (tmp_path / "other.jsonl").write_text(json.dumps(other[0]))
    out = tmp_path / "out"
    assert main(["--src", str(src), "--split", "dev", "--out", str(out),
                 "--pool", f"nda={tmp_path / 'other.jsonl'}"]) == 0
    rows = [json.loads(x) for x in (out / "dev.docs.jsonl").read_text().splitlines()]
    assert [r["doc_id"] for r in rows][-2:] == ["d4", "nda/d0"]
    (q,) = [json.loads(x) for x in (out / "dev.queries.jsonl").read_text().splitlines()]
    assert q == _query("a", "d2", 0, 8)  # queries unchanged
    assert "5 documents + 1 pooled in" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="NAME=FILE"):
        main(["--src", str(src), "--out", str(out), "--pool", "nofile"])
