"""The Apache Hudi harness's set-up says what is wrong in one line and never lets its tests skip: a bundle that
cannot be fetched, a bundle missing from the cache, a bundle built for another Spark or Scala than the harness
venv's pyspark, a harness venv that is not there. No JVM and no network: the jars are small zips carrying the
pom.properties a real bundle has, and "Maven Central" is a closed port on this machine."""

from __future__ import annotations

import socket
import zipfile
from pathlib import Path

import pytest
from apache_hudi import bundles
from apache_hudi.client import ApacheHudiError, require_set_up


def fake_bundle(path: Path, artifact: str, version: str) -> Path:
    """A jar whose pom.properties names `artifact` (hudi-spark<spark>-bundle_<scala>) and `version`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as jar:
        jar.writestr(f"META-INF/maven/org.apache.hudi/{artifact}/pom.properties",
                     f"#generated\nartifactId={artifact}\ngroupId=org.apache.hudi\nversion={version}\n")
    return path


def pyspark_jars(tmp_path: Path, scala: str) -> Path:
    folder = tmp_path / "pyspark-jars"
    folder.mkdir()
    (folder / f"scala-library-{scala}.jar").write_bytes(b"")
    return folder


@pytest.fixture
def jar_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "jars"
    monkeypatch.setenv("PYHUDI_JARS", str(cache))
    return cache


def test_bundles_matching_the_harness_pyspark_pass(jar_cache: Path, tmp_path: Path) -> None:
    for version in bundles.BUNDLES:
        fake_bundle(jar_cache / bundles.BUNDLES[version].file_name, "hudi-spark3.5-bundle_2.12", version)
    assert bundles.check_runtime("3.5.9", pyspark_jars(tmp_path, "2.12.18")) == []


def test_a_spark_or_scala_mismatch_is_one_line_per_bundle(jar_cache: Path, tmp_path: Path) -> None:
    for version in bundles.BUNDLES:
        fake_bundle(jar_cache / bundles.BUNDLES[version].file_name, "hudi-spark3.5-bundle_2.12", version)
    problems = bundles.check_runtime("4.0.1", pyspark_jars(tmp_path, "2.13.14"))
    python = bundles.sys.executable
    assert problems == [
        f"hudi-spark3.5-bundle_2.12-{version}.jar is built for Spark 3.5 / Scala 2.12 but {python} has pyspark "
        "4.0.1 with Scala 2.13.14: .venv-hudi needs pyspark==3.5.*" for version in bundles.BUNDLES]


def test_a_cached_jar_is_judged_by_what_it_is_not_its_name(jar_cache: Path, tmp_path: Path) -> None:
    """A Spark 3.4 bundle saved under the 3.5 bundle's name is caught by its own pom.properties."""
    fake_bundle(jar_cache / bundles.BUNDLES["0.15.0"].file_name, "hudi-spark3.4-bundle_2.12", "0.15.0")
    fake_bundle(jar_cache / bundles.BUNDLES["1.2.0"].file_name, "hudi-spark3.5-bundle_2.12", "1.2.0")
    problems = bundles.check_runtime("3.5.9", pyspark_jars(tmp_path, "2.12.18"))
    assert len(problems) == 1
    assert problems[0].startswith("hudi-spark3.5-bundle_2.12-0.15.0.jar is built for Spark 3.4 / Scala 2.12 but ")


def test_a_missing_bundle_says_how_to_get_it(jar_cache: Path, tmp_path: Path) -> None:
    fake_bundle(jar_cache / bundles.BUNDLES["1.2.0"].file_name, "hudi-spark3.5-bundle_2.12", "1.2.0")
    assert bundles.check_runtime("3.5.9", pyspark_jars(tmp_path, "2.12.18")) == [
        f"{jar_cache / bundles.BUNDLES['0.15.0'].file_name} is missing: run `make apache-hudi`"]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_maven_central_is_one_line_and_leaves_no_jar(jar_cache: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    central = f"http://127.0.0.1:{_closed_port()}/maven2"
    monkeypatch.setattr(bundles, "MAVEN_CENTRAL", central)
    dest = jar_cache / bundles.BUNDLES["0.15.0"].file_name
    assert bundles._main(["fetch", str(dest)]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    jar_url = f"{central}/org/apache/hudi/hudi-spark3.5-bundle_2.12/0.15.0/hudi-spark3.5-bundle_2.12-0.15.0.jar"
    assert lines[0].startswith(f"cannot fetch {jar_url}:")
    assert "Connection refused" in lines[0]
    assert list(jar_cache.iterdir()) == []


def test_tests_fail_rather_than_skip_without_the_harness(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                         jar_cache: Path) -> None:
    monkeypatch.setenv("HUDI_VENV", str(tmp_path / "no-venv"))
    with pytest.raises(ApacheHudiError) as error:
        require_set_up("0.15.0")
    assert str(error.value) == (
        f"Apache Hudi harness not set up ({tmp_path / 'no-venv' / 'bin' / 'python'}, "
        f"{jar_cache / 'hudi-spark3.5-bundle_2.12-0.15.0.jar'} missing): run `make apache-hudi`")
