"""Settings -> `Encoder`: the one factory, and the one cache of encoders in a process.

`encoder_from_settings` builds an Encoder from `EncodingSettings` (model, device, batch
and window sizes, embedding mode, the weights file or the packaged default) and applies
`encoding.threads` (torch's CPU threads, process-wide) when set.
`shared_encoder` returns the process's encoder for those settings, built once per
distinct settings, so the model, its weights file and its content hash are read once
per process; the CLI, the Prefect tasks and `Retriever`'s default all take it from here.
Concurrent callers are serialised by the Encoder itself (`Encoder.lock`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sproutrag.encoder.encoder import Encoder
    from sproutrag.schemas.settings import EncodingSettings, Settings


def encoder_from_settings(encoding: EncodingSettings, weights: Any = None) -> Encoder:
    """A new Encoder for ENCODING; WEIGHTS (TrainedWeights) replace the settings'
    weights file (default: `encoding.weights`, else the packaged weights)."""
    from sproutrag.encoder.encoder import Encoder
    from sproutrag.encoder.weights import load_default_weights

    if encoding.threads:
        import torch

        torch.set_num_threads(encoding.threads)  # process-wide: the encoder is the CPU user
    return Encoder(
        encoding.model, device=encoding.device, tokens_per_batch=encoding.tokens_per_batch,
        window_tokens=encoding.window_tokens, window_stride=encoding.window_stride,
        chunk_max_tokens=encoding.chunk_max_tokens, embedding_mode=encoding.embedding_mode,
        weights=weights if weights is not None else load_default_weights(encoding.weights),
        mixed_precision=encoding.mixed_precision,
    )


@functools.lru_cache(maxsize=4)
def _cached(encoding_json: str) -> Encoder:
    from sproutrag.schemas.settings import EncodingSettings

    return encoder_from_settings(EncodingSettings.model_validate_json(encoding_json))


def shared_encoder(settings: Settings | EncodingSettings) -> Encoder:
    """The process's Encoder for these settings (or their `encoding` section): one per
    distinct encoding settings (the four most recent)."""
    encoding = getattr(settings, "encoding", settings)
    return _cached(encoding.model_dump_json())
