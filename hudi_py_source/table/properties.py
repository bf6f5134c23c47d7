"""hoodie.properties: the table's persisted configuration, in java.util.Properties format.

Java readers (Hudi, hudi-rs) parse this file with Properties rules, so reading and writing
follow those rules exactly (escapes, comments, continuations, ISO-8859-1 with \\uXXXX).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime

from ..errors import HoodieTableError
from ..keygen import PartitionLayout
from ..storage import Storage

META_FOLDER = ".hoodie"
PROPERTIES_FILE = ".hoodie/hoodie.properties"
BACKUP_FILE = ".hoodie/hoodie.properties.backup"

NAME = "hoodie.table.name"
TYPE = "hoodie.table.type"
VERSION = "hoodie.table.version"
LAYOUT_VERSION = "hoodie.timeline.layout.version"
RECORDKEY_FIELDS = "hoodie.table.recordkey.fields"
PARTITION_FIELDS = "hoodie.table.partition.fields"
PRECOMBINE_FIELD = "hoodie.table.precombine.field"
ORDERING_FIELDS = "hoodie.table.ordering.fields"
KEYGEN_CLASS = "hoodie.table.keygenerator.class"
KEYGEN_TYPE = "hoodie.table.keygenerator.type"
HIVE_STYLE = "hoodie.datasource.write.hive_style_partitioning"
URL_ENCODE = "hoodie.datasource.write.partitionpath.urlencode"
POPULATE_META_FIELDS = "hoodie.populate.meta.fields"
TIMELINE_TIMEZONE = "hoodie.table.timeline.timezone"
BASE_FILE_FORMAT = "hoodie.table.base.file.format"
ARCHIVE_FOLDER = "hoodie.archivelog.folder"
DATABASE_NAME = "hoodie.database.name"
PAYLOAD_CLASS = "hoodie.compaction.payload.class"
MERGER_STRATEGY = "hoodie.compaction.record.merger.strategy"
DROP_PARTITION_COLUMNS = "hoodie.datasource.write.drop.partition.columns"
CREATE_SCHEMA = "hoodie.table.create.schema"
CHECKSUM = "hoodie.table.checksum"
METADATA_PARTITIONS = "hoodie.table.metadata.partitions"
METADATA_PARTITIONS_INFLIGHT = "hoodie.table.metadata.partitions.inflight"
CDC_ENABLED = "hoodie.table.cdc.enabled"
CDC_LOGGING_MODE = "hoodie.table.cdc.supplemental.logging.mode"
DEFAULT_CDC_LOGGING_MODE = "DATA_BEFORE_AFTER"

DEFAULT_PAYLOAD_CLASS = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
DEFAULT_MERGER_STRATEGY = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"

KEYGEN_CLASS_BY_TYPE = {
    "SIMPLE": "org.apache.hudi.keygen.SimpleKeyGenerator",
    "COMPLEX": "org.apache.hudi.keygen.ComplexKeyGenerator",
    "TIMESTAMP": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
    "CUSTOM": "org.apache.hudi.keygen.CustomKeyGenerator",
    "NON_PARTITION": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
    "GLOBAL_DELETE": "org.apache.hudi.keygen.GlobalDeleteKeyGenerator",
}

# Folders a new table gets (J6 HoodieTableMetaClient.initTableAndGetMetaClient), before hoodie.properties.
_INIT_FOLDERS = (".hoodie/.schema", ".hoodie/.temp", ".hoodie/.aux", ".hoodie/.aux/.bootstrap/.partitions",
                 ".hoodie/.aux/.bootstrap/.fileids")
# Version 8 and 9 tables keep their timeline and its archived (LSM) history in folders of their own, and
# have no `archived` folder (Apache Hudi 1.x).
_INIT_FOLDERS_V8 = _INIT_FOLDERS + (".hoodie/timeline", ".hoodie/timeline/history")


# ---------------------------------------------------------------------------------------------
# java.util.Properties text format


def _logical_lines(text: str) -> Iterator[str]:
    """Joins continuation lines (odd number of trailing backslashes) as Properties.load does."""
    pending: str | None = None
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = raw.lstrip(" \t\f") if pending is not None else raw
        if pending is None:
            stripped = line.lstrip(" \t\f")
            if not stripped or stripped[0] in "#!":
                continue
            line = stripped
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = (pending or "") + line[:-1]
            continue
        yield (pending or "") + line
        pending = None
    if pending is not None:
        yield pending


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 >= len(text):
            out.append(ch if ch != "\\" else "")
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2:i + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise ValueError(f"malformed \\uxxxx escape {text[i:i + 6]!r}")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(nxt, nxt))
        i += 2
    return _join_surrogates("".join(out))


def _join_surrogates(text: str) -> str:
    """Java strings are UTF-16: escaped surrogate pairs become one Python character."""
    if not any("\ud800" <= c <= "\udfff" for c in text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _split_key_value(line: str) -> tuple[str, str]:
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    key = line[:i]
    j = i
    while j < n and line[j] in " \t\f":
        j += 1
    if j < n and line[j] in "=:":
        j += 1
        while j < n and line[j] in " \t\f":
            j += 1
    return _unescape(key), _unescape(line[j:])


def parse_properties(data: bytes) -> dict[str, str]:
    """Parse Properties.load text (ISO-8859-1 bytes); later duplicates win, as in Java."""
    result: dict[str, str] = {}
    for line in _logical_lines(data.decode("latin-1")):
        try:
            key, value = _split_key_value(line)
        except ValueError as err:
            raise HoodieTableError(f"{err} in properties line {line!r}") from None
        result[key] = value
    return result


def _escape(text: str, is_key: bool) -> str:
    out: list[str] = []
    for index, ch in enumerate(_utf16_units(text)):
        code = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == " ":
            out.append("\\ " if is_key or index == 0 else " ")
        elif ch in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[ch])
        elif ch in "=:#!":
            out.append("\\" + ch)
        elif code < 0x20 or code > 0x7E:
            out.append(f"\\u{code:04X}")
        else:
            out.append(ch)
    return "".join(out)


def _utf16_units(text: str) -> list[str]:
    """Java escapes per UTF-16 code unit, so characters beyond the BMP become two escapes."""
    units: list[str] = []
    for ch in text:
        code = ord(ch)
        if code > 0xFFFF:
            code -= 0x10000
            units.extend((chr(0xD800 + (code >> 10)), chr(0xDC00 + (code & 0x3FF))))
        else:
            units.append(ch)
    return units


def java_date_string(moment: datetime) -> str:
    """java.util.Date.toString() in the local zone: `EEE MMM dd HH:mm:ss zzz yyyy`."""
    local = moment.astimezone()
    return local.strftime("%a %b %d %H:%M:%S ") + (local.tzname() or "UTC") + local.strftime(" %Y")


def java_instant_string(moment: datetime) -> str:
    """java.time.Instant.toString(): UTC, fraction in groups of 3 digits, omitted when zero."""
    utc = moment.astimezone(UTC)
    base = utc.strftime("%Y-%m-%dT%H:%M:%S")
    micros = utc.microsecond
    if micros == 0:
        return base + "Z"
    if micros % 1000 == 0:
        return f"{base}.{micros // 1000:03d}Z"
    return f"{base}.{micros:06d}Z"


def format_properties(props: Mapping[str, str], comment: str, moment: datetime | None = None) -> bytes:
    """Properties.store output: `#comment`, `#<Date>`, then escaped `key=value` lines."""
    moment = moment or datetime.now(UTC)
    lines = [f"#{_escape_comment(comment)}", f"#{java_date_string(moment)}"]
    lines += [f"{_escape(k, True)}={_escape(v, False)}" for k, v in props.items()]
    return ("\n".join(lines) + "\n").encode("latin-1")


def _escape_comment(comment: str) -> str:
    return "".join(c if ord(c) <= 0xFF and c not in "\r\n" else f"\\u{ord(c):04X}" for c in _utf16_units(comment))


# ---------------------------------------------------------------------------------------------
# TableProperties


def checksum_of(database: str | None, table: str) -> int:
    """CRC32 of `<database>.<table>` (J6 HoodieTableConfig.generateChecksum); "" when no database."""
    return zlib.crc32(f"{database or ''}.{table}".encode())


def _as_bool(value: str | None, default: bool) -> bool:
    if value is None or value.strip() == "":
        return default
    return value.strip().lower() == "true"


def _as_list(value: str | None) -> list[str]:
    if not value:
        return []
    return [part.strip() for part in value.split(",") if part.strip()]


class TableProperties(Mapping[str, str]):
    """The key/value pairs of hoodie.properties, with typed accessors for the keys pyhudi uses."""

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self._values: dict[str, str] = dict(values or {})

    def __getitem__(self, key: str) -> str:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"TableProperties({self._values!r})"

    def as_dict(self) -> dict[str, str]:
        return dict(self._values)

    # typed accessors ------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._values.get(NAME, "")

    @property
    def table_type(self) -> str:
        return self._values.get(TYPE, "COPY_ON_WRITE").upper()

    @property
    def version(self) -> int:
        return int(self._values.get(VERSION, "0"))

    @property
    def layout_version(self) -> int:
        """Layout 2 (timeline under .hoodie/timeline) came with table version 8."""
        raw = self._values.get(LAYOUT_VERSION)
        if raw is not None and raw.strip():
            return int(raw)
        return 2 if self.version >= 8 else 1

    @property
    def record_key_fields(self) -> list[str]:
        return _as_list(self._values.get(RECORDKEY_FIELDS))

    @property
    def partition_fields(self) -> list[str]:
        """As stored; CustomKeyGenerator tables keep `field:TYPE` entries here."""
        return _as_list(self._values.get(PARTITION_FIELDS))

    @property
    def ordering_fields(self) -> list[str]:
        """v8 `hoodie.table.ordering.fields`, falling back to the v6 precombine field."""
        return _as_list(self._values.get(ORDERING_FIELDS) or self._values.get(PRECOMBINE_FIELD))

    @property
    def precombine_field(self) -> str | None:
        value = self._values.get(PRECOMBINE_FIELD) or self._values.get(ORDERING_FIELDS)
        return value.strip() if value and value.strip() else None

    @property
    def keygen_type(self) -> str | None:
        value = self._values.get(KEYGEN_TYPE)
        return value.strip().upper() if value and value.strip() else None

    @property
    def keygen_class(self) -> str | None:
        """The class name; v8 tables store only the type, mapped back to the class it names."""
        value = self._values.get(KEYGEN_CLASS)
        if value and value.strip():
            return value.strip()
        key_type = self.keygen_type
        return KEYGEN_CLASS_BY_TYPE.get(key_type) if key_type else None

    @property
    def partition_layout(self) -> PartitionLayout:
        return PartitionLayout(tuple(self.partition_fields), self.hive_style, self.url_encode)

    @property
    def hive_style(self) -> bool:
        return _as_bool(self._values.get(HIVE_STYLE), False)

    @property
    def url_encode(self) -> bool:
        return _as_bool(self._values.get(URL_ENCODE), False)

    @property
    def populate_meta_fields(self) -> bool:
        return _as_bool(self._values.get(POPULATE_META_FIELDS), True)

    @property
    def timeline_timezone(self) -> str:
        """LOCAL or UTC; hudi-rs writes lower case, Java's enum wants upper case."""
        return (self._values.get(TIMELINE_TIMEZONE) or "LOCAL").strip().upper()

    @property
    def base_file_format(self) -> str:
        return (self._values.get(BASE_FILE_FORMAT) or "PARQUET").strip().upper()

    @property
    def archive_folder(self) -> str:
        return self._values.get(ARCHIVE_FOLDER) or "archived"

    @property
    def database_name(self) -> str | None:
        value = self._values.get(DATABASE_NAME)
        return value if value else None

    @property
    def payload_class(self) -> str:
        return self._values.get(PAYLOAD_CLASS) or DEFAULT_PAYLOAD_CLASS

    @property
    def metadata_partitions(self) -> list[str]:
        """Partitions of the table's metadata table (files, column_stats, …); empty when it has none."""
        return _as_list(self._values.get(METADATA_PARTITIONS))

    @property
    def inflight_partitions(self) -> list[str]:
        """Metadata partitions being built (listed once built, see write/metadata_writer.py)."""
        return _as_list(self._values.get(METADATA_PARTITIONS_INFLIGHT))

    @property
    def drop_partition_columns(self) -> bool:
        return _as_bool(self._values.get(DROP_PARTITION_COLUMNS), False)

    @property
    def cdc_enabled(self) -> bool:
        return _as_bool(self._values.get(CDC_ENABLED), False)

    @property
    def cdc_logging_mode(self) -> str:
        """OP_KEY_ONLY, DATA_BEFORE or DATA_BEFORE_AFTER; Hudi reads the recorded value in any case."""
        return (self._values.get(CDC_LOGGING_MODE) or DEFAULT_CDC_LOGGING_MODE).strip().upper()

    @property
    def checksum(self) -> int | None:
        value = self._values.get(CHECKSUM)
        return int(value) if value and value.strip().isdigit() else None

    # checksum --------------------------------------------------------------------------------

    def expected_checksum(self) -> int:
        return checksum_of(self.database_name, self.name)

    def has_valid_checksum(self) -> bool:
        return self.checksum is not None and self.checksum == self.expected_checksum()

    def validate_checksum(self) -> None:
        """A stored checksum that does not match means a torn or foreign file: refuse it."""
        if CHECKSUM in self._values and not self.has_valid_checksum():
            raise HoodieTableError(
                f"hoodie.properties has hoodie.table.checksum={self._values[CHECKSUM]} but "
                f"crc32('{self.database_name or ''}.{self.name}') is {self.expected_checksum()}"
            )

    def with_checksum(self) -> TableProperties:
        values = dict(self._values)
        values[CHECKSUM] = str(checksum_of(values.get(DATABASE_NAME) or None, values.get(NAME, "")))
        return TableProperties(values)

    # persistence -----------------------------------------------------------------------------

    def to_bytes(self, moment: datetime | None = None, first_save: bool = False) -> bytes:
        """The file text; a valid checksum already present gets J6's `Updated at` header, unless this is the
        first save of a new version 8 or 9 table (`first_save`), which Hudi 1.x heads `Properties saved on`."""
        moment = moment or datetime.now(UTC)
        if first_save:
            return format_properties(self._values, f"Properties saved on {java_instant_string(moment)}", moment)
        if self.has_valid_checksum():
            return format_properties(self._values, f"Updated at {java_instant_string(moment)}", moment)
        fixed = self.with_checksum()
        return format_properties(fixed._values, f"Properties saved on {java_instant_string(moment)}", moment)

    @classmethod
    def from_bytes(cls, data: bytes) -> TableProperties:
        return cls(parse_properties(data))

    @classmethod
    def load(cls, storage: Storage) -> TableProperties:
        """Read hoodie.properties, or its backup when an update was interrupted.

        As in J6, the first candidate whose checksum is valid wins; failing that, the first one
        that could be read (tables written by tools that never set a checksum).
        """
        readable: list[TableProperties] = []
        for path in (PROPERTIES_FILE, BACKUP_FILE):
            try:
                props = cls.from_bytes(storage.read_bytes(path))
            except FileNotFoundError:
                continue
            if props.has_valid_checksum() or (CHECKSUM not in props and NAME in props):
                return props
            readable.append(props)
        if readable:
            return readable[0]
        raise HoodieTableError(f"{storage.base_url} is not a Hudi table (no .hoodie/hoodie.properties)",
                               path=storage.base_url)

    def store(self, storage: Storage) -> TableProperties:
        """Write hoodie.properties of a new table; refuses to replace an existing one."""
        stored = self if self.has_valid_checksum() else self.with_checksum()
        try:
            storage.create_new(PROPERTIES_FILE, stored.to_bytes(first_save=stored.version >= 8))
        except FileExistsError:
            raise HoodieTableError(
                f"{storage.url(PROPERTIES_FILE)} already exists; a table is already initialised there"
            ) from None
        return stored

    def update(self, storage: Storage, changes: Mapping[str, str],
               deletes: Iterable[str] = ()) -> TableProperties:
        """Rewrite the stored hoodie.properties with `changes` applied (J6 modify protocol).

        The changes apply to the file as stored now, not to this object, so a concurrent update
        of other keys is not lost.

        Backup first, then delete and rewrite the file, verify it, and drop the backup: a reader
        that finds no hoodie.properties mid-update reads the backup, so it never sees a torn file.
        """
        current = _recover(storage)
        values = current.as_dict()
        values.update(changes)
        for key in deletes:
            values.pop(key, None)
        updated = TableProperties(values).with_checksum()
        storage.write_bytes(BACKUP_FILE, storage.read_bytes(PROPERTIES_FILE))
        storage.delete(PROPERTIES_FILE)
        storage.write_bytes(PROPERTIES_FILE, updated.to_bytes())
        written = TableProperties.from_bytes(storage.read_bytes(PROPERTIES_FILE))
        if written.as_dict() != updated.as_dict() or not written.has_valid_checksum():
            raise HoodieTableError(
                f"{storage.url(PROPERTIES_FILE)} did not read back as written; "
                f"{storage.url(BACKUP_FILE)} keeps the previous version"
            )
        storage.delete(BACKUP_FILE)
        return written

    # construction ----------------------------------------------------------------------------

    @classmethod
    def for_new_table(
        cls,
        name: str,
        table_type: str = "COPY_ON_WRITE",
        record_key_fields: list[str] | None = None,
        partition_fields: list[str] | None = None,
        precombine_field: str | None = None,
        keygen_class: str | None = None,
        hive_style: bool = False,
        url_encode: bool = False,
        create_schema_json: str | None = None,
        populate_meta_fields: bool = True,
        timezone: str = "LOCAL",
        extra: Mapping[str, str] | None = None,
        payload_class: str = DEFAULT_PAYLOAD_CLASS,
    ) -> TableProperties:
        """The v6 key set Hudi 0.14 writes for a new table (no metadata-table partitions).

        Like Hudi 0.14, only a merge-on-read table records its payload class: its readers and compaction
        merge log records with it, whereas each copy-on-write write merges with its own."""
        if not name:
            raise HoodieTableError("hoodie.table.name is required to create a table")
        table_type = table_type.upper()
        if table_type not in ("COPY_ON_WRITE", "MERGE_ON_READ"):
            raise HoodieTableError(f"hoodie.table.type={table_type} is not COPY_ON_WRITE or MERGE_ON_READ")
        values: dict[str, str] = {}
        if precombine_field:
            values[PRECOMBINE_FIELD] = precombine_field
        values[DROP_PARTITION_COLUMNS] = "false"
        if partition_fields:
            values[PARTITION_FIELDS] = ",".join(partition_fields)
        values[TYPE] = table_type
        values[ARCHIVE_FOLDER] = "archived"
        if not populate_meta_fields:
            values[POPULATE_META_FIELDS] = "false"
        values[LAYOUT_VERSION] = "1"
        values[VERSION] = "6"
        if record_key_fields:
            values[RECORDKEY_FIELDS] = ",".join(record_key_fields)
        values[URL_ENCODE] = str(bool(url_encode)).lower()
        values[NAME] = name
        if keygen_class:
            values[KEYGEN_CLASS] = keygen_class
        values[HIVE_STYLE] = str(bool(hive_style)).lower()
        if create_schema_json:
            values[CREATE_SCHEMA] = create_schema_json
        if timezone and timezone.upper() != "LOCAL":
            values[TIMELINE_TIMEZONE] = timezone.upper()
        if table_type == "MERGE_ON_READ":
            values[PAYLOAD_CLASS] = payload_class
            values[MERGER_STRATEGY] = DEFAULT_MERGER_STRATEGY
        values.update(extra or {})
        return cls(values).with_checksum()


