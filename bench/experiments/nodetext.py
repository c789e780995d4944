"""Embeddings of internal nodes' own text (small subtrees), cached."""
from common import *
def node_text_vectors(name, split, feats, trees, texts, max_leaves=8):
    path = ROOT / ".eval-cache" / f"nodetext-{name}-{split}-{max_leaves}.npz"
    keys = sorted(trees)
    if path.is_file():
        z = np.load(path)
        return {d: z[d] for d in keys if d in z}
    enc = encoder()
    out = {}
    for d in keys:
        t = trees[d]; n = t.n
        V = t.vectors.copy()
        todo, txt = [], []
        for node in range(n, 2 * n - 1):
            if t.n_leaves[node] <= max_leaves:
                leaves = np.sort(t.leaves_of(node))
                todo.append(node)
                txt.append(" ".join(texts[d][feats[d].spans[u, 0]:feats[d].spans[u, 1]] for u in leaves))
        if txt:
            V[todo] = enc.encode_texts(txt)
        out[d] = V
    np.savez(path, **out)
    return out
