"""Hudi's CALL procedures over pyhudi tables: commits, the file system view, savepoints, rollback, compaction,
clustering and cleaning, with Hudi's procedure names, parameters (named `key => value` or by position) and
output columns. Each runs the core's table services on the driver; their results come back as small DataFrames.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlglot
from pyspark.sql import DataFrame, SparkSession
from sqlglot import exp
from sqlglot.errors import ParseError

from ...errors import HoodieConfigError
from ...services.clean import clean
from ...services.clustering import cluster, schedule_clustering
from ...services.compaction import compact, schedule_compaction
from ...services.restore import restore_to_savepoint
from ...services.savepoint import create_savepoint, delete_savepoint
from ...services.upgrade import downgrade_table, upgrade_table
from ...table.hoodie_table import HoodieTable
from ...write.rollback import rollback_instant
from .ddl import property_value
from .tables import RegisteredTable, named_table

SparkSql = Callable[[str], DataFrame]
Rows = list[tuple[Any, ...]]
_COMMIT_ACTIONS = ("commit", "deltacommit", "replacecommit")
_COMMITS_SCHEMA = ("commit_time string, state_transition_time string, action string, total_bytes_written long, "
                   "total_files_added long, total_files_updated long, total_partitions_written long, "
                   "total_records_written long, total_update_records_written long, total_errors long")
_FSVIEW_SCHEMA = ("partition string, file_id string, base_instant string, data_file string, data_file_size long, "
                  "num_delta_files long, total_delta_file_size long, delta_files string")


@dataclass(frozen=True)
class Procedure:
    params: tuple[str, ...]
    schema: str
    run: Callable[[RegisteredTable, dict[str, str]], Rows]


def call(spark: SparkSession, text: str, sql: SparkSql) -> DataFrame:
    """`CALL name(args)`: the procedure's rows."""
    name, args = _parse_call(text)
    procedure = PROCEDURES.get(name.lower())
    if procedure is None:
        raise HoodieConfigError(f"CALL {name}: no such procedure for pyhudi tables; procedures: "
                                f"{', '.join(sorted(PROCEDURES))}")
    values = _bind(name, procedure.params, args)
    target = values.pop("table", None) or values.pop("path", None)
    if target is None:
        raise HoodieConfigError(f"CALL {name}: give the table (table => 'name') or its path (path => '…')")
    found = named_table(spark, target, f"CALL {name}")
    return spark.createDataFrame(procedure.run(found, values), procedure.schema)


def _parse_call(text: str) -> tuple[str, list[tuple[str | None, str]]]:
    try:
        parsed = sqlglot.parse_one(f"SELECT {text}", dialect="spark")
    except ParseError as exc:
        raise HoodieConfigError(f"CALL {text}: cannot read the call; write CALL name(key => value, …)") from exc
    node = parsed.expressions[0] if isinstance(parsed, exp.Select) else None
    if not isinstance(node, exp.Func):
        raise HoodieConfigError(f"CALL {text}: cannot read the call; write CALL name(key => value, …)")
    name = str(node.this) if isinstance(node, exp.Anonymous) else node.sql_name().lower()
    args: list[tuple[str | None, str]] = []
    for arg in node.expressions if isinstance(node, exp.Anonymous) else node.args.values():
        if isinstance(arg, exp.Kwarg):
            args.append((arg.this.name.lower(), property_value(arg.expression)))
        elif isinstance(arg, exp.Expression):
            args.append((None, property_value(arg)))
    return name, args


def _bind(name: str, params: tuple[str, ...], args: list[tuple[str | None, str]]) -> dict[str, str]:
    values: dict[str, str] = {}
    for position, (key, value) in enumerate(args):
        key = key or (params[position] if position < len(params) else None)
        if key is None or key not in params:
            raise HoodieConfigError(f"CALL {name}: unknown parameter {key or position}; parameters: "
                                    f"{', '.join(params)}")
        values[key] = value
    return values


def _table(found: RegisteredTable) -> HoodieTable:
    return found.hudi()


