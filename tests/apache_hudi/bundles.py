"""Apache Hudi's Spark bundles that the interop tests run: where they are cached, how they are fetched.

Standard library only: `make apache-hudi` runs this with the system python3 before any venv exists, and the
pytest-side client imports it in the main venv to find the jars.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import tempfile
import time
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
GROUP_PATH = "org/apache/hudi"
SPARK_VERSION = "3.5"
SCALA_VERSION = "2.12"
ARTIFACT = f"hudi-spark{SPARK_VERSION}-bundle_{SCALA_VERSION}"
_CHUNK = 1 << 20
_BUNDLE_POM = re.compile(r"META-INF/maven/org\.apache\.hudi/hudi-spark[^/]*-bundle_[^/]*/pom\.properties")
_TIMEOUT_SECONDS = 60


@dataclass(frozen=True)
class Bundle:
    """One Hudi release's Spark bundle, named by the Spark and Scala it was built for."""

    version: str
    artifact: str = ARTIFACT

    @property
    def file_name(self) -> str:
        return f"{self.artifact}-{self.version}.jar"

    @property
    def url(self) -> str:
        return f"{MAVEN_CENTRAL}/{GROUP_PATH}/{self.artifact}/{self.version}/{self.file_name}"

    @property
    def spark_scala(self) -> tuple[str, str]:
        """(Spark minor, Scala binary version) from the artifact name `hudi-spark<spark>-bundle_<scala>`."""
        found = re.fullmatch(r"hudi-spark(\d+\.\d+)-bundle_(\d+\.\d+)", self.artifact)
        if found is None:
            raise ValueError(f"{self.artifact} is not named hudi-spark<spark>-bundle_<scala>")
        return found.group(1), found.group(2)


# 0.15.0 writes table version 6 (what pyhudi writes); 1.2.0 writes versions 8 and 9. No Spark 4 bundle of
# Hudi is on Maven Central (hudi-spark4.0-bundle_2.13 1.1.0 and 1.2.0 answer 404), so both run on Spark 3.5.
BUNDLES = {v: Bundle(v) for v in ("0.15.0", "1.2.0")}


def jars_dir() -> Path:
    """The jar cache: $PYHUDI_JARS, else ~/.cache/pyhudi/jars (shared by every clone on the machine)."""
    return Path(os.environ.get("PYHUDI_JARS") or Path.home() / ".cache" / "pyhudi" / "jars")


def jar_path(version: str) -> Path:
    """Where the bundle of Hudi `version` is cached; KeyError names the versions the harness knows."""
    if version not in BUNDLES:
        raise KeyError(f"no Apache Hudi bundle {version!r}; known: {sorted(BUNDLES)}")
    return jars_dir() / BUNDLES[version].file_name


def _download(url: str, dest: Path) -> str:
    """Stream `url` into `dest`, returning the file's SHA-1 as hex."""
    digest = hashlib.sha1()
    with urllib.request.urlopen(url, timeout=_TIMEOUT_SECONDS) as response, dest.open("wb") as out:
        while chunk := response.read(_CHUNK):
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest()


def _published_sha1(url: str) -> str:
    """The checksum Maven Central publishes beside an artifact (first word of `<url>.sha1`)."""
    with urllib.request.urlopen(f"{url}.sha1", timeout=_TIMEOUT_SECONDS) as response:
        body: bytes = response.read()
    return body.decode("ascii").split()[0].lower()


def fetch(bundle: Bundle, dest: Path) -> None:
    """Download a bundle, check it against Maven Central's .sha1, then move it into place whole.

    Written aside and renamed, so an interrupted download never leaves a jar that `make` takes as present."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with tempfile.NamedTemporaryFile(dir=dest.parent, prefix=f".{dest.name}.", delete=False) as tmp:
        partial = Path(tmp.name)
    try:
        actual = _download(bundle.url, partial)
        expected = _published_sha1(bundle.url)
        if actual != expected:
            raise ValueError(f"SHA-1 {actual} is not the published {expected}")
        partial.chmod(0o644)
        partial.replace(dest)
    finally:
        partial.unlink(missing_ok=True)
    seconds = time.monotonic() - started
    print(f"{dest.name}: {dest.stat().st_size / 1e6:.1f} MB in {seconds:.1f} s, SHA-1 verified")


def bundle_for_jar(path: Path) -> Bundle:
    """The known bundle a cache path names (the Makefile passes jar paths)."""
    for bundle in BUNDLES.values():
        if bundle.file_name == path.name:
            return bundle
    raise KeyError(f"{path.name} is none of {[b.file_name for b in BUNDLES.values()]}")


def jar_spark_scala(jar: Path) -> tuple[str, str]:
    """(Spark minor, Scala binary version) of the artifact the jar's own pom.properties names, so a
    renamed or wrong file in the cache is caught by what it is, not by its name."""
    with zipfile.ZipFile(jar) as zf:
        names = [n for n in zf.namelist() if _BUNDLE_POM.fullmatch(n)]
        if not names:
            raise ValueError(f"{jar} has no META-INF/maven/org.apache.hudi/hudi-spark*-bundle_*/pom.properties")
        lines = zf.read(names[0]).decode().splitlines()
    properties = dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))
    return Bundle(properties["version"], properties["artifactId"]).spark_scala


def check_runtime(pyspark_version: str, pyspark_jars: Path) -> list[str]:
    """Why the cached bundles cannot run on this pyspark, one line each (empty when they all can)."""
    scala_libs = sorted(pyspark_jars.glob("scala-library-*.jar"))
    scala = scala_libs[0].stem.removeprefix("scala-library-") if scala_libs else "?"
    problems = []
    for bundle in BUNDLES.values():
        jar = jars_dir() / bundle.file_name
        if not jar.is_file():
            problems.append(f"{jar} is missing: run `make apache-hudi`")
            continue
        spark, scala_binary = jar_spark_scala(jar)
        if not pyspark_version.startswith(f"{spark}.") or not scala.startswith(f"{scala_binary}."):
            problems.append(
                f"{jar.name} is built for Spark {spark} / Scala {scala_binary} but {sys.executable} has "
                f"pyspark {pyspark_version} with Scala {scala}: .venv-hudi needs pyspark=={spark}.*"
            )
    return problems


def _main(argv: list[str]) -> int:
    """`fetch JAR...` downloads missing bundles; `check` (run by .venv-hudi's python) checks Spark/Scala."""
    if argv[:1] == ["fetch"]:
        for name in argv[1:]:
            bundle = bundle_for_jar(Path(name))
            try:
                fetch(bundle, Path(name))
            except Exception as error:  # noqa: BLE001 - one line naming the URL is the whole report
                print(f"cannot fetch {bundle.url}: {error}", file=sys.stderr)
                return 1
        return 0
    if argv == ["check"]:
        import pyspark

        problems = check_runtime(pyspark.__version__, Path(pyspark.__file__).parent / "jars")
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    print("usage: bundles.py fetch JAR... | check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
