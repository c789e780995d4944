"""Settings and parameter models.

Precedence, highest first: explicit overrides (CLI flags, flow parameters), then
`SPROUTRAG_*` environment variables (nested with `__`, e.g.
`SPROUTRAG_ENCODING__DEVICE=cpu`), then the YAML file given with `--config`, then the
defaults below.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)
from sproutrag.schemas.paths import is_s3


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChunkingSettings(_Section):
    sentences_per_chunk: int = Field(2, ge=1, description="Sentences per evidence unit")
    max_chunk_chars: int = Field(1000, ge=16, description="Longer sentences are cut into pieces")
    within_paragraphs: bool = Field(
        False, description="A chunk never spans a blank line (a lone heading line joins the "
        "paragraph after it)",
    )
    respect_structure: bool = Field(
        True, description="A unit ends where a block ends (blank line, list item, "
        "heading-like line end) and a heading starts a unit, never ends one: no unit "
        "carries the next section's heading (docs/results.md, evidence units; false: a "
        "unit may run past a block end)",
    )
    join_max_chars: int | None = Field(
        600, ge=16, description="Sentences join into one unit only while it stays within "
        "this many characters (a longer sentence is a unit of its own, whole; cut only "
        "above max_chunk_chars): shorter units where sentences are long, for char "
        "precision (docs/results.md, unit shapes); null: sentences join up to "
        "max_chunk_chars",
    )


    lists: bool = Field(
        False, description="With respect_structure: bulleted lines (- * •) start list "
        "items, runs of heading-like lines obey join_max_chars and a list of 3 or more "
        "of them does not join the sentence after it, and lone CR line ends count as line "
        "ends. Off by default: on ContractNLI dev it cost 0.09 unit IE (1.4 SE) "
        "(docs/results.md, units of structured text); true changes the index fingerprint",
    )
    sentence_rules: Literal[1, 2] = Field(
        2, description="How sentences are split. 2: titles and references before a name or "
        "number stay whole (Gen., Tab., Approx.), and a period after a short word or "
        "initials before a lower-case word is no sentence end (5 mg b.i.d. p.o. for, $1.2 "
        "bn. in, Ph.D.) in text that capitalises its sentences, and an opening quote or "
        "bracket after a period starts the sentence it opens. 1: the splitter before "
        "0.11, to keep an index built before it without re-indexing (2 changes the index "
        "fingerprint of a database built before 0.11)",
    )


class EncodingSettings(_Section):
    model: str | None = Field(None, description="Model path or name; None = packaged MiniLM-L6")
    device: str | None = Field(
        None, description="cpu, cuda, cuda:N, mps or auto; None / auto = cuda when present. A "
        "device this machine cannot use is refused before a run starts",
    )
    tokens_per_batch: int | None = Field(
        None, ge=512, description="Padded tokens per forward batch; None = 16384 on cuda, "
        "2048 on CPU (bigger CPU batches only stream bigger tensors through memory)",
    )
    threads: int | None = Field(
        None, ge=1, description="torch CPU threads while encoding; None = torch's default "
        "(every core). 1 on a machine shared with other jobs (docs/decisions.md)",
    )
    window_tokens: int = Field(512, ge=32, le=512)
    window_stride: int | None = Field(
        None, ge=16, description="Tokens between window starts; None = window_tokens - 2 "
        "(windows share one chunk; 256 = the half-overlapping windows of before: twice the "
        "window passes, the same shipped retrieval, docs/decisions.md)",
    )
    chunk_max_tokens: int = Field(256, ge=16, le=512)
    embedding_mode: Literal["alone", "context"] = "alone"
    mixed_precision: bool = Field(
        False, description="On cuda, encode under bf16 (or fp16) autocast instead of float32: "
        "no faster for MiniLM, and its trees differ from a CPU's where merges nearly tie "
        "(the index fingerprint then names the precision; docs/decisions.md)",
    )
    weights: str | None = Field(
        None, description="Aggregation weights file; None = the packaged default (or uniform)"
    )


    @field_validator("device")
    @classmethod
    def _device_named(cls, value: str | None) -> str | None:
        if value is None or re.fullmatch(r"auto|cpu|cuda|cuda:\d+|mps", value):
            return value
        raise ValueError("not a device: use cpu, cuda, cuda:N (N a number), mps or auto")


class TreeSettings(_Section):
    parent_embedding: Literal["mean_of_children", "size_weighted"] = Field(
        "size_weighted",
        description="Parent vectors: size_weighted = mean of the node's leaves (default, "
        "better on dev: docs/results.md); mean_of_children = the paper's (e_u + e_v) / 2",
    )


class SearchSettings(_Section):
    n_docs: int = Field(8, ge=1, le=10_000, description="Documents a query without doc_ids "
                        "searches (more while they hold fewer than k evidence units)")
    first_stage: Literal["hybrid", "vector"] = Field(
        "hybrid", description="How a query without doc_ids picks its documents: hybrid = "
        "nearest nodes and LanceDB's full-text index over the leaves, fused by reciprocal "
        "rank; vector = nearest nodes only",
    )
    entity_ranking: bool = Field(
        True, description="With the hybrid first stage, also rank documents by the "
        "full-text index's best leaves for the question's entities alone (its runs of "
        "capitalised words: a company, a party, a case), fused with the other two rankings: "
        "a named document's few rare words are not drowned by the question's common ones",
    )
    ranking_leaders: int = Field(
        0, ge=0, le=10_000, description="With the hybrid first stage, the first documents "
        "of each of its rankings (nearest nodes, full-text index, entities) that are "
        "among the n_docs it chooses whatever the fused order says: a document only the "
        "full-text index ranks high is searched too (0: the fused order alone)",
    )
    anchor_leaves: int = Field(
        32, ge=0, le=2**31 - 1, description="A query without doc_ids takes BM25's "
        "collection and the standardisation of its scores from the first stage's leading "
        "documents until they hold this many leaves, so that look-alike documents further "
        "down do not change how the leading one ranks its own leaves (0: from every "
        "searched document)",
    )
    link_weight: float = Field(
        3.0, ge=0, le=1e6, description="In a query without doc_ids, the score points "
        "(z-units) every unit of a searched document gains when the question or the best "
        "unit's document names it by its title or heading-like first line: the second "
        "document of a question about two (0: off)",
    )
    leader_weight: float = Field(
        2.0, ge=0, le=1e6, description="In a query without doc_ids, the score points every "
        "unit of the best unit's document gains when it (or the question) names another "
        "searched document: a link is evidence that it is the question's first document "
        "(0: off)",
    )
    fetch_named: int = Field(
        1, ge=0, le=10_000, description="In a query without doc_ids, at most this many "
        "documents the first stage did not choose are searched too when the question or "
        "the best unit writes their name (a name no other document has; "
        "`documents.name`): the second document of a question about two, found by the "
        "name the first one gives it (0: off)",
    )

    mention_weight: float = Field(
        3.0, ge=0, le=1e6, description="In a query without doc_ids, the score points every "
        "unit of a searched document gains when it is the only searched document whose "
        "text writes an entity the question names (a run of capitalised words: a company, "
        "a party, a case): the document a question about one of many look-alikes asks "
        "about (0: off)",
    )

    fetch_mentioned: int = Field(
        1, ge=0, le=10_000, description="In a query without doc_ids, at most this many "
        "documents the first stage did not choose are searched too when each is the only "
        "document of the corpus whose text writes an entity the question names (looked up "
        "in the full-text index): the named document a question about one of many "
        "look-alikes asks about, when the question's other words match look-alikes better "
        "(0: off)",
    )
    mention_statistics: bool = Field(
        True, description="In a query without doc_ids that names two or more searched "
        "documents (each the only one writing an entity of the question) holding "
        "anchor_leaves leaves together, BM25's collection and the standardisation of the "
        "scores come from those documents, as a search within them would take them",
    )

    long_mention_weight: float = Field(
        6.0, ge=0, le=1e6, description="The points instead of mention_weight when the "
        "documents the question names hold anchor_leaves leaves together (long documents: "
        "agreements, reports), where a named document is the one the question asks about "
        "and its weaker units should still come before its look-alikes' (mention_weight's "
        "value: one weight for all)",
    )

    mention_alone: bool = Field(
        True, description="In a query without doc_ids whose named documents (each the only "
        "searched one writing an entity of the question), one or more, hold anchor_leaves "
        "leaves together, only those documents are searched, as a query restricted to "
        "their doc_ids would search them: a question naming the agreement or report it asks "
        "about gets that document's answer, not its look-alikes'",
    )

    dominant_ratio: float = Field(
        0.0, ge=0, le=1e6, description="In a query without doc_ids, an entity the question "
        "names that two or more searched documents write also names the one that writes it "
        "at least this many times as often per word of its text as every other (a report "
        "citing a competitor shares its name; 0: off, the default: on the training pools "
        "it lowered retrieval quality)",
    )

    def retriever_options(self) -> dict[str, Any]:
        """The `Retriever` arguments these settings give (n_docs, first_stage,
        entity_ranking, ranking_leaders, anchor_leaves, link_weight, leader_weight, fetch_named,
        mention_weight, fetch_mentioned, mention_statistics, long_mention_weight,
        mention_alone, dominant_ratio)."""
        return {"n_docs": self.n_docs, "first_stage": self.first_stage,
                "entity_ranking": self.entity_ranking,
                "ranking_leaders": self.ranking_leaders,
                "anchor_leaves": self.anchor_leaves, "link_weight": self.link_weight,
                "leader_weight": self.leader_weight, "fetch_named": self.fetch_named,
                "mention_weight": self.mention_weight,
                "fetch_mentioned": self.fetch_mentioned,
                "mention_statistics": self.mention_statistics,
                "long_mention_weight": self.long_mention_weight,
                "mention_alone": self.mention_alone,
                "dominant_ratio": self.dominant_ratio}


class PipelineSettings(_Section):
    batch_chars: int = Field(
        200_000, ge=1, description="Characters per chunk/encode/store batch: a batch closes "
        "before the document that would overflow it (a longer document is a batch of its "
        "own), so small and large documents make batches of about the same work"
    )
    batch_docs: int = Field(
        1000, ge=1, description="Documents per batch at most (batch_chars usually closes a "
        "batch first)"
    )
    work_dir: str | None = Field(
        None, description="Base folder (or s3:// prefix) of the runs' Parquet intermediates; "
        "None = <db>/_work. A run creates and removes only its own sproutrag-run-<id> folder"
    )
    progress: bool = True
    max_inflight_batches: int = Field(
        2, ge=1, description="Batches chunked/encoded ahead of the store (bounds memory)"
    )
    lock_timeout: float = Field(
        0.0, ge=0, description="Seconds to wait for another run's lock (0: refuse at once)"
    )
    keep_versions_days: float = Field(
        7.0, ge=0, description="An index run keeps the LanceDB version of documents and "
        "nodes it started from and its final one, and removes every other version it "
        "wrote; the start versions of earlier runs are kept this many days (a reader may "
        "still use them; their files cost the rows rewritten since). 0: only the version "
        "before the run and the final one"
    )
    compact_fragments: int = Field(
        32, ge=2, description="While a run writes, compact documents or nodes (merge small "
        "fragments, fold new rows into the scalar indexes, remove the run's intermediate "
        "versions) whenever this many of their fragments are small"
    )
    optimize_fragments: int = Field(
        8, ge=1, description="At the end of a run, compact documents and nodes once they "
        "hold this many small fragments, and optimize runs once it holds this many "
        "fragments ..."
    )
    prune_versions: int = Field(
        1, ge=1, description="... or this many versions older than keep_versions_days "
        "(besides the latest, which is always kept)"
    )
    listing_fast_path: bool = Field(
        True, description="Decide that a file is unchanged, without reading it, when its "
        "size and modification time (an S3 object: size and ETag) equal those stored with "
        "its row, as rsync and make do; the content hash stays the document's identity. "
        "false: read and hash every document every run (--full also reads everything)"
    )
    max_delete_share: float = Field(
        0.5, ge=0, le=1, description="A run that would delete more than this share of the "
        "indexed documents (or any, from an empty corpus) refuses unless allow_mass_delete"
    )
    max_failed_share: float = Field(
        0.0, ge=0, le=1, description="An index run ends Failed when more than this share "
        "of the corpus's documents failed (0: any failure)"
    )
    max_failed_query_share: float = Field(
        0.0, ge=0, le=1, description="A query-corpus run ends Failed when more than this "
        "share of its queries failed (0: any failure)"
    )
    task_runner: Literal["threads", "dask"] = Field(
        "threads", description="Runner of the per-batch chunk/encode/build_trees tasks"
    )
    dask_address: str | None = Field(
        None, description="Scheduler of an existing Dask cluster (tcp://host:8786); "
        "None = a local cluster of dask_workers processes"
    )
    dask_workers: int = Field(2, ge=1, description="Workers of the local Dask cluster")
    allow_external_symlinks: bool = Field(
        False, description="Index a corpus folder's symlinks whose target lies outside the "
        "folder (off: they are skipped and reported)"
    )
    include_hidden: bool = Field(
        False, description="Index a corpus folder's hidden files and folders, whose names "
        "start with a dot (.git/, .ipynb_checkpoints/; off: left out, as file browsers do)"
    )
    max_doc_bytes: int = Field(
        100_000_000, ge=1, description="Largest corpus file (or JSONL line) read, in bytes; "
        "checked before reading: a larger one fails, named with its size"
    )
    max_doc_chars: int = Field(
        20_000_000, ge=1, description="Longest document text indexed, in characters "
        "(Unicode code points); a longer one fails"
    )





class StorageSettings(_Section):
    """Object storage for s3:// corpora, work dirs and databases.

    Credentials come from these fields (SecretStr: never printed, logged or stored) or,
    when unset, from the standard AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
    AWS_SESSION_TOKEN environment (and then botocore's usual chain: profiles, instance
    roles). Keep them out of YAML files you commit: use the environment.
    """

    endpoint: str | None = Field(
        None, description="S3-compatible endpoint, e.g. http://127.0.0.1:9000; None = AWS"
    )
    region: str | None = Field(
        None, description="None = AWS_REGION / AWS_DEFAULT_REGION from the environment"
    )
    allow_http: bool = Field(False, description="Allow a plain-http endpoint (LanceDB)")
    access_key_id: SecretStr | None = None
    secret_access_key: SecretStr | None = None
    session_token: SecretStr | None = None

    def _secret(self, value: SecretStr | None, env: str) -> str | None:
        return value.get_secret_value() if value is not None else os.environ.get(env) or None

    def credentials(self) -> tuple[str | None, str | None, str | None]:
        return (
            self._secret(self.access_key_id, "AWS_ACCESS_KEY_ID"),
            self._secret(self.secret_access_key, "AWS_SECRET_ACCESS_KEY"),
            self._secret(self.session_token, "AWS_SESSION_TOKEN"),
        )

    def resolved_region(self) -> str | None:
        return self.region or os.environ.get("AWS_REGION") or os.environ.get(
            "AWS_DEFAULT_REGION"
        ) or None

    def fsspec_options(self, url: str | Path) -> dict[str, Any]:
        """s3fs options for URL ({} for local paths and other protocols)."""
        if not is_s3(url):
            return {}
        key, secret, token = self.credentials()
        opts: dict[str, Any] = {}
        if key and secret:
            opts.update(key=key, secret=secret)
            if token:
                opts["token"] = token
        if self.endpoint:
            opts["endpoint_url"] = self.endpoint
        if region := self.resolved_region():
            opts["client_kwargs"] = {"region_name": region}
        return opts

    def lance_options(self, url: str | Path) -> dict[str, str] | None:
        """LanceDB `storage_options` for URL (None for local paths)."""
        if not is_s3(url):
            return None
        key, secret, token = self.credentials()
        opts: dict[str, str] = {}
        if key and secret:
            opts.update(aws_access_key_id=key, aws_secret_access_key=secret)
            if token:
                opts["aws_session_token"] = token
        if self.endpoint:
            opts["endpoint"] = self.endpoint
        if region := self.resolved_region():
            opts["region"] = region
        if self.allow_http or (self.endpoint or "").startswith("http://"):
            opts["allow_http"] = "true"
        return opts


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="SPROUTRAG_", env_nested_delimiter="__", extra="forbid"
    )

    chunking: ChunkingSettings = ChunkingSettings()
    encoding: EncodingSettings = EncodingSettings()
    tree: TreeSettings = TreeSettings()
    search: SearchSettings = SearchSettings()
    pipeline: PipelineSettings = PipelineSettings()
    storage: StorageSettings = StorageSettings()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings)  # the YAML file: `load_settings`


class SettingsError(ValueError):
    """Invalid settings: names the environment variable, file or setting that is wrong,
    never its value (it may be a secret)."""


class ConfigFileError(SettingsError):
    """The YAML settings file is missing or invalid."""


#: SPROUTRAG_* environment variables that are not settings (test hooks).
NON_SETTING_VARIABLES = frozenset({"SPROUTRAG_CRASH_AT"})
ENV_PREFIX = "SPROUTRAG_"


def check_environment(environ: dict[str, str] | None = None) -> None:
    """Refuse SPROUTRAG_* variables that name no settings section (pydantic-settings
    would silently ignore `SPROUTRAG_PIPELNE__BATCH_DOCS`); unknown fields of a known
    section are refused by the section's model."""
    sections = sorted(Settings.model_fields)
    bad = []
    for key in sorted(os.environ if environ is None else environ):
        name = key.upper()
        if not name.startswith(ENV_PREFIX) or name in NON_SETTING_VARIABLES:
            continue
        section = name[len(ENV_PREFIX):].partition("__")[0].lower()
        if section not in sections:
            bad.append(key)
    if bad:
        raise SettingsError(
            f"environment variable{'s' if len(bad) > 1 else ''} {', '.join(bad)}: no such "
            f"settings section (sections: {', '.join(sections)}; nested fields use '__', "
            "e.g. SPROUTRAG_PIPELINE__BATCH_DOCS)"
        )


