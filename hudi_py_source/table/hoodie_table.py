"""A loaded Hudi table: its properties, timeline and schema, read once per operation."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from ..errors import HoodieTableError, HoodieUnsupportedError
from ..io.avro_schema import avro_to_arrow
from ..io.base_file import META_COLUMNS, read_footer
from ..storage import Storage
from ..timeline.active import ActiveTimeline
from .file_listing import FileListing, StorageListing
from .fs_view import FileSystemView
from .mdt import FILES_PARTITION, ListingWithFallback, MetadataFileListing
from .properties import TableProperties

META_FOLDER = ".hoodie"
PROPERTIES_FILE = ".hoodie/hoodie.properties"


def table_exists(storage: Storage) -> bool:
    """A Hudi table is a folder whose `.hoodie` holds hoodie.properties (or its backup, mid-update)."""
    return storage.exists(PROPERTIES_FILE) or storage.exists(PROPERTIES_FILE + ".backup")


def ensure_not_foreign(storage: Storage) -> None:
    """Refuse to create a table over a folder that already holds other data. A `.hoodie` folder with no file in
    it is a creation a crash interrupted before hoodie.properties: the new table is created over it."""
    if table_exists(storage):
        return
    names = storage.list_names("")
    if names == [META_FOLDER] and not storage.walk_files(META_FOLDER):
        return
    if names:
        raise HoodieTableError(
            f"{storage.base_url} is not a Hudi table (no .hoodie/hoodie.properties) but is not empty "
            f"({', '.join(names[:5])}); refusing to write a Hudi table over it"
        )


class HoodieTable:
    """One load of a table: its properties, active timeline and file-system view, read once and passed down
    through an operation, so nothing in it lists storage twice. `reload` after the table changed."""

    def __init__(self, storage: Storage, props: TableProperties, timeline: ActiveTimeline,
                 metadata_listing: bool = False, listing_fallback: bool = False) -> None:
        self.storage = storage
        self.props = props
        self.timeline = timeline
        self.metadata_listing = metadata_listing
        self.listing_fallback = listing_fallback
        self._view: FileSystemView | None = None

    @classmethod
    def load(cls, storage: Storage, metadata_listing: bool | None = False) -> HoodieTable:
        """The table at `storage`: hoodie.properties (its absence: not a Hudi table) and the active timeline.
        `metadata_listing` lists the table's files from its metadata table's `files` partition instead of
        storage; None chooses it when the table has one and is of version 8 or 9, as Hudi's readers and writers do
        (a rollback still lists storage: the metadata table never lists an uncommitted instant's files)."""
        props = TableProperties.load(storage)
        version = props.version
        if version not in (6, 8, 9):
            raise HoodieUnsupportedError(
                f"{storage.base_url} has hoodie.table.version={version}; pyhudi reads versions 6 and 8",
                feature=f"hoodie.table.version={version}", path=storage.base_url)
        timeline = ActiveTimeline.load(storage, props.layout_version, props.timeline_timezone)
        if metadata_listing is None:
            chosen = version >= 8 and FILES_PARTITION in props.metadata_partitions
            return cls(storage, props, timeline, chosen, listing_fallback=True)
        return cls(storage, props, timeline, metadata_listing)

    def reload(self) -> HoodieTable:
        return HoodieTable.load(self.storage, None if self.listing_fallback else self.metadata_listing)

    def fs_view(self) -> FileSystemView:
        """The file-system view of this load, built on first use and kept: its listings are this load's."""
        if self._view is None:
            self._view = FileSystemView(self.storage, self.timeline, self.props, self._listing())
        return self._view

    def _listing(self) -> FileListing | None:
        """The metadata table's listing when chosen (falling back to storage's when it was chosen for the table
        rather than asked for), else None: the view's default, storage's."""
        if not self.metadata_listing:
            return None
        listing = MetadataFileListing(self.storage, self.props, self.timeline)
        return ListingWithFallback(listing, StorageListing(self.storage)) if self.listing_fallback else listing

    def avro_schema(self, as_of: str | None = None) -> dict[str, Any] | None:
        """The writer schema of the latest completed commit that recorded one (no meta fields)."""
        for instant in reversed(self.timeline.completed_commits()):
            if as_of is not None and instant.timestamp > as_of:
                continue
            text = self.timeline.read_commit_metadata(instant).extra_metadata.get("schema")
            if text:
                schema: dict[str, Any] = json.loads(text)
                return schema
        create = self.props.get("hoodie.table.create.schema")
        return json.loads(create) if create else None

    def schema(self, as_of: str | None = None) -> pa.Schema | None:
        """The data schema (without meta columns); from commit metadata, else a base file's footer."""
        avro = self.avro_schema(as_of)
        if avro is not None:
            return avro_to_arrow(avro)
        slices = self.fs_view().latest_file_slices(as_of=as_of)
        for file_slice in slices:
            if file_slice.base_file is not None:
                footer = read_footer(self.storage, file_slice.base_file.path)
                return pa.schema([f for f in footer.schema if f.name not in META_COLUMNS])
        return None
