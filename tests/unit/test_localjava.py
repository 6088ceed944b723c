"""Which Java the local node runs on, and the flags each release gets (service/engine/java.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.engine import java as LJ


def fake_jdk(root: Path, name: str, version: str | None) -> Path:
    home = root / name
    (home / "bin").mkdir(parents=True)
    exe = home / "bin" / "java"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    if version is not None:
        (home / "release").write_text(f'IMPLEMENTOR="test"\nJAVA_VERSION="{version}"\n')
    return exe


@pytest.mark.parametrize(
    "release, feature",
    [('JAVA_VERSION="21.0.5"', 21), ('JAVA_VERSION="25"', 25), ('JAVA_VERSION="1.8.0_392"', 8), ('JAVA_VERSION="17.0.15"', 17),
     ("JAVA_VERSION=oops", None), ("", None)],
)
def test_feature_version_reads_the_release_file(tmp_path, release, feature):
    (tmp_path / "release").write_text(release + "\n")
    assert LJ.feature_version(tmp_path) == feature


def test_feature_version_without_a_release_file(tmp_path):
    assert LJ.feature_version(tmp_path) is None


@pytest.mark.parametrize(
    "feature, flags",
    [
        (17, []),
        (None, []),
        (21, ["--add-modules=jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"]),
        (23, ["--add-modules=jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"]),
        (25, ["--add-modules=jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
              "-Dorg.apache.lucene.vectorization.upperJavaFeatureVersion=25"]),
    ],
)
def test_flags_follow_the_release(feature, flags):
    assert LJ.Java("/x/bin/java", feature).flags() == flags


@pytest.fixture
def jvms(tmp_path, monkeypatch):
    monkeypatch.setattr(LJ, "JVM_ROOTS", (tmp_path / "jvm",))
    path_dir = tmp_path / "path"
    monkeypatch.setattr(LJ.shutil, "which", lambda name: str(path_dir / "bin" / "java") if (path_dir / "bin" / "java").exists() else None)
    return tmp_path


def test_prefers_the_newest_tested_jdk_over_java_on_path(jvms):
    fake_jdk(jvms, "path", "17.0.15")
    fake_jdk(jvms / "jvm", "jdk-17", "17.0.15")
    fake_jdk(jvms / "jvm", "jdk-21", "21.0.5")
    newest = fake_jdk(jvms / "jvm", "jdk-25", "25.0.3")
    fake_jdk(jvms / "jvm", "jdk-27", "27")  # newer than tested: not picked by itself
    assert LJ.pick_java({}) == LJ.Java(str(newest), 25)


def test_falls_back_to_java_on_path(jvms):
    on_path = fake_jdk(jvms, "path", "17.0.15")
    fake_jdk(jvms / "jvm", "jdk-11", "11.0.2")
    assert LJ.pick_java({}) == LJ.Java(str(on_path), 17)


def test_engram_java_overrides(jvms):
    fake_jdk(jvms / "jvm", "jdk-25", "25.0.3")
    on_path = fake_jdk(jvms, "path", "17.0.15")
    chosen = fake_jdk(jvms, "chosen", "21.0.1")
    assert LJ.pick_java({"ENGRAM_JAVA": str(chosen)}) == LJ.Java(str(chosen), 21)
    assert LJ.pick_java({"ENGRAM_JAVA": "path"}) == LJ.Java(str(on_path), 17)


def test_no_java_at_all(jvms):
    assert LJ.pick_java({}) is None
