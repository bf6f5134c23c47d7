"""Independent readers of Hudi tables (hudi-rs, daft) and order-free table comparisons, for tests only.

Storage options everywhere are the s3fs ones pyhudi itself takes (`key`, `secret`, `token`,
`endpoint_url` or `client_kwargs.endpoint_url`, `client_kwargs.region_name`); each oracle translates
them into its own object-store settings.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

META_COLUMNS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)
_S3FS_KEYS = {"key", "secret", "token", "endpoint_url", "client_kwargs"}
_CLIENT_KEYS = {"endpoint_url", "region_name"}
_MAX_REPORTED = 10


def _s3_settings(storage_options: dict[str, Any] | None) -> dict[str, str]:
    """The S3 settings in s3fs storage options; unknown keys fail loudly rather than being ignored."""
    options = dict(storage_options or {})
    client = dict(options.get("client_kwargs") or {})
    unknown = sorted(set(options) - _S3FS_KEYS)
    unknown += sorted(f"client_kwargs.{k}" for k in set(client) - _CLIENT_KEYS)
    if unknown:
        raise ValueError(f"oracles cannot translate storage options {unknown}")
    settings = {
        "key": options.get("key"),
        "secret": options.get("secret"),
        "token": options.get("token"),
        "endpoint_url": options.get("endpoint_url") or client.get("endpoint_url"),
        "region": client.get("region_name"),
    }
    return {k: str(v) for k, v in settings.items() if v is not None}


def hudi_rs_storage_options(storage_options: dict[str, Any] | None) -> dict[str, str]:
    """hudi-rs (object_store) option names for s3fs storage options."""
    s3 = _s3_settings(storage_options)
    names = {
        "key": "aws_access_key_id",
        "secret": "aws_secret_access_key",
        "token": "aws_session_token",
        "endpoint_url": "aws_endpoint_url",
        "region": "aws_region",
    }
    out = {names[k]: v for k, v in s3.items()}
    if s3.get("endpoint_url", "").startswith("http://"):
        out["aws_allow_http"] = "true"
    return out


def hudi_rs_read(url: str, storage_options: dict[str, Any] | None = None) -> pa.Table:
    """The latest snapshot as hudi-rs reads it, meta columns included."""
    from hudi import HudiTableBuilder

    builder = HudiTableBuilder.from_base_uri(url)
    table = builder.with_storage_options(hudi_rs_storage_options(storage_options)).build()
    batches = table.read()
    if not batches:
        return table.get_schema_with_meta_fields().empty_table()
    return pa.concat_tables([pa.Table.from_batches([b]) for b in batches], promote_options="permissive")


def assert_reads_like_hudi_rs(ours: pa.Table, url: str) -> None:
    """Our snapshot of a table has exactly hudi-rs's rows and columns, in any order.

    On populate.meta.fields=false tables hudi-rs drops the (null) meta columns that Hudi's Spark reader, and
    ours, keep; those are checked to be null and left out of the comparison."""
    theirs = hudi_rs_read(url)
    assert ours.num_rows == theirs.num_rows
    if "_hoodie_commit_time" not in theirs.column_names:
        assert ours.column_names[len(META_COLUMNS):] == theirs.column_names
        assert ours.num_rows == 0 or set(ours.column("_hoodie_record_key").to_pylist()) == {None}
        ours = ours.select(theirs.column_names)
    assert ours.column_names == theirs.column_names
    assert sorted(map(repr, ours.to_pylist())) == sorted(map(repr, theirs.cast(ours.schema).to_pylist()))


def daft_io_config(storage_options: dict[str, Any] | None) -> Any:
    """A daft IOConfig for s3fs storage options, or None when there is nothing to configure."""
    s3 = _s3_settings(storage_options)
    if not s3:
        return None
    from daft.io import IOConfig, S3Config

    endpoint = s3.get("endpoint_url")
    return IOConfig(s3=S3Config(
        endpoint_url=endpoint,
        key_id=s3.get("key"),
        access_key=s3.get("secret"),
        session_token=s3.get("token"),
        region_name=s3.get("region"),
        use_ssl=not (endpoint or "").startswith("http://"),
    ))


def daft_read(url: str, storage_options: dict[str, Any] | None = None,
              columns: Sequence[str] | None = None) -> pa.Table:
    """The latest snapshot as daft's own Hudi reader reads it (base files only, so COW tables).

    `columns` lets a test leave out types daft cannot decode, e.g. the legacy two-level parquet
    lists (`arrayField`) in Apache Hudi's fixtures, on which daft panics.
    """
    import daft

    frame = daft.read_hudi(url, io_config=daft_io_config(storage_options))
    if columns is not None:
        frame = frame.select(*columns)
    return frame.to_arrow()


def _as_list(columns: str | Sequence[str]) -> list[str]:
    return [columns] if isinstance(columns, str) else list(columns)


def sorted_rows(table: pa.Table, key_columns: str | Sequence[str], drop_meta: bool = False) -> list[dict]:
    """The rows as dicts, ordered by the key columns (nulls last), optionally without Hudi's meta columns."""
    table = table.sort_by([(k, "ascending") for k in _as_list(key_columns)])
    if drop_meta:
        table = table.drop_columns([c for c in META_COLUMNS if c in table.column_names])
    return table.to_pylist()


def _by_key(table: pa.Table, keys: list[str], columns: list[str]) -> dict[tuple, list[dict]]:
    grouped: dict[tuple, list[dict]] = defaultdict(list)
    for row in table.select(columns).to_pylist():
        grouped[tuple(row[k] for k in keys)].append(row)
    return {k: sorted(rows, key=repr) for k, rows in grouped.items()}


def _row_diff(left: list[dict], right: list[dict]) -> str:
    if len(left) != 1 or len(right) != 1:
        return f"{len(left)} row(s) vs {len(right)} row(s): {left!r} vs {right!r}"
    return ", ".join(f"{c}: {left[0][c]!r} != {right[0][c]!r}" for c in left[0] if left[0][c] != right[0][c])


def assert_same_rows(a: pa.Table, b: pa.Table, key_columns: str | Sequence[str],
                     columns: Sequence[str] | None = None) -> None:
    """Assert both tables hold the same rows whatever their order, and say which keys differ and how.

    Values are compared as Python objects, so int32 equals int64 but a naive timestamp differs from a
    UTC one: cast first when the difference does not matter.
    """
    keys = _as_list(key_columns)
    if columns is None:
        if a.column_names != b.column_names:
            raise AssertionError(f"columns differ: {a.column_names} != {b.column_names}")
        columns = a.column_names
    wanted = keys + [c for c in columns if c not in keys]
    left, right = _by_key(a, keys, wanted), _by_key(b, keys, wanted)
    problems = [f"only in the first table: key {k!r}" for k in sorted(set(left) - set(right), key=repr)]
    problems += [f"only in the second table: key {k!r}" for k in sorted(set(right) - set(left), key=repr)]
    problems += [f"key {k!r}: {_row_diff(left[k], right[k])}"
                 for k in sorted(set(left) & set(right), key=repr) if left[k] != right[k]]
    if problems:
        shown = "\n  ".join(problems[:_MAX_REPORTED])
        more = f"\n  ... and {len(problems) - _MAX_REPORTED} more" if len(problems) > _MAX_REPORTED else ""
        raise AssertionError(f"{a.num_rows} vs {b.num_rows} rows, {len(problems)} difference(s) by "
                             f"{keys}:\n  {shown}{more}")
