"""A learned unit ranker for corpus-wide search (issue 29, explored on train).

    PYTHONPATH=. .venv/bin/python bench/research/unit_ranker.py [--splits train] [--folds 5]

Rules 11-18 each added one hand-set term to the shipped score (the anchored statistics,
the link weight, the leader bonus, ...), and the last ones found a plateau. This fits all
of them at once, with signals no rule used: a logistic model over per-leaf features of
the searched documents (after the fetch, as `name_fetch.Fetch.run` searches with rules
13-18), the label being whether the leaf holds gold. Features: the fused score (today's
rank score before the links), the cosine, linked (the question or u1 names the
document), leader (d1 when it links), d1, the document's best score less the best of
all, the leaf's place in its document's order, the document's place in the first
stage's order and whether it was fetched, the share of the document's name words the
question writes, and whether the leaf opens its document. Today's ranking is rank + 3
linked + 2 leader (nested in the model). Leaves ranked by the model, top k, unit IE
averaged over k = 1, 3, 5; cross-validated by query on the three train pools (every
fold fits on the other folds of all three pools), paired against today's with the same
top-k ranking.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hierarchy as H  # noqa: E402
import name_fetch as F  # noqa: E402
import title_links as T  # noqa: E402

from sproutrag.names import words  # noqa: E402
from sproutrag.search.links import LEADER_WEIGHT, LINK_WEIGHT  # noqa: E402
from sproutrag.stopwords import STOPWORDS  # noqa: E402

FEATURES = ("rank", "cosine", "linked", "leader", "d1", "doc_gap", "place_in_doc",
            "first_stage_place", "fetched", "name_in_question", "opens_document")
#: --maxsim: late interaction (ColBERT's MaxSim) of MiniLM's token states, query tokens
#: that are not stopwords against the leaf's tokens, z-standardised over the query's leaves.
MAXSIM = ("maxsim",)


class TokenStates:
    """MiniLM's L2-normalised token states of texts (special tokens dropped), cached."""

    def __init__(self, encoder) -> None:
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(encoder.model_path, device="cpu")
        self.tok = self.model.tokenizer
        self.cache: dict[str, tuple[np.ndarray, list[str]]] = {}

    def states(self, texts: list[str]) -> list[tuple[np.ndarray, list[str]]]:
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            embs = self.model.encode(todo, output_value="token_embeddings", batch_size=64,
                                     convert_to_numpy=False, show_progress_bar=False)
            for t, e in zip(todo, embs, strict=True):
                ids = self.tok(t, truncation=True, max_length=256)["input_ids"]
                toks = self.tok.convert_ids_to_tokens(ids)
                e = e.cpu().numpy()[: len(toks)]
                keep = [i for i, w in enumerate(toks) if w not in ("[CLS]", "[SEP]")]
                v = e[keep]
                v /= np.linalg.norm(v, axis=1, keepdims=True) + 1e-9
                self.cache[t] = (v, [toks[i] for i in keep])
        return [self.cache[t] for t in texts]

    def maxsim(self, query: str, leaves: list[str]) -> np.ndarray:
        (q, qt), *ls = self.states([query, *leaves])
        keep = [i for i, w in enumerate(qt) if w.isalnum() and w not in STOPWORDS]
        q = q[keep] if keep else q
        out = np.array([float((q @ v.T).max(1).mean()) for v, _ in ls])
        return (out - out.mean()) / (out.std() + 1e-9)


def overlaps(span: tuple[int, int], gold: list[tuple[int, int]]) -> bool:
    return any(s < span[1] and span[0] < e for s, e in gold)


