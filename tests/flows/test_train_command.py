"""`sproutrag train` end to end on a tiny labelled set: alpha, the encoder fine-tuned and
alpha again, the search parameters; the weights file it writes loads and names what it
was trained on."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from sproutrag.encoder.weights import TrainedWeights
from tests.helpers import CLI, ROOT

TOPICS = {
    "lease": ["The tenant pays the rent on the first day of each month.",
              "The landlord repairs the roof and the heating at its own cost.",
              "Rent paid late carries interest of two percent a month.",
              "Either party may end the lease with three months' written notice.",
              "The deposit is returned within thirty days after the keys are handed back.",
              "Notice to end the lease must be sent by registered letter.",
              "Pets are allowed with the landlord's written consent.",
              "Damage beyond normal wear is deducted from the deposit."],
    "loan": ["The borrower repays the principal in twelve equal instalments.",
             "Interest accrues at five percent a year on the unpaid balance.",
             "Each instalment is due on the tenth day of the month.",
             "A late payment costs a fee of fifty dollars.",
             "The lender may demand the whole balance after two missed payments.",
             "The interest rate is fixed for the whole term of the loan.",
             "The borrower may repay early without a penalty.",
             "Fees for late payments are added to the next instalment."],
}
QUESTIONS = [("lease", 0, "When is the rent due and what if it is late?"),
             ("lease", 3, "How can the lease be ended?"),
             ("lease", 4, "What happens to the deposit?"),
             ("loan", 0, "How is the loan repaid and when?"),
             ("loan", 1, "What interest rate applies?"),
             ("loan", 3, "What does a late payment cost?")]


def _labelled_set(folder):
    """(docs.jsonl, queries.jsonl) of TOPICS, each question's gold two sentences of
    different units (a unit holds two sentences)."""
    docs, queries = folder / "docs.jsonl", folder / "queries.jsonl"
    texts = {d: " ".join(sentences) for d, sentences in TOPICS.items()}
    docs.write_text("".join(json.dumps({"doc_id": d, "text": t}) + "\n"
                            for d, t in texts.items()))
    lines = []
    for n, (doc, at, question) in enumerate(QUESTIONS):
        gold = []
        for sentence in (TOPICS[doc][at], TOPICS[doc][at + 2]):  # two units' evidence
            start = texts[doc].index(sentence)
            gold.append({"doc_id": doc, "start": start, "end": start + len(sentence)})
        lines.append({"qid": f"q{n}", "query": question, "doc_ids": [doc], "gold": gold})
    queries.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return docs, queries


@pytest.mark.model
def test_train_with_a_finetuned_encoder_writes_weights_that_load(tmp_path):
    docs, queries = _labelled_set(tmp_path)
    out = tmp_path / "model"
    proc = subprocess.run(
        [*CLI, "train", "--docs", str(docs), "--queries", str(queries), "--out", str(out),
         "--epochs", "3", "--finetune-encoder", "--finetune-epochs", "1"],
        cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    weights = TrainedWeights.load(out / "weights.json")
    assert weights.trained_on == "docs.jsonl"
    assert weights.alpha.ndim == 2 and weights.alpha.size > 1
    config = json.loads((out / "config.json").read_text())
    assert list(config["seconds"]) == [
        "featurize_and_train_alpha", "finetune_encoder", "featurize_and_train_alpha_finetuned",
        "learn_search", "total"]
    assert (out / "encoder").is_dir()  # the fine-tuned model, which the weights name
    assert weights.encoder != "sentence-transformers/all-MiniLM-L6-v2"
