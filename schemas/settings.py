"""Settings and parameter models.

Precedence, highest first: explicit overrides (CLI flags, flow parameters), then
`SPROUTRAG_*` environment variables (nested with `__`, e.g.
`SPROUTRAG_ENCODING__DEVICE=cpu`), then the YAML file given with `--config`, then the
defaults below.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from schemas.tables import SCHEMA_VERSION


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChunkingSettings(_Section):
    sentences_per_chunk: int = Field(2, ge=1, description="Sentences per evidence unit")
    max_chunk_chars: int = Field(1000, ge=16, description="Longer sentences are cut into pieces")


class EncodingSettings(_Section):
    model: str | None = Field(None, description="Model path or name; None = packaged MiniLM-L6")
    device: str | None = Field(None, description="cuda / cpu; None = cuda when present")
    tokens_per_batch: int = Field(16384, ge=512)
    window_tokens: int = Field(512, ge=32, le=512)
    window_stride: int = Field(256, ge=16)
    chunk_max_tokens: int = Field(256, ge=16, le=512)
    embedding_mode: Literal["alone", "context"] = "alone"
    weights: str | None = Field(
        None, description="Aggregation weights file; None = the packaged default (or uniform)"
    )


class TreeSettings(_Section):
    parent_embedding: Literal["mean_of_children", "size_weighted"] = "mean_of_children"


class PipelineSettings(_Section):
    batch_docs: int = Field(8, ge=1, description="Documents per chunk/encode/store batch")
    work_dir: str | None = Field(None, description="Parquet intermediates; None = <db>/_work")
    progress: bool = True
    max_inflight_batches: int = Field(
        2, ge=1, description="Batches chunked/encoded ahead of the store (bounds memory)"
    )
    lock_timeout: float = Field(
        0.0, ge=0, description="Seconds to wait for another run's lock (0: refuse at once)"
    )
    keep_versions_days: float = Field(
        7.0, ge=0, description="LanceDB versions older than this are removed after a run"
    )
    task_runner: Literal["threads", "dask"] = "threads"
    dask_address: str | None = None


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="SPROUTRAG_", env_nested_delimiter="__", extra="forbid"
    )

    chunking: ChunkingSettings = ChunkingSettings()
    encoding: EncodingSettings = EncodingSettings()
    tree: TreeSettings = TreeSettings()
    pipeline: PipelineSettings = PipelineSettings()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, YamlConfigSettingsSource(settings_cls))

    def tree_fields(self) -> dict[str, Any]:
        """Settings (besides the encoder's) that change the stored trees."""
        return {
            "schema_version": SCHEMA_VERSION,
            "chunking": self.chunking.model_dump(),
            "tree": self.tree.model_dump(),
        }


class ConfigFileError(ValueError):
    """The YAML settings file is missing or invalid."""


def load_settings(config_file: str | Path | None = None, **overrides: Any) -> Settings:
    """Build settings from overrides > environment > YAML file > defaults.

    `overrides` are nested dicts by section, e.g. `encoding={"device": "cpu"}`; a section
    given here is merged over the lower layers key by key.
    """
    if config_file is not None and not Path(config_file).is_file():
        raise ConfigFileError(f"config file {str(config_file)!r} does not exist")

    class _FromFile(Settings):
        model_config = SettingsConfigDict(
            env_prefix="SPROUTRAG_", env_nested_delimiter="__", extra="forbid",
            yaml_file=str(config_file) if config_file else None,
        )

    base = _FromFile()
    merged = base.model_dump()
    for section, values in overrides.items():
        if section not in merged:
            raise ConfigFileError(f"unknown settings section {section!r}")
        merged[section].update({k: v for k, v in values.items() if v is not None})
    return Settings.model_validate(merged)


def fingerprint(fields: dict[str, Any]) -> str:
    """Short stable hash of everything that changes the index."""
    blob = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