def query_rows(f: F.Fetch, n: int, k: int, tokens: TokenStates | None = None):
    """(features [m, F], labels [m], units [(doc, start, end)]) of query N's searched
    leaves at K, as the shipped search (fetch 1, unit links, corpus-unique names) sees
    them."""
    p = f.p
    q = p.queries[n]
    docs, base, d1, linked, extra = f.searched(n, k)
    leaves = {d: base[d].rank[: p.trees[d].n] for d in docs if p.trees[d].n}
    top = max(float(v.max()) for v in leaves.values())
    qwords = set(words(q["query"]).split())
    gold = {}
    for g in q["gold"]:
        gold.setdefault(g["doc_id"], []).append((g["start"], g["end"]))
    X, y, units = [], [], []
    for place, d in enumerate(docs):
        if d not in leaves:
            continue
        r = leaves[d]
        order = np.argsort(-r, kind="stable")
        pos = np.empty_like(order)
        pos[order] = np.arange(len(order))
        name = [w for w in (f.links.names.get(d) or "").split() if w not in STOPWORDS]
        in_q = sum(w in qwords for w in name) / len(name) if name else 0.0
        for u in range(len(r)):
            span = tuple(map(int, p.spans[d][u]))
            X.append([r[u], float(base[d].cosine[u]), d in linked, bool(linked) and d == d1,
                      d == d1, float(r.max()) - top, min(int(pos[u]), 5),
                      np.log1p(place), d in extra, in_q, u == 0])
            y.append(overlaps(span, gold.get(d, [])))
            units.append((d, *span))
    X = np.asarray(X, np.float64)
    if tokens is not None:
        texts = [f.links.texts[d][s:e] for d, s, e in units]
        X = np.column_stack([X, tokens.maxsim(q["query"], texts)])
    return X, np.asarray(y, bool), units


def today_score(X: np.ndarray) -> np.ndarray:
    return X[:, 0] + LINK_WEIGHT * X[:, 2] + LEADER_WEIGHT * X[:, 3]


def runs_of(data: list[dict], score) -> dict[int, list]:
    """Top-k units per k per query by SCORE(features)."""
    out: dict[int, list] = {k: [] for k in H.KS}
    for per_k in data:
        for k in H.KS:
            X, _, units = per_k[k]
            order = np.argsort(-score(X), kind="stable")[:k]
            out[k].append([units[i] for i in order])
    return out


def main(argv: list[str] | None = None) -> int:
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pools", nargs="+", default=H.POOLS)
    ap.add_argument("--split", default="train")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--C", type=float, default=1.0)
    ap.add_argument("--maxsim", action="store_true", help="add the MaxSim feature")
    ap.add_argument("--per-query", action="store_true",
                    help="every query weighs the same in the fit (not every leaf)")
    args = ap.parse_args(argv)
    settings, encoder = H.default_encoder()
    pools = {}
    tokens = TokenStates(encoder) if args.maxsim else None
    names = FEATURES + (MAXSIM if args.maxsim else ())
    for name in args.pools:
        p = H.Pool(name, *H.open_pool(name, args.split, settings, encoder))
        f = F.Fetch(p, T.Links(H.pool_files(name, args.split)[0]))
        pools[name] = (p, [{k: query_rows(f, n, k, tokens) for k in H.KS}
                           for n in range(len(p.queries))])
        print(f"{name}: {len(p.queries)} queries", flush=True)
    rng = np.random.default_rng(0)
    fold_of = {name: rng.integers(0, args.folds, len(d)) for name, (_, d) in pools.items()}
    preds: dict[str, list] = {name: [None] * len(d) for name, (_, d) in pools.items()}
    coefs = []
    for fold in range(args.folds):
        Xs, ys, ws = [], [], []
        for name, (_, data) in pools.items():
            for i, per_k in enumerate(data):
                if fold_of[name][i] != fold:
                    X, y, _ = per_k[max(H.KS)]
                    Xs.append(X)
                    ys.append(y)
                    ws.append(np.full(len(y), 1.0 / len(y) if args.per_query else 1.0))
        scaler = StandardScaler().fit(np.vstack(Xs))
        model = LogisticRegression(C=args.C, max_iter=2000).fit(
            scaler.transform(np.vstack(Xs)), np.concatenate(ys),
            sample_weight=np.concatenate(ws) * len(ws) / sum(w.sum() for w in ws))
        coefs.append(model.coef_[0] / scaler.scale_)
        for name in pools:
            for i in np.flatnonzero(fold_of[name] == fold):
                preds[name][i] = (scaler, model)
    print("coefficients (per raw unit, mean over folds):",
          ", ".join(f"{n} {c:+.2f}" for n, c in zip(names, np.mean(coefs, 0), strict=True)))
    for name, (p, data) in pools.items():
        ref = p.row("today", runs_of(data, today_score))
        out: dict[int, list] = {k: [] for k in H.KS}
        for i, per_k in enumerate(data):
            scaler, model = preds[name][i]
            for k in H.KS:
                X, _, units = per_k[k]
                order = np.argsort(-model.decision_function(scaler.transform(X)),
                                   kind="stable")[:k]
                out[k].append([units[j] for j in order])
        new = p.row("model", out)
        print(f"{name} {args.split}: today (top-k leaves) IE {100 * ref['avg']['ie']:.2f}; "
              f"model {H.against(new, ref, ref)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
