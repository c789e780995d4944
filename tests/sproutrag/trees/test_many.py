"""Tests of sproutrag.trees.many: a batch of trees checked at once says what checking them
one by one says (the same tree, the same message), over every named damage and thousands
of random ones."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sproutrag.trees.many import validate_trees
from sproutrag.trees.tree import InvalidTreeError, Tree, build_tree, validate_tree
from tests.helpers import DAMAGE, good_tree

COLUMNS = ("left", "right", "parent", "height", "n_leaves", "leaf_start", "leaf_end",
           "merge_sim", "leaf_order", "vectors")


def small_trees(seed: int, count: int = 6) -> list[Tree]:
    """COUNT trees of 1-9 leaves over a chain of relations with random strengths."""
    rng, out = np.random.default_rng(seed), []
    for _ in range(count):
        n = int(rng.integers(1, 10))
        i = np.arange(n - 1)
        out.append(build_tree(rng.normal(size=(n, 3)).astype(np.float32), i, i + 1,
                              rng.uniform(0.1, 1, n - 1)))
    return out


def one_by_one(trees: list[Tree], names: list[str]) -> str | None:
    """The message of the first tree `validate_tree` rejects, None when none is."""
    for tree, name in zip(trees, names, strict=True):
        try:
            validate_tree(tree, name=name)
        except InvalidTreeError as exc:
            return str(exc)
    return None


def batched(trees: list[Tree], names: list[str]) -> str | None:
    try:
        validate_trees(trees, names)
    except InvalidTreeError as exc:
        return str(exc)
    return None


def test_valid_batches_pass():
    for seed in range(20):
        trees = small_trees(seed)
        validate_trees(trees, [f"t{k}" for k in range(len(trees))])
    validate_trees([], [])


@pytest.mark.parametrize("problem", list(DAMAGE))
def test_every_named_damage_is_found_in_a_batch(problem):
    trees = [*small_trees(1, 3), DAMAGE[problem](good_tree()), *small_trees(2, 3)]
    names = [f"doc-{k}" for k in range(len(trees))]
    with pytest.raises(InvalidTreeError, match=f"^doc-3: .*{problem}"):
        validate_trees(trees, names)


def random_damage(tree: Tree, rng: np.random.Generator) -> Tree:
    """TREE with one value of one column changed (often to a nearby, plausible one)."""
    col = COLUMNS[rng.integers(len(COLUMNS))]
    arr = getattr(tree, col).copy()
    where = tuple(int(rng.integers(s)) for s in arr.shape)
    if col in ("merge_sim", "vectors"):
        arr[where] = rng.choice([np.nan, np.inf, 0.5, -1.0])
    else:
        arr[where] = arr[where] + rng.choice([-2, -1, 1, 2]) if rng.random() < 0.7 else (
            rng.integers(-2, 2 * tree.n + 1))
    return dataclasses.replace(tree, **{col: arr})


def test_random_damage_same_verdict_and_message_as_one_by_one():
    rng, found = np.random.default_rng(0), 0
    for _ in range(3000):
        trees = small_trees(int(rng.integers(1 << 30)), int(rng.integers(1, 6)))
        for k in rng.choice(len(trees), size=int(rng.integers(1, 3)), replace=True):
            trees[k] = random_damage(trees[k], rng)
        names = [f"doc-{k}" for k in range(len(trees))]
        want = one_by_one(trees, names)
        assert batched(trees, names) == want
        found += want is not None
    assert found > 2000  # most damage is caught (some changes keep a tree valid)
