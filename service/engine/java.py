"""Which Java runs the local node, and the flags its version wants.

OpenSearch's own distribution ships JDK 21 and, from Java 20 on, starts with
`--add-modules=jdk.incubator.vector` (its jvm.options), which lets Lucene compute vector distances
with SIMD: kNN search, HNSW building at indexing and merging. On this project's machines `java` on
PATH is 17, where Lucene falls back to scalar code, so the local node prefers a JDK 21-25 when one
is installed (measured: the importer's 20k memories with vectors, 862 -> 1,297/s; docs/engine.md).

    ENGRAM_JAVA=/path/to/bin/java   use this one
    ENGRAM_JAVA=path                use java on PATH, whatever its version
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

# The Java releases the local node was tested with (the whole suite, on OpenSearch 2.19.1 / Lucene
# 9.12.1). A newer JDK is not picked by itself: OpenSearch 2.19 is not known to run there.
PREFERRED = range(21, 26)
JVM_ROOTS = (Path("/usr/lib/jvm"), Path("/usr/local/lib/jvm"), Path("/opt/java"))
# Lucene 9.12 enables its vector code only up to Java 23, the newest release it knew of; this
# system property raises that bound (the code it runs is its Java 21 one).
LUCENE_UPPER = "org.apache.lucene.vectorization.upperJavaFeatureVersion"
LUCENE_DEFAULT_UPPER = 23


@dataclass(frozen=True)
class Java:
    path: str
    feature: int | None  # 17, 21, 25, ...; None when the release file cannot be read

    def flags(self) -> list[str]:
        if self.feature is None or self.feature < 20:
            return []
        out = ["--add-modules=jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"]
        if self.feature > LUCENE_DEFAULT_UPPER:
            out.append(f"-D{LUCENE_UPPER}={self.feature}")
        return out


def feature_version(home: Path) -> int | None:
    """The Java feature release of a JDK home, from its `release` file (JAVA_VERSION="21.0.5")."""
    try:
        text = (home / "release").read_text(errors="replace")
    except OSError:
        return None
    m = re.search(r'^JAVA_VERSION="(\d+)(?:\.(\d+))?', text, re.M)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major  # "1.8.0" is Java 8


def _home(java: str) -> Path:
    return Path(os.path.realpath(java)).parent.parent


def _installed() -> list[Java]:
    found = []
    for root in JVM_ROOTS:
        if not root.is_dir():
            continue
        for home in sorted(root.iterdir()):
            exe = home / "bin" / "java"
            if exe.is_file() and os.access(exe, os.X_OK) and not home.is_symlink():
                found.append(Java(str(exe), feature_version(home)))
    return found


def pick_java(env: dict[str, str] | None = None) -> Java | None:
    """ENGRAM_JAVA; else the newest installed JDK in PREFERRED; else java on PATH (None if there is none)."""
    env = os.environ if env is None else env
    chosen = env.get("ENGRAM_JAVA", "").strip()
    on_path = shutil.which("java")
    if chosen and chosen != "path":
        return Java(chosen, feature_version(_home(chosen)))
    if not chosen:
        preferred = [j for j in _installed() if j.feature in PREFERRED]
        if preferred:
            return max(preferred, key=lambda j: j.feature or 0)
    return Java(on_path, feature_version(_home(on_path))) if on_path else None
