"""pyhudi: Apache Hudi tables in Python, for Spark 4's Python Data Source and plain Arrow."""

from .read.predicates import Predicate
from .table_api import Table

__all__ = ["Predicate", "Table"]
