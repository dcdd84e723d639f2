"""The two distributions' metadata: licence, links, and extras users can combine with their own
pins (ranges), while the internal ``test`` extra pins what CI runs."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")

ROOT = Path(__file__).resolve().parent.parent
PROJECTS = {"rulescore": ROOT / "pyproject.toml",
            "zygotepy": ROOT / "packaging" / "zygotepy" / "pyproject.toml"}
#: users' extras of rulescore (the others are for working on this repository)
USER_EXTRAS = {"testing", "jax", "torch", "autograd", "scipy", "array-api"}
INTERNAL_EXTRAS = {"test", "dev", "docs", "bench", "realworld"}


def project(name: str) -> dict:
    return tomllib.loads(PROJECTS[name].read_text())


@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_licence_links_and_classifiers(name: str) -> None:
    data = project(name)
    meta = data["project"]
    assert meta["license"] == "MIT", "the SPDX expression (setuptools deprecates the table form)"
    for licence in meta["license-files"]:
        assert (PROJECTS[name].parent / licence).read_text().startswith("MIT License")
    assert any(r.startswith("setuptools>=77") for r in data["build-system"]["requires"])
    assert "urls" not in meta, "no project URLs until the project has a published home (none is guessed)"
    assert meta["authors"] and any(c.startswith("Development Status") for c in meta["classifiers"])
    licence_classifiers = [c for c in meta["classifiers"] if c.startswith("License ::")]
    assert not licence_classifiers, "the SPDX expression replaces licence classifiers"


def test_users_extras_are_ranges_and_the_test_extra_pins_what_ci_runs() -> None:
    extras = project("rulescore")["project"]["optional-dependencies"]
    assert set(extras) == USER_EXTRAS | INTERNAL_EXTRAS
    for extra in USER_EXTRAS:
        for requirement in extras[extra]:
            assert ">=" in requirement and "<" in requirement.replace("<=", ""), \
                f"[{extra}] {requirement}: a compatible range, with a lower and an upper bound"
            assert "==" not in requirement, f"[{extra}] {requirement}: users' extras do not pin exactly"
    pinned = {re.split(r"[\[=<>]", r)[0]: r for r in extras["test"] if "==" in r}
    assert set(pinned) == {"jax", "torch"}, pinned
    assert "pytest-xdist" in " ".join(extras["test"]) and "markdown-it-py" in " ".join(extras["test"])


@pytest.mark.parametrize("package", ["jax", "torch"])
def test_the_versions_ci_pins_satisfy_the_users_extras(package: str) -> None:
    """``pip install 'rulescore[jax]'`` may resolve to the version the test suite runs with."""
    extras = project("rulescore")["project"]["optional-dependencies"]
    pin = next(r for r in extras["test"] if re.match(rf"{package}\b", r)).split("==")[1].rstrip(".*")

    def as_tuple(v: str) -> tuple[int, ...]:
        return tuple(int(p) for p in v.split("."))

    for op, bound in re.findall(r"(>=|<)([\d.]+)", extras[package][0]):
        inside = as_tuple(pin) >= as_tuple(bound) if op == ">=" else as_tuple(pin) < as_tuple(bound)
        assert inside, f"the test extra's {package}=={pin} is outside the users' extra {extras[package][0]}"


def test_zygotepy_requires_the_rulescore_of_its_release_and_links_the_readme() -> None:
    rulescore, zygotepy = project("rulescore")["project"], project("zygotepy")["project"]
    assert f"rulescore=={rulescore['version']}" in zygotepy["dependencies"]
    assert zygotepy["version"] == rulescore["version"]
    readme = (PROJECTS["zygotepy"].parent / zygotepy["readme"]).read_text()
    links = re.findall(r"\]\((https?://[^)]+)\)", readme)
    assert "https://pypi.org/project/rulescore/" in links, "the project's README: rulescore's description"
    assert all(link.startswith("https://pypi.org/project/rulescore/") for link in links), \
        f"{links}: only addresses the project owns (its distributions' pages), no guessed repository"


def test_the_lower_bound_of_every_users_extra_is_installed_and_tested(tmp_path: Path) -> None:
    """The users' extras are tested at both ends: ``.ci/run``'s suite at the ``test`` extra's pins,
    and ``.ci/lowest`` (a step of ``.ci/run``) in a virtual environment with the lower bound of each range
    (``packaging/lowest_versions.py``)."""
    script = ROOT / "packaging" / "lowest_versions.py"
    spec = importlib.util.spec_from_file_location("lowest_versions", script)
    assert spec is not None and spec.loader is not None
    lowest_versions = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lowest_versions)
    lowest_pins = lowest_versions.lowest_pins
    extras = project("rulescore")["project"]["optional-dependencies"]
    ci = (ROOT / ".ci" / "lowest").read_text()
    tested = re.search(r"lowest_versions\.py ([a-z -]+)>", ci)
    assert tested, ".ci/lowest does not install the lower bounds"
    run = (ROOT / ".ci" / "run").read_text()
    assert "bash .ci/lowest prepare" in run and "bash .ci/lowest test-ci" in run, "no lower bound in CI"
    # torch: the one release whose CPU build CI can install, which the suite runs: its range starts there
    assert set(tested.group(1).split()) == USER_EXTRAS - {"torch"}
    torch_pin = next(r for r in extras["test"] if r.startswith("torch=="))
    assert extras["torch"][0].startswith("torch>=" + ".".join(torch_pin.split("==")[1].split(".")[:2]) + ",")
    pins = lowest_pins(sorted(USER_EXTRAS))
    assert "numpy==" + re.split(">=", project("rulescore")["project"]["dependencies"][0])[1] in pins
    for extra in USER_EXTRAS:
        for requirement in extras[extra]:
            name, lower = re.match(r"([a-z-]+)>=([\d.]+)", requirement).groups()
            assert f"{name}=={lower}" in pins
    with pytest.raises(SystemExit, match="no lower bound"):
        broken = tmp_path / "pyproject.toml"
        broken.write_text('[project]\ndependencies = ["numpy<3"]\n[project.optional-dependencies]\n')
        lowest_pins([], broken)
