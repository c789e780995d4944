"""evaluate: write an evaluation's rows as a Markdown table, a JSON file and a PNG plot."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sproutrag.learn.metrics import paired_difference


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def paired_cell(row: dict[str, Any], ref: dict[str, Any] | None, key: str = "ie") -> str:
    """`+d.d +/- s.s`: mean per-query difference of row - ref (percentage points)."""
    a, b = (row.get("per_query") or {}), ((ref or {}).get("per_query") or {})
    if not a.get(key) or not b.get(key) or a.get("qid") != b.get("qid"):
        return "-"
    mean, se = paired_difference(a[key], b[key])
    return f"{100 * mean:+.1f} +/- {100 * se:.1f}"


def markdown_table(rows: Sequence[dict[str, Any]], flat_name: str | None = None,
                   leaves_name: str | None = None) -> str:
    """One line per variant: IE per k and averaged over k, P, R, charIE (percentages);
    with a leaves row (tree mode's score, no tree) the paired per-query difference to it
    first (unit IE and char-IE: for the tree row, the tree's own contribution), with a
    flat row the ratio to it and the paired difference (+/- SE); with LanceDB baseline
    rows (`best_anchors`) the ratio and paired difference to the better of them, on unit
    IE and on char-IE each."""
    ks = [s["k"] for s in rows[0]["per_k"]] if rows else []
    flat = next((r for r in rows if r["name"] == flat_name), None)
    leaves = next((r for r in rows if r["name"] == leaves_name), None)
    best = best_anchors(rows)
    head = ["variant", *[f"IE@{k}" for k in ks], "IE avg", "P avg", "R avg", "charIE",
            "units@max k", "IE (returned units)"]
    if leaves:
        head += ["IE - leaves (paired)", "charIE - leaves (paired)"]
    if flat:
        head += ["IE / flat", "IE - flat (paired)"]
    if best:
        head += ["IE / best LanceDB", "IE - best LanceDB (paired)", "charIE / best LanceDB",
                 "charIE - best LanceDB (paired)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        a = r["avg"]
        cells = [r["name"], *[pct(s["ie"]) for s in r["per_k"]], f"**{pct(a['ie'])}**",
                 pct(a["precision"]), pct(a["recall"]), pct(a["char_ie"]),
                 f"{r['per_k'][-1]['mean_retrieved']:.2f}", pct(a["ie_returned"])]
        if leaves:
            cells += [paired_cell(r, leaves), paired_cell(r, leaves, "char_ie")]
        if flat:
            cells += [f"{a['ie'] / max(flat['avg']['ie'], 1e-12):.3f}", paired_cell(r, flat)]
        if best:
            for key in ("ie", "char_ie"):
                ref = best[key]
                cells += [f"{a[key] / max(ref['avg'][key], 1e-12):.3f}",
                          paired_cell(r, ref, key)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


#: Row modes of the LanceDB baselines (`sproutrag.learn.anchors.ANCHORS`).
ANCHOR_MODES = ("lancedb_bm25", "lancedb_hybrid")


def best_anchors(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{"ie": the baseline row with the best mean unit IE, "char_ie": the one with the
    best char-IE} among ROWS' LanceDB baselines ({} without any)."""
    anchors = [r for r in rows if r.get("mode") in ANCHOR_MODES]
    if not anchors:
        return {}
    return {key: max(anchors, key=lambda r, key=key: r["avg"][key]) for key in ("ie", "char_ie")}


def stats_table(rows: Sequence[dict[str, Any]]) -> str:
    """Tree shape and search figures of the tree variants."""
    tree_rows = [r for r in rows if r.get("stats")]
    if not tree_rows:
        return ""
    keys = list(tree_rows[0]["stats"])
    lines = ["| variant | " + " | ".join(keys) + " |", "|" + "---|" * (len(keys) + 1)]
    for r in tree_rows:
        lines.append("| " + r["name"] + " | "
                     + " | ".join(f"{r['stats'][k]:.2f}" for k in keys) + " |")
    return "\n".join(lines) + "\n"


def plot_ie(rows: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """IE per k per variant as grouped bars (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = [s["k"] for s in rows[0]["per_k"]]
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(rows) + 2), 4))
    width = 0.8 / max(len(ks), 1)
    for n, k in enumerate(ks):
        xs = [i + (n - (len(ks) - 1) / 2) * width for i in range(len(rows))]
        ax.bar(xs, [100 * r["per_k"][n]["ie"] for r in rows], width, label=f"k = {k}")
    ax.plot(range(len(rows)), [100 * r["avg"]["ie"] for r in rows], "k_", ms=18, mew=2,
            label="avg over k")
    ax.set_xticks(range(len(rows)), [r["name"] for r in rows], rotation=30, ha="right",
                  fontsize=8)
    ax.set_ylabel("IE = R x P (%)")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def scored(meta: dict[str, Any]) -> str:
    """What was scored, as a line before the tables: N queries (of M given, when some
    could not be scored) over D documents."""
    if "n_queries" not in meta:
        return ""
    given = meta.get("n_queries_given", meta["n_queries"])
    of = f" of {given} given" if given != meta["n_queries"] else ""
    text = f"Scored {meta['n_queries']} queries{of} over {meta.get('n_docs', '?')} documents"
    skipped = meta.get("not_scored") or []
    text += (": not scored, " + "; ".join(skipped) if skipped else "") + ".\n\n"
    if meta.get("trained_on_queries"):
        text += (f"**These queries trained the weights** ({meta['trained_on_queries']} "
                 "names them): training figures, not held-out ones.\n\n")
    return text


def write_report(
    rows: Sequence[dict[str, Any]], out: str | Path, meta: dict[str, Any],
    flat_name: str | None = None, leaves_name: str | None = None,
) -> dict[str, Path]:
    """results.md, results.json and ie.png under `out`."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    md = markdown_table(rows, flat_name, leaves_name)
    stats = stats_table(rows)
    text = f"# Evaluation\n\n`{meta.get('command', '')}`\n\n{scored(meta)}{md}\n"
    search = (meta.get("weights") or {}).get("search")
    if search:
        text += ("Search parameters of the weights (" + str(meta["weights"].get("source"))
                 + "): " + ", ".join(f"{k} {v}" for k, v in search.items()) + "\n\n")
    wide = [r for r in [*rows, *meta.get("budget_rows", ())] if r.get("corpus_wide")]
    if wide:
        text += "Where corpus-wide search loses against within:\n\n" + "".join(
            f"- {r['name']}: {r['notes']}\n" for r in wide) + "\n"
    if meta.get("budget_rows"):
        from sproutrag.learn.budgets import budget_table

        text += ("Contexts under a character budget (char precision P and recall R per "
                 "budget, P x R averaged over the budgets; paired per query):\n\n"
                 + budget_table(meta["budget_rows"]) + "\n")
    if stats:
        text += f"Tree figures (at the largest k):\n\n{stats}"
    (out / "results.md").write_text(text, encoding="utf-8")
    (out / "results.json").write_text(
        json.dumps({"meta": meta, "rows": list(rows)}, indent=1, default=str) + "\n",
        encoding="utf-8",
    )
    png = plot_ie(rows, out / "ie.png") if rows else None
    return {"markdown": out / "results.md", "json": out / "results.json", "png": png}
