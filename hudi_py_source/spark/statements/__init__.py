"""Hudi's SQL statements that Spark 4.3 refuses for Python data sources, answered by pyhudi before Spark sees
them (SPARK-DS.md §1): CREATE TABLE with columns, CTAS, INSERT with PARTITION clauses, UPDATE, DELETE, MERGE INTO,
time travel, `hudi_table_changes`, `hudi_metadata`, SHOW PARTITIONS, DROP TABLE, ALTER TABLE and Hudi's CALL
procedures.

`run` parses a statement with sqlglot (Spark dialect); a statement that is not about a pyhudi table goes to
Spark unchanged. The heavy work (the scans, MERGE's join) stays in Spark: each handler builds DataFrames
and hands them to pyhudi's writers.
"""
