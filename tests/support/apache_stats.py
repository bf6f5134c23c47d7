"""The column-stats and partition-stats records Apache Hudi wrote into a fixture table's metadata table."""

from __future__ import annotations

from pathlib import Path

from hudi_py_source.io.hfile import HFileReader
from hudi_py_source.io.log_blocks import BlockType
from hudi_py_source.io.log_format import iter_log_blocks
from hudi_py_source.table.column_stats_records import StatsRecord, decode_records, merge_ranges

Records = dict[str, tuple[bytes, StatsRecord]]


def apache_records(table: Path, partition: str) -> Records:
    """The latest value of each key of a metadata partition: its HFile data blocks in instant order, records of
    one key merged as Hudi merges them."""
    blocks = [block for log in sorted((table / ".hoodie" / "metadata" / partition).glob(".*.log.*"))
              for block in iter_log_blocks(log.read_bytes(), str(log))
              if block.block_type == BlockType.HFILE_DATA_BLOCK]
    latest: Records = {}
    for block in sorted(blocks, key=lambda b: b.instant_time or ""):
        reader = HFileReader(block.content)
        items = list(reader.items())
        for (key, value), record in zip(items, decode_records([v for _, v in items], reader.schema()), strict=True):
            older = latest.get(key.decode())
            latest[key.decode()] = (value, record if older is None else merge_ranges(older[1], record))
    return latest


