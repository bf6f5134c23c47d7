"""Spark writes keep the metadata table in step (it is written on the driver, at the commit, from the tasks'
write stats), and `spark.read.format("pyhudi")` lists a version 9 table through it by default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support.oracles import hudi_rs_read
from support.v8_writes import HISTORY, apply_write, id_to_ts, options, rows

from hudi_py_source import Table

pytestmark = pytest.mark.spark

METADATA = {"hoodie.metadata.enable": "true", "hoodie.metadata.compact.max.delta.commits": "2"}


@pytest.mark.parametrize(("table_type", "index"), [("COPY_ON_WRITE", "SIMPLE"), ("MERGE_ON_READ", "SIMPLE"),
                                                   ("MERGE_ON_READ", "RECORD_INDEX")])
def test_spark_writes_and_reads_through_the_metadata_table(spark: Any, tmp_path: Path, table_type: str,
                                                           index: str) -> None:
    """With RECORD_INDEX the tasks tag their records through the record index, which the driver's commit keeps
    in step."""
    url = str(tmp_path / "t")
    model: dict[str, int] = {}
    for operation, ids, data_version, extra in HISTORY:
        write = {**options(operation, 9, **extra), **METADATA, "hoodie.datasource.write.table.type": table_type,
                 "hoodie.index.type": index}
        frame = spark.createDataFrame(rows(list(ids), data_version) if ids else rows([0], data_version).slice(0, 0))
        frame.repartition(2).write.format("pyhudi").options(**write).mode("append").save(url)
        apply_write(model, operation, ids, data_version, extra)
    assert Table(url).validate_metadata() == []
    read = pa.Table.from_pandas(spark.read.format("pyhudi").load(url).toPandas(), preserve_index=False)
    assert id_to_ts(read) == model
    assert read.num_rows == len(model)
    assert id_to_ts(hudi_rs_read(url)) == model
