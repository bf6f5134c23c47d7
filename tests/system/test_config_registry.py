"""The config registry tells the truth: every declared option is read by the code that honours it, or pyhudi
accepts it at the one value it behaves as and refuses the others, saying why (issue 22)."""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from hudi_py_source import config
from hudi_py_source.config import IGNORED_KEYS, REGISTRY, ConfigProperty, HoodieConfig
from hudi_py_source.errors import HoodieConfigError

PACKAGE = Path(config.__file__).parent
CONFIG_MODULE = "hudi_py_source.config"


def declared_names(source: str) -> list[str]:
    """Module-level names bound to a `define(...)` call: the option constants of config.py."""
    return [node.targets[0].id for node in ast.parse(source).body
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "define"]


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The module an import names, with a relative one resolved against the importing module's package."""
    if not node.level:
        return node.module or ""
    package = module.split(".")[:-node.level]
    return ".".join(package + ([node.module] if node.module else []))


def _config_references(module: str, tree: ast.Module, declared: set[str]) -> dict[ast.expr, str]:
    """Every expression in `tree` naming an option constant of config.py, mapped to the constant's name: a name
    imported from config.py (`from ..config import X as Y`, then `Y`) or an attribute of the imported module
    (`from .. import config`, then `config.X`)."""
    constants: dict[str, str] = {}
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _absolute(module, node)
            for alias in node.names:
                if source == CONFIG_MODULE and alias.name in declared:
                    constants[alias.asname or alias.name] = alias.name
                elif f"{source}.{alias.name}" == CONFIG_MODULE:
                    modules.add(alias.asname or alias.name)
    found: dict[ast.expr, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in constants:
            found[node] = constants[node.id]
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
              and node.attr in declared):
            found[node] = node.attr
    return found


def _is_read(node: ast.expr, parents: Mapping[ast.AST, ast.AST]) -> bool:
    """`X.parse(...)`, or X inside an argument of a call (`cfg.get(X)`, `cfg.require(X)`, `cfg.is_set(X)`,
    `helper(cfg, X)`, `cfg.get(X if ... else Y)`); not `X.key`, `X.default` or X outside any call."""
    parent = parents.get(node)
    if isinstance(parent, ast.Attribute):
        return parent.attr == "parse" and isinstance(parents.get(parent), ast.Call)
    child: ast.AST = node
    while isinstance(parent, ast.expr | ast.keyword):
        if isinstance(parent, ast.Call):
            return child is not parent.func
        if isinstance(parent, ast.Attribute):
            return False
        child, parent = parent, parents.get(parent)
    return False


def read_names(module: str, source: str, declared: set[str]) -> set[str]:
    """Names of the option constants that `source` (the module `module`) reads."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    return {name for node, name in _config_references(module, tree, declared).items() if _is_read(node, parents)}


def unread_names(sources: Mapping[str, str], declared: Iterable[str]) -> set[str]:
    """The declared constants that no module of `sources` (module name -> source) reads; config.py's own
    references (declarations, alternatives) do not count."""
    wanted = set(declared)
    read: set[str] = set()
    for module, source in sources.items():
        if module != CONFIG_MODULE:
            read |= read_names(module, source, wanted)
    return wanted - read


def package_sources() -> dict[str, str]:
    """Module name -> source of every module of hudi_py_source; a package's module keeps its `.__init__`, so that
    its relative imports resolve against the package itself."""
    return {".".join(("hudi_py_source", *path.relative_to(PACKAGE).with_suffix("").parts)): path.read_text()
            for path in PACKAGE.rglob("*.py")}


def test_every_declared_option_is_read_or_pinned() -> None:
    """An option counts as read when a module of hudi_py_source other than config.py imports its constant from
    config.py and passes it to a call (`cfg.get(X)`, `.require(X)`, `.is_set(X)`, `helper(cfg, X)`) or parses a
    value with it (`X.parse(v)`); naming `X.key` in a message does not read it.

    An option nothing reads must be pinned (`ConfigProperty.pinned`): pyhudi accepts one value of it, the one it
    always behaves as, and refuses the others with its `unsupported` reason, so no code has anything to act on.
    Keys pyhudi accepts with any value and ignores are not declared at all: they are IGNORED_KEYS, each with
    its reason.
    """
    names = declared_names((PACKAGE / "config.py").read_text())
    assert {getattr(config, name).key for name in names} == set(REGISTRY)
    unread = unread_names(package_sources(), names)
    silent = sorted(getattr(config, name).key for name in unread if not getattr(config, name).pinned)
    assert silent == [], f"declared options that nothing reads and that are not pinned: {silent}"


def test_the_scan_finds_an_unread_option() -> None:
    """The registry test can fail: a constant that is only declared, or only named in a message, is unread."""
    sources = {
        CONFIG_MODULE: 'A = define("a", 1, int, "")\nB = define("b", 1, int, "")\nC = define("c", 1, int, "")\n'
                       'D = define("d", 1, int, "")\nE = define("e", 1, int, "")\nF = define("f", 1, int, "")\n',
        "hudi_py_source.write.user": "from ..config import A, B, D as Renamed\nfrom .. import config\n"
                                     "def f(cfg):\n    raise ValueError(f'{B.key}={cfg.get(A)}')\n"
                                     "def g(cfg, v):\n    return Renamed.parse(v), config.E, cfg.get(config.F)\n",
        "hudi_py_source.other": "from .config import C\nC = 'hoodie.c'\n",
    }
    assert declared_names(sources[CONFIG_MODULE]) == ["A", "B", "C", "D", "E", "F"]
    assert unread_names(sources, "ABCDEF") == {"B", "C", "E"}


def test_pinned_options_accept_only_what_pyhudi_behaves_as() -> None:
    """A pinned option's one value is its default (or, for an option Hudi leaves unset, what unset means)."""
    for prop in REGISTRY.values():
        if prop.pinned:
            only = (prop.supported or prop.choices)[0]
            assert prop.default in (None, only), prop.key
            spelled = str(only).lower() if prop.choices else str(only)  # a class name is spelled exactly
            assert HoodieConfig({prop.key: spelled}).get(prop) == only


