"""What an upgrade or downgrade changes in hoodie.properties, one table version step at a time.

Apache Hudi 1.2.0's handlers (SixToEight / SevenToEight, EightToNine, NineToEight, EightToSix) each return the
keys to add and the keys to remove; the table version and timeline layout are set last, with them, in one
rewrite of the file. The key sets here are the ones Apache Hudi 1.2.0 writes when it upgrades a version 6 table
pyhudi wrote (docs/FORMAT-v8.md, "Upgrade and downgrade"): the key generator class is kept beside its new type,
`hoodie.archivelog.folder` and the other version 6 keys stay, `hoodie.timeline.history.path` is not added.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .properties import (
    KEYGEN_CLASS,
    KEYGEN_CLASS_BY_TYPE,
    KEYGEN_TYPE,
    LAYOUT_VERSION,
    MERGER_STRATEGY,
    ORDERING_FIELDS,
    PAYLOAD_CLASS,
    PRECOMBINE_FIELD,
    VERSION,
)
from .properties_v8 import (
    CUSTOM,
    DEFAULT_PAYLOAD,
    EVENT_TIME_ORDERING,
    IGNORE_DEFAULTS,
    INITIAL_VERSION,
    LEGACY_PAYLOAD_CLASS,
    MERGE_MODE,
    MERGE_STRATEGY_ID,
    PARTIAL_UPDATE_MODE,
    PAYLOAD_OF_MODE,
    STRATEGY_OF_MODE,
    TIMELINE_FOLDER,
    TIMELINE_PATH,
    merge_mode,
)

# Payload classes version 9 replaces by a merge mode (UpgradeDowngradeUtils.PAYLOAD_CLASSES_TO_HANDLE): the
# three pyhudi writes; the others (Debezium, AWS DMS, OverwriteNonDefaults) pyhudi does not merge with.
_LEGACY_PAYLOADS = frozenset(PAYLOAD_OF_MODE.values())
_TYPE_OF_KEYGEN_CLASS = {cls: key_type for key_type, cls in KEYGEN_CLASS_BY_TYPE.items()}
# Timeline layout of each table version pyhudi writes.
LAYOUT_OF_VERSION = {6: 1, 8: 2, 9: 2}


@dataclass
class ChangeSet:
    """Keys to set and keys to remove, gathered over the steps of one upgrade or downgrade."""

    changes: dict[str, str] = field(default_factory=dict)
    deletes: set[str] = field(default_factory=set)

    def put(self, key: str, value: str) -> None:
        self.changes[key] = value
        self.deletes.discard(key)

    def remove(self, key: str) -> None:
        self.changes.pop(key, None)
        self.deletes.add(key)

    def applied(self, props: Mapping[str, str]) -> dict[str, str]:
        """`props` with this change set applied (what the next step sees)."""
        out = {k: v for k, v in props.items() if k not in self.deletes}
        out.update(self.changes)
        return out


def _put_strategy(changes: ChangeSet, strategy: str) -> None:
    """The merge strategy id, with its alternative key `hoodie.compaction.record.merger.strategy`: Hudi writes every
    key it adds under its alternatives too (UpgradeDowngrade.run), and removes only the main key later."""
    changes.put(MERGE_STRATEGY_ID, strategy)
    changes.put(MERGER_STRATEGY, strategy)


def _set_version(changes: ChangeSet, version: int) -> None:
    changes.put(VERSION, str(version))
    changes.put(LAYOUT_VERSION, str(LAYOUT_OF_VERSION[version]))


def six_to_eight(props: Mapping[str, str], changes: ChangeSet, asked_mode: str | None,
                 payload: str | None) -> None:
    """Initial version 6, the merge mode inferred from the payload class (the write's, else the recorded one,
    else Hudi 1.x's default DefaultHoodieRecordPayload) with its payload and strategy id, the key generator's
    type, the timeline path."""
    ordering = props.get(PRECOMBINE_FIELD) or props.get(ORDERING_FIELDS)
    used_payload = payload or props.get(PAYLOAD_CLASS) or DEFAULT_PAYLOAD
    mode = merge_mode(asked_mode, used_payload, ordering)
    changes.put(INITIAL_VERSION, "6")
    changes.put(MERGE_MODE, mode)
    changes.put(PAYLOAD_CLASS, PAYLOAD_OF_MODE[mode])
    _put_strategy(changes, STRATEGY_OF_MODE[mode])
    keygen = props.get(KEYGEN_CLASS)
    if keygen and keygen in _TYPE_OF_KEYGEN_CLASS:
        changes.put(KEYGEN_CLASS, keygen)
        changes.put(KEYGEN_TYPE, _TYPE_OF_KEYGEN_CLASS[keygen])
    changes.put(TIMELINE_PATH, TIMELINE_FOLDER)
    _set_version(changes, 8)


def eight_to_nine(props: Mapping[str, str], changes: ChangeSet) -> None:
    """The merge strategy id goes (the mode says it), a payload class version 9 deprecates becomes the legacy
    payload class, the precombine field becomes the ordering fields. PartialUpdateAvroPayload's CUSTOM mode
    becomes event time with IGNORE_DEFAULTS partial updates (EightToNineUpgradeHandler: its event-time strategy id
    stays under the alternative key only, as Hudi 1.2.0 leaves it)."""
    changes.remove(MERGE_STRATEGY_ID)
    payload = props.get(PAYLOAD_CLASS)
    if payload in _LEGACY_PAYLOADS:
        changes.put(LEGACY_PAYLOAD_CLASS, payload)
        changes.remove(PAYLOAD_CLASS)
    if payload == PAYLOAD_OF_MODE[CUSTOM]:
        changes.put(MERGE_MODE, EVENT_TIME_ORDERING)
        changes.put(MERGER_STRATEGY, STRATEGY_OF_MODE[EVENT_TIME_ORDERING])
        changes.put(PARTIAL_UPDATE_MODE, IGNORE_DEFAULTS)
    ordering = props.get(ORDERING_FIELDS) or props.get(PRECOMBINE_FIELD)
    if ordering:
        changes.put(ORDERING_FIELDS, ordering)
        changes.remove(PRECOMBINE_FIELD)
    _set_version(changes, 9)


def nine_to_eight(props: Mapping[str, str], changes: ChangeSet) -> None:
    """The reverse of eight_to_nine as NineToEightDowngradeHandler does it: the partial update mode goes, the
    legacy payload class is the payload class again (no strategy id comes back for DefaultHoodieRecordPayload and
    OverwriteWithLatestAvroPayload; PartialUpdateAvroPayload, one of its PAYLOAD_CLASSES_TO_HANDLE, gets CUSTOM and
    the payload-based strategy id), the ordering fields are the precombine field again."""
    changes.remove(PARTIAL_UPDATE_MODE)
    legacy = props.get(LEGACY_PAYLOAD_CLASS)
    if legacy in _LEGACY_PAYLOADS:
        changes.remove(LEGACY_PAYLOAD_CLASS)
        changes.put(PAYLOAD_CLASS, legacy)
    if legacy == PAYLOAD_OF_MODE[CUSTOM]:
        changes.put(MERGE_MODE, CUSTOM)
        _put_strategy(changes, STRATEGY_OF_MODE[CUSTOM])
    ordering = props.get(ORDERING_FIELDS)
    if ordering:
        changes.put(PRECOMBINE_FIELD, ordering)
        changes.remove(ORDERING_FIELDS)
    _set_version(changes, 8)


def eight_to_six(props: Mapping[str, str], changes: ChangeSet) -> None:
    """EightToSixDowngradeHandler: no initial version or merge mode, the payload class and strategy id the mode
    stands for, the key generator's class instead of its type."""
    changes.remove(INITIAL_VERSION)
    mode = (props.get(MERGE_MODE) or "").upper()
    payload = props.get(PAYLOAD_CLASS) or PAYLOAD_OF_MODE.get(mode)
    if payload:
        changes.put(PAYLOAD_CLASS, payload)
    if mode in STRATEGY_OF_MODE:
        _put_strategy(changes, STRATEGY_OF_MODE[mode])
    changes.remove(MERGE_MODE)
    key_type = (props.get(KEYGEN_TYPE) or "").upper()
    keygen = props.get(KEYGEN_CLASS) or KEYGEN_CLASS_BY_TYPE.get(key_type)
    if keygen:
        changes.put(KEYGEN_CLASS, keygen)
    changes.remove(KEYGEN_TYPE)
    _set_version(changes, 6)


def version_path(start: int, target: int) -> list[tuple[int, int]]:
    """The steps between two of the versions pyhudi writes (6, 8, 9), one version step of Hudi's at a time
    (version 7 is no table version pyhudi or Hudi 1.x writes: 6 to 8 is one step)."""
    versions = sorted(LAYOUT_OF_VERSION)
    lo, hi = sorted((start, target))
    chain = [v for v in versions if lo <= v <= hi]
    if start > target:
        chain.reverse()
    return list(zip(chain, chain[1:], strict=False))


def property_changes(props: Mapping[str, str], start: int, target: int, asked_mode: str | None = None,
                     payload: str | None = None) -> ChangeSet:
    """The change set of going from `start` to `target`, step by step, each step seeing the last one's result."""
    changes = ChangeSet()
    for step in version_path(start, target):
        current = changes.applied(props)
        if step == (6, 8):
            six_to_eight(current, changes, asked_mode, payload)
        elif step == (8, 9):
            eight_to_nine(current, changes)
        elif step == (9, 8):
            nine_to_eight(current, changes)
        else:
            eight_to_six(current, changes)
    return changes
