"""constraints.txt, the dependency set every install takes, agrees with pyproject.toml: each package
pyproject.toml names (dependencies, extras, the no-deps list) is pinned there once, at a version its
range allows. Without the pin a fresh clone would install whatever is newest that day. The bench
extra is not in the tested set (`make test` does not install it): its own packages take the newest,
within the pins of those they share."""

from __future__ import annotations

from pathlib import Path

import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]


def pins() -> dict[str, str]:
    out: dict[str, str] = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, sep, version = line.partition("==")
        assert sep and version, f"not a pin: {line!r}"
        key = canonicalize_name(name)
        assert key not in out, f"pinned twice: {name}"
        out[key] = version
    return out


def requirements() -> list[Requirement]:
    toml = tomllib.loads((ROOT / "pyproject.toml").read_text())
    project = toml["project"]
    extras = [v for k, v in project["optional-dependencies"].items() if k != "bench"]
    lists = [project["dependencies"], toml["tool"]["engram"]["install-without-deps"], *extras]
    own = canonicalize_name(project["name"])
    return [r for r in map(Requirement, (line for group in lists for line in group)) if canonicalize_name(r.name) != own]


def test_every_requirement_is_pinned_within_its_range():
    pinned = pins()
    found = [(r, pinned.get(canonicalize_name(r.name))) for r in requirements()]
    unpinned = [str(r) for r, version in found if version is None]
    outside = [f"{r} (pinned {version})" for r, version in found if version is not None and not r.specifier.contains(version, prereleases=True)]
    assert (unpinned, outside) == ([], [])


def test_the_installs_read_it():
    # make's pip installs, CI's environment key and the image's runtime step
    makefile, ci, dockerfile = ((ROOT / f).read_text() for f in ("Makefile", ".ci/run", "Dockerfile"))
    assert "CONSTRAINTS ?= constraints.txt" in makefile and "--constraint $(CONSTRAINTS)" in makefile
    assert "cat pyproject.toml constraints.txt | sha256sum" in ci
    assert dockerfile.count("pip install -c constraints.txt") == 2
