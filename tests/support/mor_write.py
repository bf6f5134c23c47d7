"""Merge-on-read write options and checks of test_mor_write.py."""

from __future__ import annotations

import os

from hudi_py_source import Table
from hudi_py_source.table.file_names import parse_base_file_name, parse_log_file_name
from support.cow_operations import data_rows, options
from support.oracles import hudi_rs_read

MOR = "MERGE_ON_READ"


def mor_options(operation: str, index: str, **extra: str) -> dict[str, str]:
    return {**options("simple_hive", operation), "hoodie.datasource.write.table.type": MOR,
            "hoodie.index.type": index, "hoodie.bucket.index.num.buckets": "2", **extra}


def check(url: str, model: dict[str, dict], base_model: dict[str, dict]) -> None:
    want = [model[k] for k in sorted(model)]
    assert data_rows(Table(url).read()) == want
    assert data_rows(hudi_rs_read(url)) == want
    read_optimized = Table(url).read({"hoodie.datasource.query.type": "read_optimized"})
    assert data_rows(read_optimized) == [base_model[k] for k in sorted(base_model)]


def log_files(url: str) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), url) for d, _, fs in os.walk(url) for f in fs
            if parse_log_file_name(f) is not None}


def base_files(url: str) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), url) for d, _, fs in os.walk(url) for f in fs
            if ".hoodie" not in d and parse_base_file_name(f) is not None}
