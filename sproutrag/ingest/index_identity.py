"""The index identity: the fingerprint each document records (`documents.index_fingerprint`),
the key of its `index_settings` row.

An index fingerprint is a short hash of everything that changes the stored vectors and
trees: the encoder (its id and content hash, its window and chunk settings, its
embedding mode, its precision when not float32), the fingerprint of its weights' alpha
(`TrainedWeights.tree_fingerprint`:
the query-time search parameters never re-index a corpus), the chunking, the tree
settings and the stored trees' schema version (`sproutrag.schemas.tables.TREE_SCHEMA_VERSION`;
columns added to `documents` change the tables' schema version, not the fingerprint).
Storage and pipeline settings (paths, credentials, batch sizes) never enter it.
`index_fingerprint` is the one function that computes it (the index flow calls it
through `sproutrag.tasks.database`); `index_fields` is what it hashes, recorded as
`index_settings.settings_json`.

The evaluation's feature cache (`sproutrag.learn.features`) keys its files with
`encoder_fields` too, but not with the rest: features hold every attention head (so
alpha does not change them) and no tree, and the key has its own version and corpus
hash (see `features._cache_key`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from sproutrag.schemas.tables import TREE_SCHEMA_VERSION


def encoder_fields(encoder: Any) -> dict[str, Any]:
    """The encoder's settings that change embeddings or relations, with its model's id
    and content hash (not its weights), and the precision it runs in when that is not
    float32 (bf16 / fp16 under autocast on cuda): an index built on CPU and updated on a
    GPU re-indexes instead of mixing float32 and bf16 vectors, while every float32
    fingerprint stays what it was before the field existed."""
    fields = {
        "encoder": encoder.model_id,
        "encoder_sha256": encoder.model_sha256,
        "embedding_mode": encoder.embedding_mode,
        "window_tokens": encoder.window_tokens,
        "window_stride": encoder.window_stride,
        "chunk_max_tokens": encoder.chunk_max_tokens,
    }
    precision = getattr(encoder, "precision", "float32")
    if precision != "float32":
        fields["precision"] = precision
    return fields


def _plain(section: Any) -> dict[str, Any]:
    """A settings section (pydantic model) or a mapping, as a plain dict."""
    if hasattr(section, "model_dump"):
        return section.model_dump()
    if isinstance(section, Mapping):
        return dict(section)
    raise TypeError(f"expected a settings section or a mapping, got {type(section).__name__}")


def index_fields(encoder: Any, *, chunking: Any, tree: Any) -> dict[str, Any]:
    """Everything that changes the stored trees and vectors: ENCODER (with its weights'
    alpha), CHUNKING and TREE (`Settings.chunking` / `Settings.tree`, or their dicts) and
    the stored trees' schema version."""
    chunking = _plain(chunking)
    for key, old in CHUNKING_ADDED.items():  # at the behaviour before the option existed:
        if chunking.get(key) == old:  # left out, so every older fingerprint stays the same
            del chunking[key]
    return {
        **encoder_fields(encoder),
        "weights": encoder.weights.tree_fingerprint(),
        "schema_version": TREE_SCHEMA_VERSION,
        "chunking": chunking,
        "tree": _plain(tree),
    }


#: Chunking options added after fingerprints were first recorded, with the value that
#: keeps the old behaviour.
CHUNKING_ADDED = {"respect_structure": False, "join_max_chars": None, "lists": False,
                  "sentence_rules": 1}


def fingerprint(fields: Mapping[str, Any]) -> str:
    """Short stable hash of FIELDS (sorted-key compact JSON, sha256, 16 hex digits)."""
    blob = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def index_fingerprint(encoder: Any, *, chunking: Any, tree: Any) -> str:
    """The index identity of documents indexed with ENCODER, CHUNKING and TREE."""
    return fingerprint(index_fields(encoder, chunking=chunking, tree=tree))


def setting_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What differs between two runs' `index_fields` (BEFORE as `index_settings` recorded
    it), one "name: old -> new" per setting, nested ones dotted ("chunking.lists: false ->
    true"); a setting one side lacks reads "unset" there."""
    added = {f"chunking.{k}": v for k, v in CHUNKING_ADDED.items()}  # left out at these
    flat_before, flat_after = ({**added, **_named(before)}, {**added, **_named(after)})
    return [f"{k}: {_shown(flat_before.get(k, _UNSET))} -> {_shown(flat_after.get(k, _UNSET))}"
            for k in sorted(set(flat_before) | set(flat_after))
            if flat_before.get(k, _UNSET) != flat_after.get(k, _UNSET)]


_UNSET = object()
#: The encoder's fields, top-level in the fingerprint, by the settings that give them.
_ENCODER_SETTINGS = {"encoder": "encoding.model", "encoder_sha256": "encoding.model content",
                     "embedding_mode": "encoding.embedding_mode",
                     "window_tokens": "encoding.window_tokens",
                     "window_stride": "encoding.window_stride",
                     "chunk_max_tokens": "encoding.chunk_max_tokens",
                     "precision": "encoding.mixed_precision (precision)",
                     "weights": "encoding.weights (alpha)"}


def _named(fields: Mapping[str, Any]) -> dict[str, Any]:
    """`_flat` FIELDS, each under the name of the setting a user changes."""
    return {_ENCODER_SETTINGS.get(k, k): v for k, v in _flat(fields).items()}


def reindex_note(n: int, changes: list[str], shown: int = 6) -> str:
    """The run's note for N documents re-indexed because the index settings CHANGES
    (`setting_changes`; the first SHOWN named)."""
    more = f"; {len(changes) - shown} more" if len(changes) > shown else ""
    named = (f" ({'; '.join(changes[:shown])}{more})" if changes else
             " (the database records no settings for them: a schema version 1 or 2 "
             "database, or documents written by `Store` directly)")
    return f"{n} documents indexed with other index settings are re-indexed with this run's{named}"


def _flat(fields: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if isinstance(value, Mapping):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _shown(value: Any) -> str:
    return "unset" if value is _UNSET else json.dumps(value, default=str)
