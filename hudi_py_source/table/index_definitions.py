"""The table's index definitions (Apache Hudi 1.x's HoodieIndexMetadata, `.hoodie/.index_defs/index.json`).

Indexes a user creates (secondary and expression indexes), and since 1.1 the built-in ones too, are defined in
one JSON file the table property `hoodie.table.index.defs.path` names, relative to the table's base path:
`{"indexDefinitions": {<name>: {"indexName", "indexType", "indexFunction", "sourceFields", "indexOptions",
"version"}}}`. The name is the index's metadata partition (`secondary_index_<user's name>`); the version
("V1", "V2") decides how its keys spread over file groups, and is absent in files Hudi 1.0 wrote.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import HoodieCorruptedDataError
from ..storage import Storage
from .properties import TableProperties

INDEX_DEFS_PATH = "hoodie.table.index.defs.path"
SECONDARY_INDEX_PREFIX = "secondary_index_"
EXPRESSION_INDEX_PREFIX = "expr_index_"
DEFAULT_INDEX_DEFS_FILE = ".hoodie/.index_defs/index.json"  # where Hudi 1.x puts it, relative to the base path


@dataclass(frozen=True)
class IndexDefinition:
    """One index as index.json defines it; `version` is None where the file gives none."""

    name: str
    index_type: str
    function: str
    source_fields: tuple[str, ...]
    options: Mapping[str, str] = field(default_factory=dict)
    version: int | None = None

    @property
    def is_secondary(self) -> bool:
        """Whether the index is a secondary index: Hudi tells a metadata partition's kind by its name's prefix."""
        return self.name.startswith(SECONDARY_INDEX_PREFIX)

    @property
    def is_expression(self) -> bool:
        """Whether the index is an expression index (`expr_index_<name>`)."""
        return self.name.startswith(EXPRESSION_INDEX_PREFIX)

    def to_json(self) -> dict[str, Any]:
        """The definition as index.json holds it (HoodieIndexDefinition's fields, in Hudi's order)."""
        entry: dict[str, Any] = {"indexName": self.name, "indexType": self.index_type,
                                 "indexFunction": self.function, "sourceFields": list(self.source_fields),
                                 "indexOptions": dict(self.options)}
        if self.version is not None:
            entry["version"] = f"V{self.version}"
        return entry


def _defs_path(storage: Storage, props: TableProperties) -> str | None:
    """index.json's path relative to the base path, when the table names one."""
    path = props.get(INDEX_DEFS_PATH, "").strip()
    if not path:
        return None
    return storage.relative(path) if "://" in path or path.startswith("/") else path


def index_definitions(storage: Storage, props: TableProperties) -> dict[str, IndexDefinition]:
    """The table's index definitions by name; none when the table names no index.json or it is absent."""
    path = _defs_path(storage, props)
    if path is None or not storage.exists(path):
        return {}
    return parse_index_definitions(storage.read_bytes(path), storage.url(path))


def write_index_definitions(storage: Storage, props: TableProperties,
                            definitions: Mapping[str, IndexDefinition]) -> None:
    """Write index.json with `definitions` (where the table names it, else at Hudi's place, then named in
    hoodie.properties), laid out as Hudi's Jackson pretty printer writes it."""
    path = _defs_path(storage, props) or DEFAULT_INDEX_DEFS_FILE
    document = {"indexDefinitions": {name: d.to_json() for name, d in definitions.items()}}
    storage.write_bytes(path, _jackson(document, 0).encode())
    if props.get(INDEX_DEFS_PATH, "").strip() == "":
        props.update(storage, {INDEX_DEFS_PATH: path})


def _jackson(value: Any, depth: int) -> str:
    """JSON as Jackson's default pretty printer lays it out: `"key" : value`, two-space indents, short arrays
    and empty objects on one line."""
    pad, inner = "  " * depth, "  " * (depth + 1)
    if isinstance(value, dict):
        if not value:
            return "{ }"
        items = [f'{inner}{json.dumps(k)} : {_jackson(v, depth + 1)}' for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list):
        return "[ " + ", ".join(_jackson(v, depth + 1) for v in value) + " ]" if value else "[ ]"
    return json.dumps(value)


def partitioned_record_index(storage: Storage, props: TableProperties) -> bool:
    """Whether index.json defines the record index as partitioned (Hudi 1.1's per-partition layout, option
    `isPartitioned`), which pyhudi neither reads nor keeps in step."""
    definition = index_definitions(storage, props).get("record_index")
    return definition is not None and definition.options.get("isPartitioned", "false").lower() == "true"


def parse_index_definitions(data: bytes, where: str) -> dict[str, IndexDefinition]:
    """The definitions of an index.json's bytes."""
    try:
        document = json.loads(data)
        entries = document.get("indexDefinitions") or {}
        return {name: _definition(entry) for name, entry in entries.items()}
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        raise HoodieCorruptedDataError(f"{where}: the index definitions do not parse: {exc!r}", path=where) from exc


def _definition(entry: dict[str, Any]) -> IndexDefinition:
    return IndexDefinition(
        name=str(entry["indexName"]),
        index_type=str(entry["indexType"]),
        function=str(entry.get("indexFunction") or ""),
        source_fields=tuple(str(f) for f in entry.get("sourceFields") or ()),
        options={str(k): str(v) for k, v in (entry.get("indexOptions") or {}).items()},
        version=_version(entry.get("version")),
    )


def _version(text: Any) -> int | None:
    """HoodieIndexVersion's name (`V1`, `V2`) as its number."""
    if text is None:
        return None
    if not isinstance(text, str) or not text.startswith("V") or not text[1:].isdigit():
        raise ValueError(f"index version {text!r} is not V<number>")
    return int(text[1:])
