"""trees: the attention tree as flat numpy arrays.

Owns single linkage over a sparse relation graph (`linkage`), the `Tree` (scipy's
numbering, progressive embeddings, leaf order) and `validate_tree` (`tree`); many trees
checked at once (`many`: an index run's batch, `sproutrag check`'s whole table).
May import: numpy and scipy only (no other sproutrag package).
"""
