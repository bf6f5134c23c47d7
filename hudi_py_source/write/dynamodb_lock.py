"""Hudi's DynamoDBBasedLockProvider: the table lock as one item of a DynamoDB table, kept the way Amazon's DynamoDB
lock client keeps it (the client Apache Hudi uses), so pyhudi's and Apache Hudi's writers take the same lock.

The item, keyed by `key` = hoodie.write.lock.dynamodb.partition_key (the table's name by default, as Hudi infers
it), holds ownerName, leaseDuration (milliseconds, as a string) and recordVersionNumber (a new UUID at every change).
- Taking it: create the item if there is none; replace a released one (isReleased) or one whose version has not
  changed for its whole lease since first seen (its holder stopped renewing: dead), each conditional on the version
  seen, so two writers cannot both take it.
- Holding it: a thread renews the version every third of the lease (hoodie.write.lock.wait_time_ms, Hudi's lease).
- Releasing it: delete the item, conditional on this holder's version.
The lock table (partition key `key`, a string) is created when missing, billed as
hoodie.write.lock.dynamodb.billing_mode. boto3 (the `dynamodb` extra) is loaded only when the provider is used;
credentials come from AWS's usual chain.
"""

from __future__ import annotations

import importlib
import logging
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from ..errors import HoodieConfigError
from ..storage import Storage
from ..table.properties import TableProperties

LOG = logging.getLogger("hudi_py_source.lock")
_KEY = "key"


@dataclass(frozen=True)
class DynamoDBSettings:
    """Where the lock item lives (Hudi's hoodie.write.lock.dynamodb.* keys)."""

    table: str | None
    partition_key: str | None
    region: str
    billing_mode: str
    read_capacity: int
    write_capacity: int
    endpoint_url: str | None


def _client(settings: DynamoDBSettings) -> Any:
    try:
        boto3 = importlib.import_module("boto3")
    except ModuleNotFoundError:
        raise HoodieConfigError("DynamoDBBasedLockProvider needs boto3: pip install 'pyhudi[dynamodb]'",
                                key="hoodie.write.lock.provider") from None
    return boto3.client("dynamodb", region_name=settings.region, endpoint_url=settings.endpoint_url)


class DynamoDBLock:
    """The lock item of one table (see the module docstring)."""

    def __init__(self, storage: Storage, settings: DynamoDBSettings, lease_s: float) -> None:
        if not settings.table:
            raise HoodieConfigError("DynamoDBBasedLockProvider needs hoodie.write.lock.dynamodb.table",
                                    key="hoodie.write.lock.dynamodb.table")
        self.client = _client(settings)
        self.table = settings.table
        self.key = settings.partition_key or TableProperties.load(storage).name
        self.name = f"DynamoDB table {self.table}, partition key {self.key}"
        self.owner = f"{socket.gethostname()}-{uuid.uuid4()}"
        self.lease_ms = max(int(lease_s * 1000), 1)
        self._version: str | None = None
        self._seen: tuple[str, float] | None = None
        self._released = threading.Event()
        self._guard = threading.Lock()
        self._ensure_table(settings)

    def _ensure_table(self, settings: DynamoDBSettings) -> None:
        try:
            self.client.describe_table(TableName=self.table)
            return
        except self.client.exceptions.ResourceNotFoundException:
            pass
        request: dict[str, Any] = {"TableName": self.table, "BillingMode": settings.billing_mode,
                                   "KeySchema": [{"AttributeName": _KEY, "KeyType": "HASH"}],
                                   "AttributeDefinitions": [{"AttributeName": _KEY, "AttributeType": "S"}]}
        if settings.billing_mode == "PROVISIONED":
            request["ProvisionedThroughput"] = {"ReadCapacityUnits": settings.read_capacity,
                                                "WriteCapacityUnits": settings.write_capacity}
        try:
            self.client.create_table(**request)
        except self.client.exceptions.ResourceInUseException:
            pass
        self.client.get_waiter("table_exists").wait(TableName=self.table)

    def _item(self) -> dict[str, Any]:
        self._version = str(uuid.uuid4())
        return {_KEY: {"S": self.key}, "ownerName": {"S": self.owner}, "leaseDuration": {"S": str(self.lease_ms)},
                "recordVersionNumber": {"S": self._version}}

    def try_lock(self) -> bool:
        found = self.client.get_item(TableName=self.table, Key={_KEY: {"S": self.key}}, ConsistentRead=True)
        item = found.get("Item")
        if item is None:
            return self._put("attribute_not_exists(#k)", {}, {"#k": _KEY})
        version = item["recordVersionNumber"]["S"]
        released = item.get("isReleased", {}).get("BOOL", False)
        if not released and not self._dead(version, int(item.get("leaseDuration", {}).get("S", self.lease_ms))):
            return False
        return self._put("#v = :seen", {":seen": {"S": version}}, {"#v": "recordVersionNumber"})

    def _dead(self, version: str, lease_ms: int) -> bool:
        """Whether the holder of `version` has not renewed it for a whole lease since this writer first saw it."""
        now = time.monotonic()
        if self._seen is None or self._seen[0] != version:
            self._seen = (version, now)
            return False
        return (now - self._seen[1]) * 1000 >= lease_ms

    def _put(self, condition: str, values: dict[str, Any], names: dict[str, str]) -> bool:
        request: dict[str, Any] = {"TableName": self.table, "Item": self._item(), "ConditionExpression": condition,
                                   "ExpressionAttributeNames": names}
        if values:
            request["ExpressionAttributeValues"] = values
        try:
            self.client.put_item(**request)
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        threading.Thread(target=self._renew, name=f"pyhudi-dynamodb-lock-{self.key}", daemon=True).start()
        return True

    def _mine(self) -> dict[str, Any]:
        return {"ConditionExpression": "#v = :mine AND ownerName = :me",
                "ExpressionAttributeNames": {"#v": "recordVersionNumber"},
                "ExpressionAttributeValues": {":mine": {"S": self._version}, ":me": {"S": self.owner}}}

    def _renew(self) -> None:
        """A new version every third of the lease while held; a renewal refused means the lock was taken over."""
        while not self._released.wait(self.lease_ms / 3000):
            with self._guard:
                if self._released.is_set():
                    return
                mine = self._mine()
                new = str(uuid.uuid4())
                mine["ExpressionAttributeValues"][":new"] = {"S": new}
                try:
                    self.client.update_item(TableName=self.table, Key={_KEY: {"S": self.key}},
                                            UpdateExpression="SET #v = :new", **mine)
                except self.client.exceptions.ConditionalCheckFailedException:
                    LOG.error("lost the lock (%s): another writer took it over", self.name)
                    return
                self._version = new

    def unlock(self) -> None:
        with self._guard:
            self._released.set()
            try:
                self.client.delete_item(TableName=self.table, Key={_KEY: {"S": self.key}}, **self._mine())
            except self.client.exceptions.ConditionalCheckFailedException:
                LOG.warning("the lock (%s) had been taken over before its release", self.name)

    def holder(self) -> str:
        found = self.client.get_item(TableName=self.table, Key={_KEY: {"S": self.key}}, ConsistentRead=True)
        item = found.get("Item")
        return item["ownerName"]["S"] if item is not None else "nobody now"

    def close(self) -> None:
        """Nothing held."""
