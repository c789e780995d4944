"""trees: the attention tree as flat numpy arrays.

Owns single linkage over a sparse relation graph (`linkage`), the `Tree` (scipy's
numbering, progressive embeddings, leaf order) and `validate_tree` (`tree`).
May import: numpy and scipy only (no other sproutrag package).
"""
