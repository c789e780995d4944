"""Checks the command line makes before it starts Prefect or loads a model.

Argument types refuse bad values at parse time (argparse's exit code 2: `--k 0`,
`--threshold nan`); `preflight` then validates the settings (environment and YAML),
the files the arguments name, the model and weights the settings name, and that a local
database folder can be written, so that the commonest mistakes cost a fraction of a
second and print one line, not a traceback after the model has loaded.
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING

from sproutrag.flows.preflight_s3 import check_s3_paths, cli_paths
from sproutrag.schemas.paths import is_s3

if TYPE_CHECKING:  # pydantic is imported by the checks, not by `sproutrag --help`
    from sproutrag.schemas.settings import EncodingSettings, Settings

    from sproutrag.encoder.weights import TrainedWeights


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    value = finite_float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


class UsageError(ValueError):
    """The command line cannot run as given (exit code 2)."""


def _existing_file(flag: str, path: str | None) -> None:
    if path is not None and not is_s3(path) and not Path(path).is_file():
        what = "a folder, not a file" if Path(path).is_dir() else "no such file"
        raise UsageError(f"{flag} {path}: {what}")


def _check_context_flags(args: argparse.Namespace) -> None:
    """--selection and --cutoff shape a budgeted context, --tokenizer counts a token
    budget: with a QUESTION and no such budget they would be ignored (a batch line may
    bring its own budget)."""
    from sproutrag.params import DEFAULT

    if args.tokenizer is not None and args.budget_tokens is None:
        raise UsageError("--tokenizer counts --budget-tokens: add --budget-tokens N (a "
                         "character budget is counted in characters)")
    if args.budget_chars is not None or args.budget_tokens is not None:
        _check_top_k_flags(args)
        return
    given = [flag for flag, unset in (("--selection", args.selection is None),
                                      ("--cutoff", args.cutoff is DEFAULT)) if not unset]
    if given:
        verb = "shapes" if len(given) == 1 else "shape"
        raise UsageError(f"{' and '.join(given)} {verb} a budgeted context: add "
                         "--budget-chars N or --budget-tokens N")


def _check_top_k_flags(args: argparse.Namespace) -> None:
    """--beam, --threshold and --margin shape the k best units of a search: a budget
    (the command's, so every query is a context) ranks evidence by --cutoff instead."""
    from sproutrag.params import DEFAULT

    given = [flag for flag, unset in (("--beam", args.beam is None),
                                      ("--threshold", args.threshold is None),
                                      ("--margin", args.margin is DEFAULT)) if not unset]
    if given:
        verb = "shapes" if len(given) == 1 else "shape"
        raise UsageError(f"{' and '.join(given)} {verb} a top-k search, not a budgeted "
                         "context: drop it, or use --cutoff C (how far below the best "
                         "unit the context still takes evidence)")


def _check_question(question: str) -> None:
    """A command-line QUESTION is text to search for (UsageError: exit 2, before a model
    loads)."""
    from sproutrag.search.hits import QueryError, check_query_text

    try:
        check_query_text(question)
    except QueryError as exc:
        raise UsageError(str(exc)) from None


def check_encoding(settings: Settings, *, model: bool = True,
                   weights_flag: str | None = None) -> None:
    """The model folder and weights file the settings name can be read (SettingsError
    naming the setting otherwise); WEIGHTS_FLAG: a command's `--weights FILE`, which
    replaces `encoding.weights`."""
    from sproutrag.schemas.settings import SettingsError

    from sproutrag.encoder.identity import model_sha256
    from sproutrag.encoder.loading import device_problem
    from sproutrag.encoder.weights import WeightsFileError, load_default_weights

    enc = settings.encoding
    problem = device_problem(enc.device)
    if problem:
        raise SettingsError(f"invalid settings: encoding.device {problem}")
    if model and enc.model is not None:
        try:
            model_sha256(enc.model)
        except FileNotFoundError as exc:  # ModelNotFoundError
            said = str(exc)
            raise SettingsError(said if said.startswith("encoding.model")
                                else f"encoding.model: {said}") from None
    weights = None
    path, setting = ((weights_flag, "--weights") if weights_flag
                     else (enc.weights, "encoding.weights"))
    if path is not None:
        try:
            weights = load_default_weights(path)
        except WeightsFileError as exc:
            raise SettingsError(f"{setting}: {exc}") from None
    if model:
        _check_model_fits(enc, weights, setting)


def _check_model_fits(enc: EncodingSettings, weights: TrainedWeights | None,
                      setting: str = "encoding.weights") -> None:
    """A local model folder holds the windows the settings ask for (its positions) and
    the weights file they name (SETTING) fits its layers x heads (SettingsError naming
    the setting and the model otherwise; a hub model is checked when it loads)."""
    from sproutrag.schemas.settings import SettingsError

    from sproutrag.encoder.loading import load_config, resolve_model, window_problem
    from sproutrag.encoder.weights import WeightsMismatchError, for_model

    path, model_id = resolve_model(enc.model)
    if not Path(path).is_dir():
        return
    config = load_config(path)
    problem = window_problem(model_id, int(config.max_position_embeddings),
                             enc.window_tokens, enc.chunk_max_tokens)
    if problem:
        raise SettingsError(problem)
    if weights is None:
        return
    try:
        for_model(weights, model_id, int(config.num_hidden_layers),
                  int(config.num_attention_heads))
    except WeightsMismatchError as exc:
        raise SettingsError(f"{setting}: {exc}") from None


def check_writable(db: str) -> None:
    """A local database folder (or the folder it will be created in) can be written."""
    if is_s3(db) or "://" in db:
        return
    path = _nearest_existing(db)
    if not path.is_dir():
        raise NotADirectoryError(f"--db {db}: {path} is not a folder")
    if not os.access(path, os.W_OK | os.X_OK):
        raise PermissionError(
            f"cannot write the database folder {db!r} ({path} is read-only or not yours): "
            "choose a --db you can write to"
        )


def _not_a_file(flag: str, value: str | None) -> None:
    """A folder a command writes: UsageError when VALUE names a file (or lies under one)."""
    if value is None or is_s3(value):
        return
    path = _nearest_existing(value)
    if not path.is_dir():
        raise UsageError(f"{flag} {value}: {path} is a file, not a folder: give a folder")


def _nearest_existing(value: str) -> Path:
    """VALUE as an absolute path, or its nearest parent that exists (where it would be
    created)."""
    path = Path(value).expanduser().absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _check_query_args(args: argparse.Namespace) -> None:
    """`sproutrag query`'s arguments (UsageError: exit 2, before a model loads)."""
    if (args.question is None) == (args.queries is None):
        hint = ""
        if args.question is None and getattr(args, "doc_id", None):
            hint = (f"; --doc-id took every word after it ({' '.join(args.doc_id)}): "
                    "put the QUESTION before --doc-id, or end its list with --")
        raise UsageError("give either a QUESTION or --queries FILE (and --out FILE)"
                         + hint)
    if args.queries and not args.out:
        raise UsageError("--queries needs --out FILE for the results")
    if args.out and not args.queries:
        raise UsageError(f"--out {args.out}: --out writes the results of --queries "
                         "FILE; a QUESTION's results go to stdout (redirect them: > FILE)")
    if args.mode == "flat" and args.selection not in (None, "leaves"):
        raise UsageError(f"--selection {args.selection} needs --mode tree or leaves: "
                         "mode flat takes leaves by cosine")
    if args.question is not None:
        _check_question(args.question)
        _check_context_flags(args)
    elif args.budget_chars is not None or args.budget_tokens is not None:
        _check_top_k_flags(args)  # the command's budget: every line is a context
    if args.where is not None and args.queries:
        raise UsageError("--where filters a QUESTION; in a --queries file give each "
                         "line its own \"where\"")
    if args.doc_id and args.queries:
        raise UsageError("--doc-id restricts a QUESTION; in a --queries file give each "
                         "line its own \"doc_ids\"")
    _existing_file("--queries", args.queries)


def preflight(args: argparse.Namespace) -> Settings:
    """Validate ARGS and the settings before the command starts any work."""
    from sproutrag.schemas.settings import load_settings

    command = args.command
    for flag in ("db", "corpus", "out"):
        if getattr(args, flag, None) == "":  # "--db $DB" with DB unset
            raise UsageError(f"--{flag} is empty" if flag != "corpus" else "CORPUS is empty")
    if command == "query":
        _check_query_args(args)
    if command in ("train", "evaluate"):
        for flag in ("docs", "queries"):
            value = getattr(args, flag)
            for path in value if isinstance(value, list) else [value]:
                _existing_file(f"--{flag}", path)
        for flag in ("out", "cache", "db"):  # folders it writes: refused now, not after
            _not_a_file(f"--{flag}", getattr(args, flag, None))  # the encoding
    _existing_file("--config", getattr(args, "config", None))
    if command == "evaluate":
        _existing_file("--weights", args.weights)
        if args.corpus_wide and not args.db:
            raise UsageError("--corpus-wide queries a database: give --db DIR too")
    settings = load_settings(getattr(args, "config", None))
    check_encoding(settings, weights_flag=getattr(args, "weights", None))
    if command == "index":
        _check_index_paths(args, settings)
    check_s3_paths(cli_paths(args, settings), settings)  # a listing for each s3:// path
    return settings


def _check_index_paths(args: argparse.Namespace, settings: Settings) -> None:
    """The local corpus, database and work dir of `sproutrag index`."""
    from sproutrag.ingest.corpus import check_corpus

    if not is_s3(args.corpus):  # an s3:// corpus is checked by the flow
        check_corpus(args.corpus)
    check_writable(args.db)
    _check_work_dir(settings.pipeline.work_dir)


def _check_work_dir(work_dir: str | None) -> None:
    """A local `pipeline.work_dir` is (or is now created as) a folder this user writes:
    SettingsError naming the setting otherwise (the run found it after listing the
    corpus, with the system's bare words)."""
    from sproutrag.schemas.settings import SettingsError

    if work_dir is None or "://" in work_dir:
        return
    path = _nearest_existing(work_dir)
    if not path.is_dir():
        raise SettingsError(f"pipeline.work_dir {work_dir}: {path} is a file, not a folder")
    try:  # the run creates it too; access() cannot tell for root (/proc says yes)
        os.makedirs(work_dir, exist_ok=True)
        if not os.access(work_dir, os.W_OK | os.X_OK):
            raise PermissionError(13, "read-only or not yours")
    except OSError as exc:
        raise SettingsError(f"pipeline.work_dir {work_dir}: cannot create or write the "
                            f"folder ({exc.strerror}): choose a folder you can write to"
                            ) from None