def _limit(values: dict[str, str], default: int = 10) -> int:
    return int(values.get("limit", default))


def show_commits(found: RegisteredTable, values: dict[str, str]) -> Rows:
    """Newest first: each completed commit's write statistics."""
    table = _table(found)
    timeline = table.timeline
    commits = [i for i in timeline.completed() if i.action in _COMMIT_ACTIONS]
    rows = []
    for instant in sorted(commits, key=lambda i: i.timestamp, reverse=True)[:_limit(values)]:
        stats = timeline.read_commit_metadata(instant).all_write_stats()
        added = sum(1 for s in stats if s.prev_commit in (None, "null"))
        rows.append((instant.timestamp, timeline.completion_time(instant), instant.action,
                     sum(s.total_write_bytes for s in stats), added, len(stats) - added,
                     len({s.partition_path for s in stats}), sum(s.num_writes for s in stats),
                     sum(s.num_update_writes for s in stats), sum(s.total_write_errors for s in stats)))
    return rows


def show_file_system_view(found: RegisteredTable, values: dict[str, str]) -> Rows:
    """The latest file slice of every file group (or of one partition, `partition_path`)."""
    view = _table(found).fs_view()
    rows = []
    for piece in view.latest_file_slices(values.get("partition_path")):
        logs = piece.log_files
        rows.append((piece.partition_path, piece.file_id, piece.base_instant,
                     piece.base_file.name if piece.base_file else None,
                     piece.base_file.size if piece.base_file else -1, len(logs), sum(f.size for f in logs),
                     str([f.name for f in logs])))
    return rows[:_limit(values, 2**31 - 1)]


def show_savepoints(found: RegisteredTable, values: dict[str, str]) -> Rows:
    timeline = _table(found).timeline
    return [(i.timestamp,) for i in sorted(timeline.completed(), key=lambda i: i.timestamp, reverse=True)
            if i.action == "savepoint"]


def _create_savepoint(found: RegisteredTable, values: dict[str, str]) -> Rows:
    create_savepoint(found.storage(), values.get("commit_time"), values.get("user", ""),
                     values.get("comments", ""))
    return [(True,)]


def _delete_savepoint(found: RegisteredTable, values: dict[str, str]) -> Rows:
    delete_savepoint(found.storage(), values["instant_time"])
    return [(True,)]


def _rollback_to_savepoint(found: RegisteredTable, values: dict[str, str]) -> Rows:
    restore_to_savepoint(found.storage(), values["instant_time"])
    return [(True,)]


def _rollback_to_instant(found: RegisteredTable, values: dict[str, str]) -> Rows:
    """Roll back the latest completed commit, which `instant_time` must name (Hudi rolls back no other)."""
    table = _table(found)
    latest = table.timeline.last_completed_commit()
    wanted = values["instant_time"]
    if latest is None or latest.timestamp != wanted:
        raise HoodieConfigError(f"CALL rollback_to_instant: {wanted} is not the table's latest commit "
                                f"({latest.timestamp if latest else 'none'}); only the latest can be rolled back")
    rollback_instant(table, latest)
    return [(True,)]


def _run_compaction(found: RegisteredTable, values: dict[str, str]) -> Rows:
    """op => 'schedule' | 'run' | 'scheduleandexecute' (timestamp: a pending plan to run)."""
    op = values.get("op", "scheduleandexecute").lower()
    if op == "schedule":
        planned = schedule_compaction(found.storage(), found.write_options)
        return [(planned, 0, "REQUESTED")] if planned else []
    if op not in ("run", "scheduleandexecute"):
        raise HoodieConfigError(f"CALL run_compaction: op => {op!r}; give 'schedule', 'run' or "
                                "'scheduleandexecute'")
    done = compact(found.storage(), found.write_options, values.get("timestamp"))
    return [(instant, 0, "COMPLETED") for instant in done]


