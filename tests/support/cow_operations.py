"""The rows, key generators and options of test_cow_operations.py, which most write and read tests build on."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

DAY = 86400

KEYGENS: dict[str, dict[str, str]] = {
    "simple": {
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
    },
    "simple_hive": {
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.hive_style_partitioning": "true",
    },
    "complex": {
        "hoodie.datasource.write.recordkey.field": "id,region",
        "hoodie.datasource.write.partitionpath.field": "region,city",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
        "hoodie.datasource.write.hive_style_partitioning": "true",
    },
    "nonpartitioned": {
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
    },
    "timestamp": {
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "event_s",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
        "hoodie.keygen.timebased.timestamp.type": "UNIX_TIMESTAMP",
        "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd",
    },
    "custom": {
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city:SIMPLE,event_s:TIMESTAMP",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.CustomKeyGenerator",
        "hoodie.keygen.timebased.timestamp.type": "UNIX_TIMESTAMP",
        "hoodie.keygen.timebased.output.dateformat": "yyyyMMdd",
    },
}


CITIES = ["sf", "nyc", "la"]
BASE_S = int(dt.datetime(2024, 1, 1, tzinfo=dt.UTC).timestamp())


def rows(ids: range, version: int = 1) -> pa.Table:
    return pa.table(
        {
            "id": [f"k{i:04d}" for i in ids],
            "ts": pa.array([version * 1000 + i for i in ids], pa.int64()),
            "city": [CITIES[i % 3] for i in ids],
            "region": ["west" if i % 3 != 1 else "east" for i in ids],
            "event_s": pa.array([BASE_S + (i % 2) * DAY for i in ids], pa.int64()),
            "amount": [float(i) * 1.5 + version for i in ids],
            "n": pa.array([i * version for i in ids], pa.int32()),
        }
    )


def partition_of(keygen: str, row: dict) -> str:
    day = dt.datetime.fromtimestamp(row["event_s"], dt.UTC)
    return {
        "simple": row["city"],
        "simple_hive": f"city={row['city']}",
        "complex": f"region={row['region']}/city={row['city']}",
        "nonpartitioned": "",
        "timestamp": day.strftime("%Y/%m/%d"),
        "custom": f"{row['city']}/{day.strftime('%Y%m%d')}",
    }[keygen]


def key_of(keygen: str, row: dict) -> str:
    return f"id:{row['id']},region:{row['region']}" if keygen == "complex" else row["id"]


def options(keygen: str, operation: str) -> dict[str, str]:
    return {
        "hoodie.table.name": f"t_{keygen}",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.operation": operation,
        **KEYGENS[keygen],
    }


DATA_COLUMNS = ["id", "ts", "city", "region", "event_s", "amount", "n"]


def data_rows(table: pa.Table) -> list[dict]:
    return sorted(table.select(DATA_COLUMNS).to_pylist(), key=lambda r: r["id"])
