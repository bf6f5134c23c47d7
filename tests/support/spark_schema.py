"""An Arrow schema written as Spark's StructType JSON (`DataFrame.schema.json()`, or the row metadata Spark keeps
in the parquet files it writes), so a schema pyhudi builds compares with the one Apache Hudi's Spark shows without
a Spark session: names, order, types, nesting and nullability."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

_PRIMITIVES = {pa.bool_(): "boolean", pa.int32(): "integer", pa.int64(): "long", pa.float32(): "float",
               pa.float64(): "double", pa.binary(): "binary", pa.string(): "string"}
SPARK_ROW_METADATA = b"org.apache.spark.sql.parquet.row.metadata"
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def apache_hudi_metadata_schema() -> dict[str, Any]:
    """Spark's schema of `SELECT * FROM hudi_metadata(...)` as Apache Hudi 1.2.0 returns it (the row metadata of
    the parquet its Spark wrote; tests/interop/test_apache_hudi_metadata_tvf.py checks it against a live run)."""
    found: dict[str, Any] = json.loads((FIXTURES / "apache-hudi-1.2.0" / "hudi_metadata_schema.json").read_text())
    return found


def spark_schema(schema: pa.Schema) -> dict[str, Any]:
    return {"type": "struct", "fields": [_field(f) for f in schema]}


def written_spark_schema(table: pa.Table) -> dict[str, Any]:
    """The Spark schema of the rows a Spark job wrote to parquet (and the harness read back)."""
    found: dict[str, Any] = json.loads(table.schema.metadata[SPARK_ROW_METADATA])
    return found


def _field(field: pa.Field) -> dict[str, Any]:
    return {"name": field.name, "type": _type(field.type), "nullable": field.nullable, "metadata": {}}


def _type(dtype: pa.DataType) -> Any:
    if pa.types.is_struct(dtype):
        return {"type": "struct", "fields": [_field(f) for f in dtype]}
    if pa.types.is_map(dtype):
        return {"type": "map", "keyType": _type(dtype.key_type), "valueType": _type(dtype.item_type),
                "valueContainsNull": dtype.item_field.nullable}
    if pa.types.is_list(dtype):
        return {"type": "array", "elementType": _type(dtype.value_type), "containsNull": dtype.value_field.nullable}
    if pa.types.is_decimal(dtype):
        return f"decimal({dtype.precision},{dtype.scale})"
    return _PRIMITIVES[dtype]
