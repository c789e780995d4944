"""Token counts for a context's budget in tokens (`--budget-tokens`): a named tokenizer,
the encoder's by default.

A local model folder with a `tokenizer.json` is read by the `tokenizers` library alone (no
transformers import, no network); any other name goes to transformers' `AutoTokenizer`
(a hub name works only where a hub is reachable). Special tokens are not counted: a
reader's prompt adds its own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from sproutrag.errors import QueryError


@functools.lru_cache(maxsize=4)
def token_counter(tokenizer: str) -> Callable[[str], int]:
    """A function counting the tokens of a text with TOKENIZER (a model folder or name);
    QueryError naming it when it cannot be loaded."""
    from sproutrag.encoder.loading import resolve_model

    path, _ = resolve_model(tokenizer)
    folder = Path(path)
    if (folder / "tokenizer.json").is_file():
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tok.no_truncation()
        tok.no_padding()
        return lambda text: len(tok.encode(text, add_special_tokens=False).ids)
    try:
        from transformers import AutoTokenizer

        auto = AutoTokenizer.from_pretrained(path, local_files_only=folder.is_dir())
    except (OSError, ValueError) as exc:
        raise QueryError(f"tokenizer {tokenizer!r} cannot be loaded ({exc}): give a model "
                         "folder holding tokenizer.json, or a name this machine can load") from None
    return lambda text: len(auto(text, add_special_tokens=False,
                                 truncation=False)["input_ids"])


__all__ = ["token_counter"]
