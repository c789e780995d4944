"""The settings of a flow run: the `settings` parameter, or else the `config` file.

The command line loads the settings once, before any work (`sproutrag.flows.preflight`: --config,
`SPROUTRAG_*` environment, flags such as --no-progress or `evaluate --weights` applied to
the object), and hands that `Settings` object to the flow as its `settings` parameter:
nothing reaches a flow through the process environment. A deployment run
(infra/prefect.yaml) passes `config` (a YAML path, or none) and no `settings`: the flow
then loads them from that file and the worker's environment, as before.

Prefect stores every flow run's parameters (JSON): a `Settings` object is stored with its
credentials (`SecretStr` fields) written as "**********", never their values; in the
flow's process the object keeps them. Give credentials through the environment, not in a
`settings` parameter typed into a deployment run (it would be stored as typed).
"""

from __future__ import annotations

from sproutrag.schemas.settings import Settings, SettingsError, load_settings


class SettingsParameterError(ValueError):
    """A flow run was given both `settings` and `config`."""


def flow_settings(settings: Settings | None, config: str | None) -> Settings:
    """SETTINGS as given, or loaded from CONFIG and the environment when None; a device
    this machine cannot use is refused here, before the run touches anything."""
    from sproutrag.encoder.loading import device_problem

    if settings is None:
        settings = load_settings(config)
    elif config is not None:
        raise SettingsParameterError(
            f"give the flow either settings or config, not both (config {config!r}): the "
            "settings object already holds what the config file says")
    problem = device_problem(settings.encoding.device)
    if problem:
        raise SettingsError(f"invalid settings: encoding.device {problem}")
    return settings
