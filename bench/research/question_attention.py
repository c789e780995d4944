"""Probe (issue 29, not a rule): does MiniLM, reading the question and a unit together,
tell a gold unit from a look-alike's better than the cosine of their two vectors?

    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python bench/research/question_attention.py train

No cross-encoder's weights install offline; this asks whether the packaged bi-encoder
can stand in for one (the attention-guided method reads relations between texts from its
attention). Paragraph pool, per question: the units of the 10 documents whose best unit
is nearest the question (cosine), each unit encoded after the question as a text pair
("[CLS] question [SEP] unit [SEP]"). Scores of a unit: the cosine of the two vectors (the
reference); the attention from the question's tokens to the unit's, per layer (mean of
the heads), less the same for the content-free question "N/A" (calibrated, as zero-shot
attention re-rankers do); the cosine of the question's vector to the unit's tokens' mean
state in the pair; and each of these added to the cosine (z-scores). Ranked units scored
by `sproutrag.learn.metrics.score_query` (unit IE over k = 1, 3, 5), paired against the
cosine.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

from sproutrag.encoder.loading import DEFAULT_MODEL, load_model
from sproutrag.ingest.chunking import chunk_text
from sproutrag.learn.datasets import read_jsonl
from sproutrag.learn.metrics import gold_units, paired_difference, score_query

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "hotpotqa-paragraphs"
CANDIDATES = 10  # documents read per question
KS = (1, 3, 5)


def mean_vectors(tok, net, texts: list[str], pairs: list[str] | None = None):
    """Normalised mean token states (of the second text when `pairs`), and the layers'
    attention from the first text's tokens to the second's (mean of the heads)."""
    b = tok(texts, pairs, padding=True, truncation="only_second" if pairs else True,
            max_length=256, return_tensors="pt", return_token_type_ids=True)
    with torch.no_grad():
        out = net(**b, output_attentions=pairs is not None)
    ids, live = b["input_ids"], b["attention_mask"] == 1
    plain = live & (ids != tok.cls_token_id) & (ids != tok.sep_token_id)
    second = (plain & (b["token_type_ids"] == 1)).float() if pairs else live.float()
    v = (out.last_hidden_state * second.unsqueeze(-1)).sum(1) / second.sum(1, keepdim=True)
    v = torch.nn.functional.normalize(v, dim=-1).numpy()
    if pairs is None:
        return v, None
    first = (plain & (b["token_type_ids"] == 0)).float()
    att = torch.stack(out.attentions).mean(2)  # layers, batch, T, T
    mass = torch.einsum("bt,lbts,bs->lb", first, att, second) / first.sum(1)
    return v, mass.numpy()


def z(x: np.ndarray) -> np.ndarray:
    return (x - x.mean()) / (x.std() + 1e-9)


def main(split: str) -> None:
    docs = read_jsonl(DATA / f"{split}.docs.jsonl")
    questions = read_jsonl(DATA / f"{split}.queries.jsonl")
    tok, net = load_model(DEFAULT_MODEL, "cpu")
    units = [(d["doc_id"], s, e) for d in docs for s, e in chunk_text(d["text"])]
    text = {d["doc_id"]: d["text"] for d in docs}
    unit_texts = [text[d][s:e] for d, s, e in units]
    vecs = np.concatenate([mean_vectors(tok, net, unit_texts[i:i + 64])[0]
                           for i in range(0, len(units), 64)])
    doc_of = np.array([d for d, _, _ in units])
    ie: dict[str, list[float]] = defaultdict(list)
    for q in questions:
        qv = mean_vectors(tok, net, [q["query"]])[0][0]
        cos = vecs @ qv
        best = {d: max(cos[doc_of == d]) for d in set(doc_of)}
        chosen = sorted(best, key=best.get, reverse=True)[:CANDIDATES]
        cand = np.where(np.isin(doc_of, chosen))[0]
        texts = [unit_texts[i] for i in cand]
        joint, mass = mean_vectors(tok, net, [q["query"]] * len(cand), texts)
        _, null = mean_vectors(tok, net, ["N/A"] * len(cand), texts)
        scores = {"cosine": cos[cand], "joint states": joint @ qv,
                  "cosine + joint states": z(cos[cand]) + z(joint @ qv)}
        for layer in range(mass.shape[0]):
            cal = mass[layer] - null[layer]
            scores[f"attention L{layer}"] = cal
            scores[f"cosine + attention L{layer} / 2"] = z(cos[cand]) + 0.5 * z(cal)
        gold = [(g["doc_id"], g["start"], g["end"]) for g in q["gold"]]
        gunits = gold_units([units[i] for i in cand], gold)
        for name, s in scores.items():
            ranked = [units[cand[i]] for i in np.argsort(-s, kind="stable")]
            ie[name].append(100 * np.mean([score_query(ranked, gold, gunits, k=k).ie
                                           for k in KS]))
    print(f"paragraph pool {split}, {len(questions)} questions, unit IE over k = 1, 3, 5")
    for name, values in ie.items():
        d, se = paired_difference(values, ie["cosine"])
        print(f"{name:30s} {np.mean(values):6.2f}   - cosine {d:+6.2f} +/- {se:.2f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "train")
