"""The Elasticsearch node's Java launcher: the JDK it runs on and its Maven build.

``harness/java/es-node`` is a Maven project whose only dependencies are Elasticsearch's
server jar and its Netty4 transport plugin. ``ensure_built()`` runs Maven once (and again
only when the pom or a Java source changes); the node then runs as
``java -cp <classpath()> platform.esnode.EsNodeLauncher`` (``harness.es_node``).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

from harness.base import ServiceError

ES_NODE_PROJECT = Path(__file__).resolve().parent / "java" / "es-node"
DEFAULT_JDK = Path("/usr/lib/jvm/temurin-25-jdk-amd64")
JVM_ROOT = Path("/usr/lib/jvm")
MIN_JAVA_FEATURE = 21
LAUNCHER_CLASS = "platform.esnode.EsNodeLauncher"
BUILD_STAMP = ".es-node-build.sha256"


# -- JDK ---------------------------------------------------------------------------------


def java_feature_version(java_home: Path) -> int | None:
    """The feature release (21, 25, ...) of the JDK at ``java_home``, from its ``release`` file."""
    try:
        text = (java_home / "release").read_text(errors="replace")
    except OSError:
        return None
    match = re.search(r'^JAVA_VERSION="(\d+)', text, re.MULTILINE)
    return int(match.group(1)) if match else None


def _usable_jdk(java_home: Path) -> bool:
    version = java_feature_version(java_home)
    return (
        version is not None
        and version >= MIN_JAVA_FEATURE
        and (java_home / "bin" / "java").is_file()
        and (java_home / "bin" / "javac").is_file()
    )


def find_java_home() -> Path:
    """``$ES_JAVA_HOME``, else the Temurin 25 JDK, else the newest JDK >= 21 under /usr/lib/jvm."""
    configured = os.environ.get("ES_JAVA_HOME")
    if configured:
        home = Path(configured)
        if not _usable_jdk(home):
            raise ServiceError(
                f"ES_JAVA_HOME={configured} is not a JDK {MIN_JAVA_FEATURE}+ (needs bin/java, "
                "bin/javac and a release file)"
            )
        return home
    if _usable_jdk(DEFAULT_JDK):
        return DEFAULT_JDK
    candidates = [p for p in JVM_ROOT.glob("*") if not p.is_symlink() and _usable_jdk(p)]
    if candidates:
        return max(candidates, key=lambda p: java_feature_version(p) or 0)
    raise ServiceError(
        f"no JDK {MIN_JAVA_FEATURE}+ found: set ES_JAVA_HOME, or install one under {JVM_ROOT} "
        f"(expected {DEFAULT_JDK})"
    )


# -- build -------------------------------------------------------------------------------


def _source_digest(project: Path) -> str:
    """A hash over the pom and every file under src/: what the build output depends on."""
    digest = hashlib.sha256()
    files = [project / "pom.xml", *sorted(p for p in (project / "src").rglob("*") if p.is_file())]
    for path in files:
        digest.update(path.relative_to(project).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def _build_is_current(project: Path, digest: str) -> bool:
    target = project / "target"
    launcher = target / "classes" / (LAUNCHER_CLASS.replace(".", "/") + ".class")
    try:
        stamp = (target / BUILD_STAMP).read_text().strip()
    except OSError:
        return False
    return stamp == digest and launcher.is_file() and any((target / "lib").glob("*.jar"))


def ensure_built(project: Path = ES_NODE_PROJECT, *, java_home: Path | None = None) -> Path:
    """Compile the launcher and copy its dependency jars into target/lib, unless up to date.

    Up to date means: target/ holds the launcher class and the jars, and was built from the
    current pom.xml and sources (a content hash, so a fresh checkout's mtimes do not matter).
    Concurrent callers serialise on a lock file. Returns the project directory.
    """
    if not (project / "pom.xml").is_file():
        raise ServiceError(f"es-node Maven project not found at {project}")
    digest = _source_digest(project)
    if _build_is_current(project, digest):
        return project
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ServiceError("Maven (mvn) not found on PATH: `apt-get install maven`")
    jdk = java_home or find_java_home()
    target = project / "target"
    target.mkdir(exist_ok=True)
    with (target / ".build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _build_is_current(project, digest):  # another process built it meanwhile
            return project
        # A version change must not leave the old jars next to the new ones on the classpath.
        shutil.rmtree(target / "lib", ignore_errors=True)
        shutil.rmtree(target / "classes", ignore_errors=True)
        (target / BUILD_STAMP).unlink(missing_ok=True)
        env = {**os.environ, "JAVA_HOME": str(jdk)}
        result = subprocess.run(
            [mvn, "-q", "-B", "-f", str(project / "pom.xml"), "compile"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            output = (result.stdout + result.stderr).strip()[-4000:]
            raise ServiceError(f"es-node Maven build failed (exit {result.returncode}):\n{output}")
        (target / BUILD_STAMP).write_text(digest + "\n")
    return project


def classpath(project: Path = ES_NODE_PROJECT) -> str:
    return f"{project / 'target' / 'classes'}{os.pathsep}{project / 'target' / 'lib' / '*'}"
