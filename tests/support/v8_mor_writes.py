"""The merge-on-read write history of the version 8/9 tests, shared with Apache Hudi's reading of them."""

from __future__ import annotations

from support.v8_writes import options, record_id

# (operation, ids, data version): small.file.limit=0, as the fixtures, so new keys start file groups and updates
# and deletes of existing keys go to logs; upserting id 1 with data version 1 brings an older ts than it has.
MOR_STEPS: list[tuple[str, list[int], int]] = [
    ("bulk_insert", list(range(0, 9)), 1), ("upsert", [0, 1, 4, 9], 2), ("delete", [2], 3),
    ("insert", [10, 11], 3), ("upsert", [0, 5], 4), ("upsert", [1], 1)]


def mor_options(operation: str, version: int) -> dict[str, str]:
    return {**options(operation, version), "hoodie.datasource.write.table.type": "MERGE_ON_READ",
            "hoodie.parquet.small.file.limit": "0"}


def apply(live: dict[str, int], base: dict[str, int], operation: str, ids: list[int], data_version: int) -> None:
    """The models, id -> ts: the snapshot (event time keeps the greater ts) and the base files (new keys only)."""
    for i in ids:
        key, ts = record_id(i), data_version * 1000 + i
        if operation == "delete":
            live.pop(key, None)
            continue
        if key not in base and key not in live:
            base[key] = ts
        live[key] = max(ts, live.get(key, -1))
