"""Installed as the top-level module `pyspark_pyhudi`, which Spark 4 scans for to register `format("pyhudi")`
without a `register()` call (regular installs; an editable install hides it from Spark's module scan)."""

from hudi_py_source.spark.datasource import PyHudiDataSource as DefaultSource

__all__ = ["DefaultSource"]