def _read_yaml(path: Path) -> dict[str, Any]:
    """The YAML file's mapping; errors name the file and the line, never the content."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigFileError(f"config file {str(path)!r} is not UTF-8 text") from None
    except OSError as exc:
        raise ConfigFileError(
            f"config file {str(path)!r} cannot be read: {exc.strerror}"
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise ConfigFileError(f"config file {str(path)!r} is not valid YAML{where}: "
                              f"{problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigFileError(
            f"config file {str(path)!r} must be a mapping of settings sections "
            f"({', '.join(Settings.model_fields)}), not a {type(data).__name__}"
        )
    return data


def _env_source(loc: tuple[str, ...]) -> str | None:
    """The environment variable that set the setting at LOC, if one did."""
    names = [ENV_PREFIX + "__".join(loc[:2]).upper(), ENV_PREFIX + loc[0].upper()]
    present = {k.upper(): k for k in os.environ}
    return next((present[n] for n in names if n in present), None)


def _describe(errors: list[dict[str, Any]], *, config_file: Path | None, stage: str) -> str:
    """One line per problem: where the value came from and what is wrong (no values)."""
    lines = []
    for err in errors:
        loc = tuple(str(x) for x in err["loc"])
        name = ".".join(loc)
        if err["type"] == "extra_forbidden":
            model = Settings.model_fields.get(loc[0]) if len(loc) > 1 else None
            valid = ", ".join(model.annotation.model_fields) if model else ", ".join(
                Settings.model_fields)
            msg = f"unknown setting {name!r} (misspelled? valid here: {valid})"
        else:
            msg = f"{name}: {err['msg']}"
        env = _env_source(loc) if stage == "sources" and loc else None
        if env is not None:
            source = f"environment variable {env}"
        elif stage == "sources" and config_file is not None:
            source = f"config file {str(config_file)!r}"
        elif stage == "overrides":
            source = "command-line flag or flow parameter"
        else:
            source = "settings"
        lines.append(f"{source}: {msg}")
    return "invalid settings: " + "; ".join(lines)


def load_settings(config_file: str | Path | None = None, **overrides: Any) -> Settings:
    """Build settings from overrides > environment > YAML file > defaults.

    `overrides` are nested dicts by section, e.g. `encoding={"device": "cpu"}`; a section
    given here is merged over the lower layers key by key. Invalid settings raise
    `SettingsError` naming the variable, file or setting, never the value.
    """
    from pydantic import ValidationError

    path = Path(config_file) if config_file is not None else None
    if path is not None and not path.is_file():
        raise ConfigFileError(f"config file {str(config_file)!r} does not exist")
    check_environment()
    yaml_data = _read_yaml(path) if path is not None else {}

    class _Yaml(PydanticBaseSettingsSource):
        def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
            return yaml_data.get(field_name), field_name, False

        def __call__(self) -> dict[str, Any]:
            return dict(yaml_data)

    class _Sources(Settings):
        @classmethod
        def settings_customise_sources(cls, settings_cls, init_settings, env_settings,
                                       **_: Any) -> tuple[PydanticBaseSettingsSource, ...]:
            return (init_settings, env_settings, _Yaml(settings_cls))

    problem = None
    try:
        merged = _Sources().model_dump()
    except ValidationError as exc:  # described outside: no exception context with values
        problem = _describe(exc.errors(include_input=False, include_url=False),
                            config_file=path, stage="sources")
    except ValueError as exc:  # pydantic-settings: a section variable that is not JSON
        field = str(exc).split('"')[1] if str(exc).count('"') >= 2 else "?"
        problem = (f"invalid settings: environment variable {ENV_PREFIX}{field.upper()}: "
                   "not a JSON object (or set its fields one by one, e.g. "
                   f"{ENV_PREFIX}{field.upper()}__NAME)")
    if problem is not None:
        raise SettingsError(problem)
    for section, values in overrides.items():
        if section not in merged:
            raise SettingsError(f"unknown settings section {section!r}")
        merged[section].update({k: v for k, v in values.items() if v is not None})
    try:
        return Settings.model_validate(merged)
    except ValidationError as exc:
        problem = _describe(exc.errors(include_input=False, include_url=False),
                            config_file=path, stage="overrides")
    raise SettingsError(problem)
