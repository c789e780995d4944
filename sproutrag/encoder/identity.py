"""A model's identity by content: sha256 over its config, tokenizer and weight files.

The index fingerprint and the evaluation's feature cache name the encoder by this hash,
not by its folder: fine-tuning again into the same folder changes the identity, so the
next index run re-encodes every document instead of mixing old and new vectors.

Only the top-level files that `AutoModel` / `AutoTokenizer.from_pretrained` read are
hashed (config, tokenizer files, safetensors / PyTorch weights and their shard
indexes); READMEs, sentence-transformers' extras and ONNX or OpenVINO copies in
subfolders are not. Each file's digest is cached per (path, size, mtime, ctime, inode) for the
life of the process, so a second call costs a few `stat`s; a rewritten file (a new
mtime) is read again. numpy-free, torch-free.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import threading
from pathlib import Path

from sproutrag.errors import ModelNotFoundError  # noqa: F401 - also importable from here

#: Top-level files of a model folder that decide what is loaded.
HASHED_FILES = (
    "config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
    "added_tokens.json", "vocab.txt", "vocab.json", "merges.txt", "*.model",
    "*.safetensors", "*.safetensors.index.json", "pytorch_model*.bin",
    "pytorch_model*.bin.index.json",
)

_lock = threading.Lock()
_file_digests: dict[tuple[str, int, int, int, int], str] = {}


def _file_sha256(path: Path) -> str:
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    with _lock:
        found = _file_digests.get(key)
    if found is not None:
        return found
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    digest = h.hexdigest()
    with _lock:
        _file_digests[key] = digest
    return digest


def model_files(folder: str | os.PathLike[str]) -> list[Path]:
    """The files of FOLDER that enter its content hash, sorted by name."""
    folder = Path(folder)
    return sorted(
        p for p in folder.iterdir()
        if p.is_file() and any(fnmatch.fnmatch(p.name, pat) for pat in HASHED_FILES)
    )


def folder_sha256(folder: str | os.PathLike[str]) -> str:
    """sha256 (hex, 16 characters) of a model folder's config, tokenizer and weights."""
    folder = Path(folder).resolve()
    files = model_files(folder)
    check_model_files(folder, [p.name for p in files])
    h = hashlib.sha256(b"sproutrag-model/1")
    for path in files:
        h.update(path.name.encode() + b"\0" + _file_sha256(path).encode() + b"\0")
    return h.hexdigest()[:16]


#: Files a model folder needs besides config.json: weights, and a tokenizer's vocabulary.
_WEIGHTS = ("*.safetensors", "*.safetensors.index.json", "pytorch_model*.bin",
            "pytorch_model*.bin.index.json")
_VOCABULARY = ("tokenizer.json", "vocab.txt", "vocab.json", "*.model")


def check_model_files(folder: Path, names: list[str]) -> None:
    """ModelNotFoundError unless FOLDER (whose hashed files are NAMES) holds a readable
    config.json, a weights file and a tokenizer's vocabulary: what loading needs, checked
    before a run starts (a run that fails every document on it would stamp a new database
    with a model it cannot load)."""
    import json

    missing = [what for what, patterns in (("config.json", ("config.json",)),
                                            ("weights (model.safetensors)", _WEIGHTS),
                                            ("tokenizer (tokenizer.json)", _VOCABULARY))
               if not any(fnmatch.fnmatch(n, pat) for n in names for pat in patterns)]
    if missing:
        raise ModelNotFoundError(
            f"{folder} is not a model folder (no {' and no '.join(missing)}): give the "
            "folder a model was saved to (`save_pretrained`: config.json, weights, "
            "tokenizer)")
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ModelNotFoundError(f"{folder / 'config.json'} cannot be read as JSON "
                                 f"({exc}): save the model again") from None
    if not isinstance(config, dict):
        raise ModelNotFoundError(f"{folder / 'config.json'} is not a JSON object: save the "
                                 "model again")


def _hub_snapshot(name: str) -> str | None:
    """The cached snapshot folder of hub model NAME, or None when it is not cached."""
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(name, local_files_only=True,
                                 allow_patterns=list(HASHED_FILES))
    except Exception:  # noqa: BLE001 - not cached, not a valid repo id, no hub package
        return None


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")


def model_sha256(model: str) -> str | None:
    """Content identity of MODEL (a local folder, or a hub name resolved in the local
    Hugging Face cache). None for a hub model not cached yet while downloads are allowed
    (it is then named by its hub name only). Raises ModelNotFoundError for a path that
    is not a model folder, or an uncached hub name when offline."""
    if Path(model).expanduser().is_dir():
        return folder_sha256(Path(model).expanduser())
    if looks_like_path(model):
        raise ModelNotFoundError(
            f"encoding.model: no model folder at {model!r} (give the folder a model was "
            "saved to, or null for the packaged all-MiniLM-L6-v2)"
        )
    snapshot = _hub_snapshot(model)
    if snapshot is not None:
        return folder_sha256(snapshot)
    if _offline():
        raise ModelNotFoundError(
            f"encoding.model: {model!r} is neither a local model folder nor in the "
            "Hugging Face cache, and downloads are off (HF_HUB_OFFLINE): give a model "
            "folder, or null for the packaged all-MiniLM-L6-v2"
        )
    return None


def looks_like_path(model: str) -> bool:
    """A value meant as a folder, not a hub name ("org/name" or "name")."""
    return (
        model.startswith(("/", ".", "~")) or os.sep in model.strip("/").replace("/", "", 1)
        or model.endswith("/")
    )
