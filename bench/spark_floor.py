"""`make bench-spark-floor`: what Spark 4.3 charges any Python data source for the bench's inputs, before
pyhudi does anything: a pass-through Arrow writer that only counts the rows of step B's 200k-row upsert batch,
and a reader that hands back the rows of a 2M-row, 18-column snapshot it holds in memory, summed as step C
(Spark gives the reader no projection, so all 18 columns cross to the JVM, as they do for pyhudi).
These are the floors of pyhudi's B and C through Spark.

Usage: python bench/spark_floor.py [--rows N] (medians of three runs after a warm-up)
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import functions as F
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType
from session import bench_session, timed
from workload import cached

from hudi_py_source.io.base_file import META_COLUMNS


class _CountingWriter(DataSourceArrowWriter):
    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        for _ in iterator:
            pass
        return WriterCommitMessage()


class _Slice(InputPartition):
    def __init__(self, path: str, half: int) -> None:
        super().__init__(half)
        self.path, self.half = path, half


_HELD: dict[str, pa.Table] = {}


class _HeldReader(DataSourceReader):
    """Two partitions, each half of the snapshot's rows with the five meta columns pyhudi returns. Spark
    reuses its Python workers, so after the warm-up the rows are held in memory and nothing is read."""

    def __init__(self, path: str) -> None:
        self.path = path

    def partitions(self) -> list[InputPartition]:
        return [_Slice(self.path, 0), _Slice(self.path, 1)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, _Slice)
        table = _HELD.get(partition.path)
        if table is None:
            table = _HELD[partition.path] = _with_meta(pq.read_table(partition.path))
        half = table.num_rows // 2
        part = table.slice(0, half) if partition.half == 0 else table.slice(half)
        yield from part.to_batches(max_chunksize=65536)


def _with_meta(table: pa.Table) -> pa.Table:
    for name in reversed(META_COLUMNS):
        table = table.add_column(0, pa.field(name, pa.string()), table.column("id"))
    return table


class Floor(DataSource):
    @classmethod
    def name(cls) -> str:
        return "pyhudi_floor"

    def schema(self) -> StructType:
        from pyspark.sql.pandas.types import from_arrow_schema

        return from_arrow_schema(_with_meta(pq.read_schema(self.options["path"]).empty_table()).schema)

    def writer(self, schema: StructType, overwrite: bool) -> _CountingWriter:
        return _CountingWriter()

    def reader(self, schema: StructType) -> _HeldReader:
        return _HeldReader(self.options["path"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    args = parser.parse_args()
    spark = bench_session("pyhudi-spark-floor")
    spark.dataSource.register(Floor)
    upserts = spark.read.parquet(str(cached("upsert", args.rows)))
    base = str(cached("base", args.rows))

    def write() -> None:
        upserts.write.format("pyhudi_floor").mode("append").save("/unused")

    def read() -> None:
        spark.read.format("pyhudi_floor").load(base).agg(F.sum("d0")).first()

    for name, action in (("B floor: count the upsert batch in a Python writer", write),
                         ("C floor: sum(d0) over held rows from a Python reader", read)):
        action()
        runs = [timed(action) for _ in range(3)]
        print(f"{name}: median {statistics.median(runs):.2f} s, runs " + " ".join(f"{r:.2f}" for r in runs))
    spark.stop()


if __name__ == "__main__":
    main()
