"""Build the named-contracts pool: look-alike long documents, questions that name them.

Issue 29's independent set (finance, law and medical reports of similar companies and
cases) loses 19% corpus-wide where the development pools lose less: its documents look
alike and are long, and its questions name the company or case they are about ("What was
X's revenue?"), 43% of them two documents. None of the dev pools has that shape (the
paragraph pool's documents are two to five sentences; the pooled sets' documents share no
topic). ContractNLI has it: every document is a non-disclosure agreement, 9-12K
characters, and the same 17 hypotheses recur across them.

Each split of ../shared/data/contractnli becomes a pool (its documents unchanged) with
questions that name a party of the agreement they ask about:
- one document: the hypothesis with the party, in one of three wordings ("Under the
  agreement with Wollaston School: Receiving Party shall ..."), gold its spans;
- two documents: the same hypothesis asked of two agreements that both hold evidence for
  it ("In the agreements with X and with Y: ..."), gold the spans of both.
The parties are chosen by hand (`PARTIES`, read from each agreement's preamble; a
template with blanks for the parties has none and asks nothing, but stays in the pool)
and checked here: a party's words must occur in its agreement and in no other agreement of
the split, so a question names exactly one document. Questions are sampled with a fixed
seed: 57% one-document, 43% two-document, as in the independent set.

    PYTHONPATH=. .venv/bin/python bench/research/named_contracts.py [--out out/data/named-contracts]

writes SPLIT.docs.jsonl and SPLIT.queries.jsonl for train and dev (outside git: `out/`).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT.parent / "shared" / "data" / "contractnli"

#: The party each question names, by split and doc_id, read from the agreement's preamble.
PARTIES: dict[str, dict[str, str]] = {
    "dev": {
        "3": "OISAIR project", "7": "Republic of Singapore", "9": "Transportation Challenge",
        "10": "Canadian Pacific Railway", "12": "Bottling Company",
        "13": "PJM Interconnection", "14": "Patriot Scientific", "15": "University of Bristol",
        "16": "NASDAQ OMX", "17": "Department of Veterans Affairs", "29": "Adobe",
        "32": "Champion Aerospace", "35": "Hernic Ferrochrome",
        "37": "Price Benchmarking Services", "39": "County of Loudoun",
        "44": "BOMI International", "45": "Brooks Technical Solutions",
        "54": "Fronius International", "61": "California Courts Protective Order Registry",
        "63": "Commercial Investigations", "64": "California Association of Realtors",
        "69": "Chief Enterprises", "72": "Baldwin Paper", "73": "KapilaMukamal",
        "79": "CiF Lab Solutions", "152": "Add-X Biotech", "205": "No Reservations",
        "381": "Meritage Corporation", "398": "Lumex Medical Products",
        "405": "Richard A. Bearse", "406": "National Medical Health Card Systems",
        "411": "American United Global", "478": "Yale University School of Medicine",
        "482": "Smart Chip Technologies", "486": "High Speed Net Solutions",
        "507": "Big Sky Transportation", "547": "Universal Hospital Services",
        "563": "Blackstreet Capital", "582": "Verizon Communications", "586": "EarthLink",
        "595": "FLIR Systems", "598": "Tennenbaum Capital",
        "605": "Blueknight Energy Partners", "610": "Nimble Storage",
    },
    "train": {
        "34": "United Nations High Commissioner for Refugees",
        "87": "Cyber Mutual Assistance", "88": "Data Boiler Technologies",
        "89": "New York City Department of Health", "91": "Dealer Pay",
        "92": "Wollaston School", "94": "EFCA", "95": "Eskom Holdings",
        "98": "Town of The Blue Mountains", "106": "Flix Entertainment",
        "113": "Princeton HealthCare System", "115": "Georgia Transmission Corporation",
        "116": "Furtwangen University", "118": "GreenStorm Solutions", "119": "Grindrod",
        "120": "HALO Electronics", "121": "Euler Hermes", "123": "Manitoba Housing",
        "124": "University of Rochester", "125": "Hispanic National Bar Association",
        "130": "Infomagnet", "133": "JB Machine", "135": "Johns Hopkins University",
        "136": "CPK Manufacturing", "143": "Nostradata",
    },
}

ONE = ("Under the agreement with {e}: {h}", "In the {e} agreement, {hl}",
       "{h} (the agreement with {e})")
TWO = ("In the agreements with {e} and with {f}: {h}",
       "Under both the {e} agreement and the {f} agreement, {hl}")
TWO_SHARE = 0.43


def _lower_first(h: str) -> str:
    return h[:1].lower() + h[1:] if h[:2] != h[:2].upper() else h


def build(split: str, n_queries: int, seed: int = 29) -> tuple[list[dict], list[dict]]:
    """SPLIT's documents and its named questions (N_QUERIES, 43% of two documents)."""
    docs = [json.loads(line) for line in open(SOURCE / f"{split}.docs.jsonl")]
    queries = [json.loads(line) for line in open(SOURCE / f"{split}.queries.jsonl")]
    lower = {d["doc_id"]: d["text"].lower() for d in docs}
    parties = PARTIES[split]
    for doc_id, party in parties.items():
        holders = [d for d, t in lower.items() if party.lower() in t]
        if holders != [doc_id]:
            raise SystemExit(f"{split}: party {party!r} of document {doc_id} is in {holders}")
    rng = random.Random(seed)
    one = [q for q in queries if q["doc_ids"][0] in parties and q["gold"]]
    by_hypothesis: dict[str, list[dict]] = {}
    for q in one:
        by_hypothesis.setdefault(q["qid"].split(":", 1)[1], []).append(q)
    pairs = []
    for hyp in sorted(by_hypothesis):
        group = sorted(by_hypothesis[hyp], key=lambda q: q["qid"])
        rng.shuffle(group)
        pairs += [(group[i], group[i + 1]) for i in range(0, len(group) - 1, 2)]
    n_two = min(len(pairs), round(n_queries * TWO_SHARE))
    n_one = min(len(one), n_queries - n_two)
    out = []
    for i, q in enumerate(sorted(rng.sample(one, n_one), key=lambda q: q["qid"])):
        h = q["query"]
        text = ONE[i % len(ONE)].format(e=parties[q["doc_ids"][0]], h=h, hl=_lower_first(h))
        out.append({"qid": f"named:{q['qid']}", "query": text, "doc_ids": q["doc_ids"],
                    "gold": q["gold"], "type": "one"})
    for i, (a, b) in enumerate(sorted(rng.sample(pairs, n_two),
                                      key=lambda p: (p[0]["qid"], p[1]["qid"]))):
        h = a["query"]
        e, f = parties[a["doc_ids"][0]], parties[b["doc_ids"][0]]
        text = TWO[i % len(TWO)].format(e=e, f=f, h=h, hl=_lower_first(h))
        out.append({"qid": f"named:{a['qid']}+{b['qid']}", "query": text,
                    "doc_ids": a["doc_ids"] + b["doc_ids"], "gold": a["gold"] + b["gold"],
                    "type": "two"})
    return docs, out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=str(ROOT / "out" / "data" / "named-contracts"))
    p.add_argument("--queries", type=int, default=200, help="questions per split")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for split in ("train", "dev"):
        docs, queries = build(split, args.queries)
        for name, rows in (("docs", docs), ("queries", queries)):
            with open(out / f"{split}.{name}.jsonl", "w") as f:
                f.writelines(json.dumps(r) + "\n" for r in rows)
        two = sum(q["type"] == "two" for q in queries)
        print(f"{split}: {len(docs)} documents ({len(PARTIES[split])} named), "
              f"{len(queries)} questions ({two} of two documents) -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
