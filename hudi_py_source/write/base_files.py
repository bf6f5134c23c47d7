"""Writing one base file, the same way for every writer (new file groups, merges, compaction, clustering):
the write's parquet and bloom-filter options, the Avro schema Hudi keeps in the footer, and the WriteStat
that reports the file to the commit.
"""

from __future__ import annotations

import json

import pyarrow as pa

from ..config import (
    BLOOM_DYNAMIC_MAX_ENTRIES,
    BLOOM_FILTER_TYPE,
    BLOOM_FPP,
    BLOOM_NUM_ENTRIES,
    PARQUET_BLOCK_SIZE,
    PARQUET_COMPRESSION,
    PARQUET_DICTIONARY,
    PARQUET_PAGE_SIZE,
    HoodieConfig,
)
from ..io.avro_schema import meta_fields_avro, to_json
from ..io.base_file import BaseFileWriter
from ..storage import Storage
from ..timeline.commit_metadata import NULL_COMMIT, WriteStat


def meta_fields_avro_json(avro_schema_json: str) -> str:
    """The schema stored in base-file footers (`parquet.avro.schema`): meta fields first, as Hudi writes it."""
    return to_json(meta_fields_avro(json.loads(avro_schema_json)))


def base_file_writer(storage: Storage, rel_path: str, schema: pa.Schema, cfg: HoodieConfig, avro_schema_json: str,
                     max_buffer_bytes: int | None = None) -> BaseFileWriter:
    """A base-file writer with the write's parquet and bloom-filter options: every writer of base files (new
    file groups, merges, compaction, clustering) stores them alike."""
    return BaseFileWriter(
        storage, rel_path, schema,
        bloom_type=cfg.get(BLOOM_FILTER_TYPE), bloom_num_entries=cfg.get(BLOOM_NUM_ENTRIES),
        bloom_fpp=cfg.get(BLOOM_FPP), bloom_dynamic_max_entries=cfg.get(BLOOM_DYNAMIC_MAX_ENTRIES),
        compression=cfg.get(PARQUET_COMPRESSION), row_group_bytes=cfg.get(PARQUET_BLOCK_SIZE),
        page_size=cfg.get(PARQUET_PAGE_SIZE), dictionary=cfg.get(PARQUET_DICTIONARY),
        avro_schema_json=meta_fields_avro_json(avro_schema_json), max_buffer_bytes=max_buffer_bytes,
    )


def base_file_write_stat(file_id: str, partition: str, rel_path: str, prev_commit: str | None, rows: int,
                         size: int, elapsed_ms: int, inserts: int, updates: int = 0, deletes: int = 0) -> WriteStat:
    """The HoodieWriteStat of a written base file; a new file group (no previous commit) counts its time as
    create time, a merged one as upsert time."""
    merged = prev_commit is not None
    return WriteStat(
        file_id=file_id, path=rel_path, prev_commit=prev_commit or NULL_COMMIT, num_writes=rows,
        num_deletes=deletes, num_update_writes=updates, num_inserts=inserts, total_write_bytes=size,
        partition_path=partition, file_size_in_bytes=size,
        runtime_stats={"totalScanTime": 0, "totalUpsertTime": elapsed_ms if merged else 0,
                       "totalCreateTime": 0 if merged else elapsed_ms},
    )