def finish_interrupted_update(storage: Storage) -> None:
    """Finish an update a crash interrupted (nothing to do when none was): the backup goes, restoring the file
    first when it is missing or torn."""
    if storage.exists(BACKUP_FILE):
        _recover(storage)


def _recover(storage: Storage) -> TableProperties:
    """Finish an interrupted update: the backup replaces a missing or torn hoodie.properties."""
    has_backup = storage.exists(BACKUP_FILE)
    current: TableProperties | None
    try:
        current = TableProperties.from_bytes(storage.read_bytes(PROPERTIES_FILE))
    except FileNotFoundError:
        if not has_backup:
            raise HoodieTableError(f"{storage.base_url} is not a Hudi table (no .hoodie/hoodie.properties)",
                                   path=storage.base_url) from None
        current = None
    if has_backup and (current is None or (CHECKSUM in current and not current.has_valid_checksum())):
        storage.write_bytes(PROPERTIES_FILE, storage.read_bytes(BACKUP_FILE))
        current = TableProperties.from_bytes(storage.read_bytes(PROPERTIES_FILE))
    if has_backup:
        storage.delete(BACKUP_FILE)
    assert current is not None
    return current


def init_table_layout(storage: Storage, props: TableProperties) -> TableProperties:
    """Create the folders of a new table, then hoodie.properties (which makes it a table)."""
    storage.makedirs("")
    storage.makedirs(META_FOLDER)
    folders = _INIT_FOLDERS_V8 if props.version >= 8 else (
        _INIT_FOLDERS[:1] + (f"{META_FOLDER}/{props.archive_folder}",) + _INIT_FOLDERS[1:])
    for folder in folders:
        storage.makedirs(folder)
    return props.store(storage)