def _show_pending(actions: tuple[str, ...]) -> Callable[[RegisteredTable, dict[str, str]], Rows]:
    """Compactions or clusterings, newest first, with their state (a v6 clustering is a replacecommit with a
    clustering plan)."""
    def show(found: RegisteredTable, values: dict[str, str]) -> Rows:
        timeline = _table(found).timeline
        ours = [i for i in timeline.instants if i.action in actions
                and (i.action != "replacecommit" or timeline.clustering_plan(i) is not None)]
        return [(i.timestamp, 0, i.state.upper()) for i in sorted(ours, key=lambda i: i.timestamp,
                                                                   reverse=True)][:_limit(values)]
    return show


def _run_clustering(found: RegisteredTable, values: dict[str, str]) -> Rows:
    op = values.get("op", "scheduleandexecute").lower()
    if op == "schedule":
        planned = schedule_clustering(found.storage(), found.write_options)
        return [(planned, 0, "REQUESTED", "")] if planned else []
    return [(instant, 0, "COMPLETED", "") for instant in cluster(found.storage(), found.write_options)]


def _run_clean(found: RegisteredTable, values: dict[str, str]) -> Rows:
    options = {**found.write_options, **{k: v for k, v in values.items() if k.startswith("hoodie.")}}
    done = clean(found.storage(), options)
    return [(done,)] if done else []


_VERSIONS = {"SIX": 6, "EIGHT": 8, "NINE": 9}


def _version(values: dict[str, str]) -> int:
    """to_version as Hudi's procedures name it (HoodieTableVersion: SIX, EIGHT, NINE) or as a number."""
    given = values.get("to_version", "")
    if given.upper() in _VERSIONS:
        return _VERSIONS[given.upper()]
    if given.isdigit():
        return int(given)
    raise HoodieConfigError(f"to_version => {given!r}: give SIX, EIGHT or NINE")


def _upgrade(found: RegisteredTable, values: dict[str, str]) -> Rows:
    return [(upgrade_table(found.storage(), _version(values), found.write_options) == _version(values),)]


def _downgrade(found: RegisteredTable, values: dict[str, str]) -> Rows:
    return [(downgrade_table(found.storage(), _version(values), found.write_options) == _version(values),)]


PROCEDURES: dict[str, Procedure] = {
    "upgrade_table": Procedure(("table", "to_version"), "result boolean", _upgrade),
    "downgrade_table": Procedure(("table", "to_version"), "result boolean", _downgrade),
    "show_commits": Procedure(("table", "limit"), _COMMITS_SCHEMA, show_commits),
    "show_file_system_view": Procedure(("table", "partition_path", "limit"), _FSVIEW_SCHEMA, show_file_system_view),
    "show_fsview_latest": Procedure(("table", "partition_path", "limit"), _FSVIEW_SCHEMA, show_file_system_view),
    "show_savepoints": Procedure(("table",), "savepoint_time string", show_savepoints),
    "create_savepoint": Procedure(("table", "commit_time", "user", "comments"), "create_savepoint_result boolean",
                                  _create_savepoint),
    "delete_savepoint": Procedure(("table", "instant_time"), "delete_savepoint_result boolean", _delete_savepoint),
    "rollback_to_savepoint": Procedure(("table", "instant_time"), "rollback_savepoint_result boolean",
                                       _rollback_to_savepoint),
    "rollback_to_instant": Procedure(("table", "instant_time"), "rollback_result boolean", _rollback_to_instant),
    "run_compaction": Procedure(("op", "table", "path", "timestamp"),
                                "timestamp string, operation_size int, state string", _run_compaction),
    "show_compaction": Procedure(("table", "path", "limit"), "timestamp string, operation_size int, state string",
                                 _show_pending(("compaction",))),
    "run_clustering": Procedure(("table", "path", "op"), "timestamp string, input_group_size int, state string, "
                                "involved_partitions string", _run_clustering),
    "show_clustering": Procedure(("table", "path", "limit"), "timestamp string, operation_size int, state string",
                                 _show_pending(("clustering", "replacecommit"))),
    "run_clean": Procedure(("table", "path"), "clean_instant string", _run_clean),
}
