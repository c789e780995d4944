"""Path kinds every layer asks about (import-free, so `sproutrag --help` stays instant)."""

from __future__ import annotations

from pathlib import Path

S3_SCHEMES = ("s3://", "s3a://")


def is_s3(url: str | Path) -> bool:
    """URL names an S3 object or prefix (s3:// or s3a://)."""
    return str(url).startswith(S3_SCHEMES)
