"""SIGKILL a real writer process with every table service on, again and again (issue 14).

Each round starts `support/versioned_writer.py` on the table at the version after the one it holds, kills it
with SIGKILL at a random moment after it is ready, and checks the table: pyhudi and hudi-rs read the
same whole snapshot (no wrong row, no duplicate key), at least as new as the last write the writer saw
return (no lost commit). The next round's first write is the "next write" that must succeed.

`PYTHONPATH=tests python tests/system/test_sigkill.py ROUNDS [SEED]` runs a long campaign on COW and MOR and
prints its counts (`make kill-test KILLS=500`).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from support.faults import heartbeats_expire
from support.oracles import hudi_rs_read
from support.versioned_writer import states

from hudi_py_source import Table

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
WRITER = HERE.parent / "support" / "versioned_writer.py"
KNOWN = states(20000)
ROUNDS_IN_SUITE = 12


@dataclass
class Campaign:
    kills: int = 0
    wrong_rows: int = 0
    lost_commits: int = 0
    failed_next_writes: int = 0
    versions: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def version_of(path: str) -> int:
    """The version whose snapshot both readers return; -1 before the first commit."""
    if not Path(path, ".hoodie", "hoodie.properties").exists():
        return -1
    ours = Table(path).read(columns=["id", "v"])
    snapshot = tuple(sorted(zip(ours.column("id").to_pylist(), ours.column("v").to_pylist(), strict=True)))
    if not snapshot:
        return -1
    theirs = hudi_rs_read(path)
    theirs_snapshot = tuple(sorted(zip(theirs.column("id").to_pylist(), theirs.column("v").to_pylist(),
                                       strict=True)))
    if snapshot not in KNOWN or theirs_snapshot != snapshot:
        differ = sorted(set(snapshot) ^ set(theirs_snapshot))
        timeline = sorted(os.listdir(Path(path, ".hoodie")))
        raise AssertionError(f"no whole snapshot (pyhudi's is {'a' if snapshot in KNOWN else 'no'} known state, "
                             f"{len(snapshot)} rows; hudi-rs {len(theirs_snapshot)} rows); (key, version) pairs "
                             f"only one reader returned: {differ}; timeline: {timeline}")
    return KNOWN[snapshot]


def one_round(path: str, table_type: str, rng: random.Random, campaign: Campaign) -> None:
    before = version_of(path)
    writer = subprocess.Popen([sys.executable, str(WRITER), path, table_type, str(before + 1)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=HERE)
    assert writer.stdout is not None
    assert writer.stdout.readline().strip() == "ready", writer.stderr.read() if writer.stderr else ""
    time.sleep(rng.uniform(0.0, 1.2))
    writer.send_signal(signal.SIGKILL)
    out, err = writer.communicate()
    heartbeats_expire(path)  # the next writer comes after the killed one's heartbeat has expired
    committed = [int(line.split()[1]) for line in out.splitlines() if line.startswith("committed ")]
    campaign.kills += 1
    if writer.returncode != -signal.SIGKILL:
        campaign.failed_next_writes += 1
        campaign.problems.append(f"writer exited {writer.returncode} before the kill: {err[-2000:]}")
        return
    try:
        after = version_of(path)
    except AssertionError as exc:
        campaign.wrong_rows += 1
        campaign.problems.append(str(exc)[:2000])
        return
    if committed and after < committed[-1]:
        campaign.lost_commits += 1
        campaign.problems.append(f"the writer saw version {committed[-1]} commit, the table holds {after}")
    campaign.versions.append(after)


def run_campaign(root: str, table_type: str, rounds: int, seed: int) -> Campaign:
    rng = random.Random(seed)
    path = os.path.join(root, f"t-{table_type.lower()}")
    campaign = Campaign()
    for _ in range(rounds):
        one_round(path, table_type, rng, campaign)
        if campaign.wrong_rows:
            break
    return campaign


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_sigkill_anywhere_loses_nothing_and_the_next_write_succeeds(tmp_path: Path, table_type: str) -> None:
    campaign = run_campaign(str(tmp_path), table_type, ROUNDS_IN_SUITE, seed=14)
    assert campaign.problems == []
    assert (campaign.kills, campaign.wrong_rows, campaign.lost_commits, campaign.failed_next_writes) == (
        ROUNDS_IN_SUITE, 0, 0, 0)
    assert campaign.versions[-1] > 2, f"the writer hardly wrote between kills: {campaign.versions}"


def main(rounds: int, seed: int) -> int:
    totals: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="pyhudi-kill-") as root:
        for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ"):
            started = time.monotonic()
            campaign = run_campaign(root, table_type, rounds // 2, seed)
            print(f"{table_type}: {campaign.kills} kills, {campaign.wrong_rows} wrong reads, "
                  f"{campaign.lost_commits} lost commits, {campaign.failed_next_writes} failed next writes; "
                  f"reached version {campaign.versions[-1] if campaign.versions else None} "
                  f"in {time.monotonic() - started:.0f} s")
            for problem in campaign.problems:
                print("  ", problem)
            totals.update(kills=campaign.kills, wrong=campaign.wrong_rows, lost=campaign.lost_commits,
                          failed=campaign.failed_next_writes)
    print(f"total: {totals['kills']} kills, {totals['wrong']} wrong reads, {totals['lost']} lost commits, "
          f"{totals['failed']} failed next writes")
    return 0 if totals["wrong"] == totals["lost"] == totals["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 14))
