"""BUCKET tagging: the bucket decides the file group; new buckets get the same file id in every task."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from hudi_py_source.config import HoodieConfig
from hudi_py_source.errors import HoodieConfigError, HoodieError, HoodieTableError
from hudi_py_source.index.bucket_index import bucket_file_ids
from hudi_py_source.index.locations import CandidateFile
from hudi_py_source.index.tagging import tag
from hudi_py_source.storage import Storage

UUID_KEY = "334e26e9-8355-45cc-97c6-c31daf0df330"
CONFIG = HoodieConfig({"hoodie.datasource.write.recordkey.field": "uuid"})
EXISTING_227 = "00000227-1111-2222-3333-444455556666-0"
FILE_ID = re.compile(r"^\d{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-0$")


@pytest.fixture
def storage(tmp_path: Path) -> Storage:
    return Storage(str(tmp_path))


def bucket(storage: Storage, keys: list[str], parts: list[str], candidates: list[CandidateFile],
           config: HoodieConfig = CONFIG, instant: str | None = "20240101000000000"):
    return tag("BUCKET", storage, pa.array(keys), pa.array(parts), candidates, config, instant_time=instant)


def test_bucket_ids_of_known_keys(storage: Storage) -> None:
    result = bucket(storage, [UUID_KEY, "1"], ["p", "p"], [])
    assert result.bucket_ids.tolist() == [227, 80]
    complex_config = HoodieConfig({"hoodie.datasource.write.recordkey.field": "id,name",
                                   "hoodie.bucket.index.hash.field": "id,name"})
    assert bucket(storage, ["id:1,name:Alice"], ["p"], [], complex_config).bucket_ids.tolist() == [16]


def test_existing_bucket_file_group_is_reused_per_partition(storage: Storage) -> None:
    existing = CandidateFile("p1", EXISTING_227, f"p1/{EXISTING_227}_0-1-0_001.parquet", "001")
    result = bucket(storage, [UUID_KEY, UUID_KEY, "1"], ["p1", "p2", "p1"], [existing])
    assert result.file_id.to_pylist() == [EXISTING_227, None, None]
    assert result.location_partition.to_pylist() == ["p1", None, None]
    new_ids = result.new_bucket_file_ids.to_pylist()
    assert new_ids[0] is None
    assert new_ids[1].startswith("00000227-") and new_ids[2].startswith("00000080-")
    assert all(FILE_ID.match(i) for i in new_ids[1:])
    assert result.stats.files_considered == [existing.path]


def test_new_bucket_file_ids_agree_across_tasks_and_differ_across_writes(storage: Storage) -> None:
    keys = [UUID_KEY, "1", UUID_KEY, "x", "1"]
    parts = ["p", "p", "p", "q", "q"]
    whole = bucket(storage, keys, parts, []).new_bucket_file_ids.to_pylist()
    assert whole[0] == whole[2] and len(set(whole)) == 4
    task_a = bucket(storage, keys[:2], parts[:2], []).new_bucket_file_ids.to_pylist()
    task_b = bucket(storage, keys[2:], parts[2:], []).new_bucket_file_ids.to_pylist()
    assert task_a + task_b == whole
    other_write = bucket(storage, keys, parts, [], instant="20240101000000001").new_bucket_file_ids.to_pylist()
    assert not set(other_write) & set(whole)


def test_bucket_file_ids_directly() -> None:
    existing = pa.array(["00000003-aaaa-bbbb-cccc-dddddddddddd-0", None, None], pa.string())
    ids = bucket_file_ids(pa.array(["a", "a", "b"]), np.array([3, 3, 3], dtype=np.int32), existing, "007")
    values = ids.to_pylist()
    assert values[0] is None
    assert values[1] != values[2]
    assert values[1] == bucket_file_ids(pa.array(["a"]), np.array([3], dtype=np.int32),
                                        pa.array([None], pa.string()), "007").to_pylist()[0]


def test_log_only_file_groups_count_as_buckets(storage: Storage) -> None:
    log_only = CandidateFile("p", "00000080-aaaa-bbbb-cccc-dddddddddddd-0", "", "001")
    result = bucket(storage, ["1"], ["p"], [log_only])
    assert result.file_id.to_pylist() == [log_only.file_id]
    assert result.new_bucket_file_ids.to_pylist() == [None]
    assert result.stats.files_considered == [log_only.file_id]


def test_changed_bucket_count_is_refused(storage: Storage) -> None:
    existing = CandidateFile("other", EXISTING_227, f"other/{EXISTING_227}_0-1-0_001.parquet", "001")
    config = HoodieConfig({"hoodie.datasource.write.recordkey.field": "uuid",
                           "hoodie.bucket.index.num.buckets": "64"})
    with pytest.raises(HoodieConfigError, match=r"hoodie\.bucket\.index\.num\.buckets=64 .*bucket 227"):
        bucket(storage, ["1"], ["p"], [existing], config)


def test_two_file_groups_in_one_bucket_are_refused(storage: Storage) -> None:
    twins = [CandidateFile("p", f"00000005-aaaa-bbbb-cccc-dddddddddd{i}{i}-0", "", "001") for i in range(2)]
    with pytest.raises(HoodieTableError, match="both hold bucket 5"):
        bucket(storage, ["1"], ["p"], twins)


def test_bucket_needs_instant(storage: Storage) -> None:
    with pytest.raises(HoodieError, match="instant time"):
        bucket(storage, ["1"], ["p"], [], instant=None)


def test_many_keys_bucketed(storage: Storage) -> None:
    keys = [f"key-{i}" for i in range(50000)]
    result = bucket(storage, keys, ["p"] * len(keys), [])
    new_ids = result.new_bucket_file_ids.to_numpy(zero_copy_only=False)
    assert len(set(new_ids)) == len(np.unique(result.bucket_ids)) == 256
    prefixes = np.array([i[:8] for i in new_ids[:1000]])
    assert (prefixes == np.char.zfill(result.bucket_ids[:1000].astype(str), 8)).all()
