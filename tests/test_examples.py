"""Every script in examples/ runs offline and exits 0.

An example for a framework that cannot share this environment says so in a line of
its own, ``# example-environment: crewai`` (the module it needs): it runs where that
module is installed (its own environment, ``.ci/extras``) and is left out elsewhere.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

MARKER = "# example-environment: "


def _runs_here(script: Path) -> bool:
    """False for an example marked for another environment whose module is missing."""
    for line in script.read_text(encoding="utf-8").splitlines():
        if line.startswith(MARKER):
            try:
                return importlib.util.find_spec(line.removeprefix(MARKER).strip()) is not None
            except ModuleNotFoundError:  # "google.adk" without even "google"
                return False
    return True


EXAMPLES = sorted(
    path for path in (Path(__file__).parent.parent / "examples").glob("*.py") if _runs_here(path)
)


def test_there_are_examples() -> None:
    assert EXAMPLES


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script: Path) -> None:
    env = {**os.environ, "PYTHONWARNINGS": "error::DeprecationWarning:toolguard"}
    completed = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=script.parent.parent,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.strip(), "an example should show what it does"


ALL_EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.py"))


def _imported(source: str) -> set[str]:
    """The top-level packages a script imports that are neither stdlib nor toolguard."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"toolguard", "__future__"}


def _installed_by(command: str) -> set[str]:
    """The distributions (lower case, ``-`` for ``_``) a ``pip install -e ".[x,y]" a b``
    line installs: toolguard's own requirements, its extras' and the names it lists."""
    words = command.split("pip install", 1)[1].split()
    extras = set(re.findall(r"\[([^\]]*)\]", command))
    wanted = {e.strip() for group in extras for e in group.split(",")}
    found = {_norm(w) for w in words if not w.startswith(("-", '"', ".", "/"))}
    for requirement in importlib.metadata.requires("toolguard-agents") or []:
        name = _norm(re.split(r"[ ;<>=!\[]", requirement, maxsplit=1)[0])
        marker = re.search(r"""extra == ["']([^"']+)["']""", requirement)
        if marker is None or marker.group(1) in wanted:
            found.add(name)
    return found | {f"extra:{extra}" for extra in wanted}


@functools.cache
def _distributions() -> Mapping[str, list[str]]:
    """Which installed distributions provide each top-level module (read once: a scan
    of every installed package's metadata)."""
    return importlib.metadata.packages_distributions()


def _norm(name: str) -> str:
    return name.lower().replace("_", "-")


@pytest.mark.parametrize("script", ALL_EXAMPLES, ids=lambda p: p.name)
def test_an_examples_docstring_names_the_install_it_needs(script: Path) -> None:
    """Each example says, in its docstring, the pip line that installs every package it
    imports (a toolguard extra, or the package itself)."""
    source = script.read_text(encoding="utf-8")
    docstring = ast.get_docstring(ast.parse(source)) or ""
    commands = [line for line in docstring.splitlines() if "pip install" in line]
    assert commands, f"{script.name}: its docstring has no pip install line"
    installed = set().union(*map(_installed_by, commands))
    distributions = _distributions()
    for module in _imported(source):
        names = {_norm(d) for d in distributions.get(module, [])} | {_norm(module)}
        # a distribution the line installs, or an extra named for the framework (one of
        # another environment, not installed here: google-adk for google.adk)
        extra = any(i.startswith(f"extra:{_norm(module)}") for i in installed)
        assert names & installed or extra, (script.name, module, commands)
