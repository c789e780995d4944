"""Settings and parameter models.

Precedence, highest first: explicit overrides (CLI flags, flow parameters), then
`SPROUTRAG_*` environment variables (nested with `__`, e.g.
`SPROUTRAG_ENCODING__DEVICE=cpu`), then the YAML file given with `--config`, then the
defaults. The sections with plain values (their fields, defaults and descriptions) are in
`sproutrag.schemas.sections`; the storage section, whose credentials fall back to the
environment, is here.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)
from sproutrag.schemas.paths import is_s3
from sproutrag.schemas.sections import (
    ChunkingSettings,
    EncodingSettings,
    PipelineSettings,
    SearchSettings,
    Section,
    TreeSettings,
)

__all__ = [
    "ChunkingSettings", "ConfigFileError", "EncodingSettings", "PipelineSettings",
    "SearchSettings", "Settings", "SettingsError", "StorageSettings", "TreeSettings",
    "check_environment", "is_s3", "load_settings",
]


class StorageSettings(Section):
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

    @field_validator("endpoint")
    @classmethod
    def _endpoint_has_scheme(cls, value: str | None) -> str | None:
        """An endpoint without http:// or https:// made LanceDB panic at the first read."""
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https:// (e.g. http://HOST:PORT; "
                             "the value is not shown: it may hold a secret)")
        return value

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


@functools.cache
def _unique_key_loader() -> type:
    """PyYAML's safe loader, refusing a key given twice in one mapping (PyYAML keeps the
    last, so a second `encoding:` section silently replaced the first)."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            first: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # `<<:` may override
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    seen = key in first
                except TypeError:  # an unhashable key: the base class says what is wrong
                    continue
                if seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"{key!r} is given twice (first at line {first[key]})",
                        key_node.start_mark)
                first[key] = key_node.start_mark.line + 1
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


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
        data = yaml.load(text, Loader=_unique_key_loader())  # noqa: S506 - a safe loader
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
    odd = [k for k in data if not isinstance(k, str)]
    if odd:  # `1: x` made pydantic-settings fail with a TypeError
        raise ConfigFileError(
            f"config file {str(path)!r}: {odd[0]!r} is no settings section (sections: "
            f"{', '.join(Settings.model_fields)})")
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
    merged = _from_sources(path, _read_yaml(path) if path is not None else {})
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


def _from_sources(path: Path | None, yaml_data: dict[str, Any]) -> dict[str, Any]:
    """The environment over YAML_DATA (the file at PATH) over the defaults, as a dict of
    sections; invalid values raise `SettingsError` naming their source."""
    from pydantic import ValidationError

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

    try:
        return _Sources().model_dump()
    except ValidationError as exc:  # described outside: no exception context with values
        problem = _describe(exc.errors(include_input=False, include_url=False),
                            config_file=path, stage="sources")
    except ValueError as exc:  # pydantic-settings: a section variable that is not JSON
        field = str(exc).split('"')[1] if str(exc).count('"') >= 2 else "?"
        problem = (f"invalid settings: environment variable {ENV_PREFIX}{field.upper()}: "
                   "not a JSON object (or set its fields one by one, e.g. "
                   f"{ENV_PREFIX}{field.upper()}__NAME)")
    raise SettingsError(problem)
