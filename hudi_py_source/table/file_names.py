"""Names of base and log files (J6 FSUtils): the file name is how a reader learns a file's
file group, the instant that wrote it and, for logs, its place in the slice."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

UNKNOWN_WRITE_TOKEN = "1-0-1"
DEFAULT_WRITE_TOKEN = "0-0-0"
LOGFILE_BASE_VERSION = 1

# fileId has no "_" (hudi-rs splits the stem into exactly three parts); the instant is digits.
_BASE_RE = re.compile(r"^([^._][^_]*)_([^_]+)_(\d+)(\.[A-Za-z0-9]+)$")
_LOG_RE = re.compile(r"^\.(.+)_(.*)\.(log|archive)\.(\d+)(?:_((\d+)-(\d+)-(\d+))(\.cdc)?)?$")


@dataclass(frozen=True)
class BaseFileName:
    file_id: str
    write_token: str
    instant_time: str
    ext: str


@dataclass(frozen=True)
class LogFileName:
    file_id: str
    base_instant: str
    version: int
    write_token: str | None
    suffix: str
    extension: str = "log"


def make_base_file_name(file_id: str, write_token: str, instant: str, ext: str = ".parquet") -> str:
    return f"{file_id}_{write_token}_{instant}{ext}"


def parse_base_file_name(name: str) -> BaseFileName | None:
    """None for anything that is not a base file (logs, partition metadata, foreign files)."""
    match = _BASE_RE.match(name)
    if match is None:
        return None
    return BaseFileName(match.group(1), match.group(2), match.group(3), match.group(4))


def make_log_file_name(file_id: str, base_instant: str, version: int, write_token: str) -> str:
    return f".{file_id}_{base_instant}.log.{version}_{write_token}"


def parse_log_file_name(name: str) -> LogFileName | None:
    match = _LOG_RE.match(name)
    if match is None:
        return None
    return LogFileName(
        file_id=match.group(1),
        base_instant=match.group(2),
        version=int(match.group(4)),
        write_token=match.group(5),
        suffix=match.group(9) or "",
        extension=match.group(3),
    )


def log_file_sort_key(log: LogFileName) -> tuple[str, int, tuple[bool, str], str]:
    """LogFileComparator: base instant, version, write token (absent first), suffix."""
    token = log.write_token
    return (log.base_instant, log.version, (token is not None, token or ""), log.suffix)


def new_file_id(n: int = 0) -> str:
    """`<uuid4>-<n>`; n numbers the files one write handle factory opens, 0 for the first."""
    return f"{uuid.uuid4()}-{n}"


def write_token(partition_id: int, stage_id: int, attempt_id: int) -> str:
    """Distinct per task attempt, so two attempts writing the same file group never collide."""
    return f"{partition_id}-{stage_id}-{attempt_id}"


def is_data_file(name: str) -> bool:
    return parse_base_file_name(name) is not None or parse_log_file_name(name) is not None
