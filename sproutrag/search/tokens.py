"""Token counts for a context's budget in tokens (`--budget-tokens`): a named tokenizer,
the encoder's by default.

A local model folder with a `tokenizer.json` is read by the `tokenizers` library alone (no
transformers import, no network); any other name goes to transformers' `AutoTokenizer`
(a hub name works only where a hub is reachable). Special tokens are not counted: a
reader's prompt adds its own. An unknown token counts one per character it stands for.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from sproutrag.errors import QueryError

#: Files a tokenizer is loaded from (a folder with none of them holds no tokenizer).
_TOKENIZER_FILES = {"tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json",
                    "spiece.model", "sentencepiece.bpe.model", "tokenizer.model"}


@functools.lru_cache(maxsize=4)
def token_counter(tokenizer: str) -> Callable[[str], int]:
    """A function counting the tokens of a text with TOKENIZER (a model folder or name);
    QueryError naming it when it cannot be loaded."""
    from sproutrag.encoder.loading import resolve_model

    path, _ = resolve_model(tokenizer)
    folder = Path(path)
    why = _path_problem(tokenizer, folder)
    if why:
        raise QueryError(f"tokenizer {tokenizer!r}: {why} (give a model folder holding "
                         "tokenizer.json, or a name this machine can load)")
    if (folder / "tokenizer.json").is_file():
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tok.no_truncation()
        tok.no_padding()
        unk = getattr(tok.model, "unk_token", None)
        unk_id = tok.token_to_id(unk) if unk else None
        return lambda text: _count(tok.encode(text, add_special_tokens=False), unk_id)
    try:
        from transformers import AutoTokenizer

        auto = AutoTokenizer.from_pretrained(path, local_files_only=folder.is_dir())
    except (OSError, ValueError) as exc:
        raise QueryError(f"tokenizer {tokenizer!r} cannot be loaded ({exc}): give a model "
                         "folder holding tokenizer.json, or a name this machine can load") from None
    if not getattr(auto, "is_fast", False):
        return lambda text: len(auto(text, add_special_tokens=False,
                                     truncation=False)["input_ids"])
    return lambda text: _count(auto(text, add_special_tokens=False, truncation=False,
                                    return_offsets_mapping=True).encodings[0],
                               auto.unk_token_id)


def _path_problem(name: str, folder: Path) -> str | None:
    """Why NAME, resolved to FOLDER, is no tokenizer folder (None: it may be one, or a
    hub name): a path that does not exist, a file, a folder without tokenizer files."""
    if not folder.exists():
        return "no such folder" if name.startswith(("/", "./", "../", "~")) else None
    if not folder.is_dir():
        return "a file, not a folder"
    if not _TOKENIZER_FILES & {p.name for p in folder.iterdir()}:
        return "the folder holds no tokenizer"
    return None


def _count(encoding, unk_id: int | None) -> int:
    """The tokens of ENCODING, an unknown token counted as one per character it stands
    for: a WordPiece vocabulary without Thai or emoji reads a whole phrase of them as one
    [UNK], which a reader's tokenizer spends a token or more a character on (a budget of
    2 tokens took a 5,680-character Thai document)."""
    if unk_id is None:
        return len(encoding.ids)
    return len(encoding.ids) + sum(max(b - a - 1, 0) for i, (a, b) in
                                   zip(encoding.ids, encoding.offsets) if i == unk_id)


__all__ = ["token_counter"]