REFUSALS = [
    ("hoodie.write.lock.provider", "org.apache.hudi.hive.transaction.lock.HiveMetastoreBasedLockProvider",
     "pyhudi's lock providers are org.apache.hudi.client.transaction.lock.InProcessLockProvider, "
     "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider, "
     "org.apache.hudi.client.transaction.lock.StorageBasedLockProvider, "
     "org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider, "
     "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider"),
    ("hoodie.datasource.write.keygenerator.consistent.logical.timestamp.enabled", "true",
     "pyhudi's key generators print timestamp key values as epoch microseconds"),
    ("hoodie.table.base.file.format", "ORC", "pyhudi writes parquet base files"),
    ("hoodie.table.base.file.format", "hfile", "pyhudi writes parquet base files"),
    ("hoodie.parquet.compression.ratio", "0.2",
     "pyhudi rolls a base file over by the bytes it has written, so it uses no compression estimate"),
    ("hoodie.index.bucket.engine", "CONSISTENT_HASHING",
     "pyhudi's bucket index keeps a fixed number of buckets per partition (the SIMPLE engine)"),
    ("hoodie.logfile.data.block.format", "parquet", "pyhudi writes avro data blocks"),
    ("hoodie.logfile.data.block.format", "hfile", "pyhudi writes avro data blocks"),
    ("hoodie.write.markers.type", "TIMELINE_SERVER_BASED", "pyhudi runs no timeline server; it writes DIRECT markers"),
    ("hoodie.cleaner.policy.failed.writes", "never",
     "pyhudi rolls failed writes back, before the next write (EAGER) or when cleaning (LAZY)"),
    ("hoodie.write.concurrency.early.conflict.detection.strategy",
     "org.apache.hudi.table.marker.AsyncTimelineServerBasedDetectionStrategy",
     "pyhudi writes DIRECT markers and detects early conflicts by "
     "org.apache.hudi.table.marker.SimpleDirectMarkerBasedDetectionStrategy"),
    ("hoodie.clean.async", "true",
     "pyhudi cleans inline after a commit (hoodie.clean.automatic) or when a clean is run"),
    ("hoodie.datasource.hive_sync.partition_fields", "city",
     "pyhudi's catalog entry (CREATE TABLE ... USING pyhudi) has no Hive partition columns"),
    ("hoodie.datasource.hive_sync.mode", "jdbc", "pyhudi registers the table through the SparkSession's catalog, "
                                                 "which reaches the metastore as hms does"),
    ("hoodie.datasource.hive_sync.mode", "hiveql", "pyhudi registers the table through the SparkSession's catalog, "
                                                   "which reaches the metastore as hms does"),
    ("hoodie.index.type", "HBASE",
     "pyhudi's indexes are BLOOM, GLOBAL_BLOOM, SIMPLE, GLOBAL_SIMPLE, BUCKET and RECORD_INDEX"),
    ("hoodie.bulkinsert.sort.mode", "PARTITION_PATH_REPARTITION",
     "pyhudi sorts bulk_insert input globally, by partition or not at all; it does not repartition it by "
     "partition path"),
    ("hoodie.datasource.write.payload.class", "org.apache.hudi.common.model.OverwriteNonDefaultsWithLatestAvroPayload",
     "pyhudi merges records as OverwriteWithLatestAvroPayload, DefaultHoodieRecordPayload or PartialUpdateAvroPayload "
     "does"),
    ("hoodie.datasource.write.insert.drop.duplicates", "true",
     "pyhudi does not drop inserts by the keys the table holds (nor does Apache Hudi on a table with auto-generated "
     "record keys, whose new keys no stored record has)"),
]


@pytest.mark.parametrize(("key", "value", "why"), REFUSALS)
def test_a_value_hudi_allows_but_pyhudi_does_not_implement_is_refused(key: str, value: str, why: str) -> None:
    with pytest.raises(HoodieConfigError) as err:
        HoodieConfig({key: value})
    assert str(err.value) == f"{key}={value!r} is not supported yet: {why}"


def test_every_pinned_option_has_a_refusal_test() -> None:
    pinned = {prop.key for prop in REGISTRY.values() if prop.pinned and prop.supported}
    assert pinned <= {key for key, _, _ in REFUSALS}


@pytest.mark.parametrize(("key", "value", "allowed"), [
    ("hoodie.cleaner.policy.failed.writes", "SOMETIMES", "EAGER, LAZY, NEVER"),
    ("hoodie.logfile.data.block.format", "orc", "avro, parquet, hfile"),
    ("hoodie.clean.trigger.strategy", "NUM_COMMITS_PLUS", "NUM_COMMITS"),
    ("hoodie.index.type", "HASH", "BLOOM, GLOBAL_BLOOM, SIMPLE, GLOBAL_SIMPLE, BUCKET, HBASE, INMEMORY, FLINK_STATE, "
                                  "RECORD_INDEX"),
])
def test_a_value_hudi_does_not_allow_is_invalid_and_names_hudis_values(key: str, value: str, allowed: str) -> None:
    with pytest.raises(HoodieConfigError) as err:
        HoodieConfig({key: value})
    assert str(err.value) == f"{key}={value!r} is invalid: Hudi allows {allowed}"


def test_enumerated_values_are_read_in_any_case_and_spelled_as_hudi_does() -> None:
    cfg = HoodieConfig({"hoodie.write.concurrency.mode": "single_writer", "hoodie.logfile.data.block.format": "AVRO",
                        "hoodie.index.type": "global_bloom"})
    assert cfg.get(config.WRITE_CONCURRENCY_MODE) == "SINGLE_WRITER"
    assert cfg.get(config.LOGFILE_DATA_BLOCK_FORMAT) == "avro"
    assert cfg.get(config.INDEX_TYPE) == "GLOBAL_BLOOM"


def test_a_declaration_keeps_what_pyhudi_supports_within_what_hudi_allows() -> None:
    with pytest.raises(ValueError, match="hoodie.test.mode: supported values outside Hudi's choices"):
        config.define("hoodie.test.mode", "A", str, "", choices=("A", "B"), supported=("C",), unsupported="why")
    with pytest.raises(ValueError, match="hoodie.test.mode: supported values and the reason"):
        config.define("hoodie.test.mode", "A", str, "", choices=("A", "B"), supported=("A",))
    assert "hoodie.test.mode" not in REGISTRY


def test_ignored_keys_are_accepted_silently_and_say_why() -> None:
    assert not set(IGNORED_KEYS) & set(REGISTRY)
    assert all(reason for reason in IGNORED_KEYS.values())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        HoodieConfig(dict.fromkeys(IGNORED_KEYS, "7"))


def test_an_unknown_key_warns_with_the_closest_declared_one() -> None:
    hint = "unknown option hoodie.clean.asynk; did you mean hoodie.clean.async?"
    with pytest.warns(UserWarning, match=re.escape(hint)):
        HoodieConfig({"hoodie.clean.asynk": "false"})


def test_typed_getters_return_the_default_of_an_option_that_has_one() -> None:
    cfg = HoodieConfig({})
    prop: ConfigProperty[int] = config.PARQUET_MAX_FILE_SIZE
    assert cfg.get(prop) == cfg.require(prop) == 125829120
    assert cfg.get(config.TABLE_NAME) is None
