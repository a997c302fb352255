"""The shape of the package: no import cycles, every module importable alone, and the
public names pinned (what each public module exports is exactly what is documented).
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import importlib.util
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import toolguard

PACKAGE = Path(toolguard.__file__).resolve().parent


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name."""
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(module: str, path: Path) -> set[str]:
    """The package's modules ``module`` imports: anywhere in it (function bodies and
    ``TYPE_CHECKING`` blocks included), by absolute or relative import."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from toolguard import _config` imports the module toolguard._config
            names = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                for alias in node.names
            ]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
    return targets


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph``, as the list of modules around it, or ``None``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_cycle_finder_finds_a_cycle_and_passes_a_tree() -> None:
    """The positive control: the check below cannot pass by not looking."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
    assert GRAPH["toolguard._dispatcher"] >= {"toolguard._guard", "toolguard._rounds"}
    assert "toolguard._values" in GRAPH["toolguard.errors"]  # a TYPE_CHECKING import


def test_the_package_has_no_import_cycle_lazy_imports_included() -> None:
    assert _cycle(GRAPH) is None


def test_the_core_imports_no_format_integration_or_agent_framework() -> None:
    """Arrows point one way: formats/ and integrations/ import the core, never back."""
    frameworks = ("langchain", "langgraph", "agents", "pydantic_ai", "mcp", "fastmcp")
    for module, path in MODULES.items():
        if module.startswith(("toolguard.formats", "toolguard.integrations")):
            continue
        if module in ("toolguard.cli",):  # the command serves MCP, lazily, on request
            continue
        assert not {t for t in GRAPH[module] if t.startswith("toolguard.integrations")}, module
        assert not {t for t in GRAPH[module] if t.startswith("toolguard.formats")}, module
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {
            alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        } | {
            (node.module or "").split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and not node.level
        }
        assert not imported & set(frameworks), (module, imported & set(frameworks))


def _import_alone(module: str) -> tuple[str, int, str]:
    done = subprocess.run(
        [sys.executable, "-c", f"import {module}"], capture_output=True, text=True, check=False
    )
    return module, done.returncode, done.stderr[-2000:]


# Integrations whose framework cannot share this environment (its pins conflict with
# the test extra): module -> the framework it needs. Each is imported, and tested, in
# the framework's own environment (.ci/extras); here only where that is installed.
OWN_ENVIRONMENT: dict[str, str] = {
    "toolguard.integrations.crewai": "crewai",
    "toolguard.integrations._crewai_tools": "crewai",
    "toolguard.integrations.google_adk": "google.adk",
    "toolguard.integrations.strands": "strands",
}


def _importable_here(module: str) -> bool:
    needs = OWN_ENVIRONMENT.get(module)
    if needs is None:
        return True
    try:
        return importlib.util.find_spec(needs) is not None
    except ModuleNotFoundError:  # "google.adk" without even "google"
        return False


def test_every_module_imports_alone_in_a_fresh_interpreter() -> None:
    """Whatever imports it first, no module needs another to have been imported before."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(_import_alone, filter(_importable_here, MODULES)))
    failed = [(module, stderr) for module, code, stderr in outcomes if code != 0]
    assert not failed, failed


# --- the public names --------------------------------------------------------------------

PUBLIC: dict[str, list[str]] = {
    "toolguard": [
        "AgentPolicy",
        "BoundTool",
        "Breaker",
        "ControlFlow",
        "Dispatcher",
        "HandlerContext",
        "Image",
        "Injected",
        "InjectedCallId",
        "InvalidArguments",
        "InvalidOption",
        "ModelRetriesExhausted",
        "Output",
        "PolicyFileError",
        "Retry",
        "RetryWithFeedback",
        "ReturnDirect",
        "Round",
        "Session",
        "Setting",
        "Text",
        "Tool",
        "ToolCall",
        "ToolCallFailed",
        "ToolDefinitionError",
        "ToolError",
        "ToolPolicy",
        "ToolResult",
        "ToolState",
        "ToolTimeout",
        "ToolUnavailable",
        "UNSET",
        "UnknownTool",
        "VisibleToModel",
        "__version__",
        "configure",
        "get_config",
        "load_policy",
        "register_control_flow",
        "reset_defaults",
        "tool",
    ],
    "toolguard.handlers": [
        "Handler",
        "HandlerContext",
        "HandlerLike",
        "always",
        "fail",
        "fail_unless_visible",
        "generic_unless_visible",
        "on",
        "send_exception_message",
    ],
    "toolguard.errors": [
        "ControlFlow",
        "InjectionError",
        "InvalidArguments",
        "InvalidOption",
        "ModelRetriesExhausted",
        "ResultNotSerializable",
        "RetryWithFeedback",
        "ToolCallFailed",
        "ToolDefinitionError",
        "ToolError",
        "ToolTimeout",
        "ToolUnavailable",
        "UnknownTool",
        "VisibleToModel",
        "register_control_flow",
    ],
    "toolguard.testing": [
        "ScriptedModel",
        "anthropic_response",
        "assert_logged_once",
        "assert_not_leaked",
        "capture_events",
        "openai_response",
    ],
    "toolguard.pytest_plugin": ["toolguard_defaults", "toolguard_events"],
    "toolguard.cli": ["build_parser", "main"],
    "toolguard.formats": ["anthropic", "gemini", "mcp", "openai", "strict_schema"],
    "toolguard.stores": [
        "AsyncStore",
        "FailMode",
        "MemoryStore",
        "RedisStore",
        "Store",
        "StoreUnavailable",
    ],
}


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_each_public_module_exports_exactly_its_documented_names(module: str) -> None:
    imported = importlib.import_module(module)
    exported = list(imported.__all__)
    assert exported == sorted(exported), "keep __all__ alphabetised"
    assert exported == PUBLIC[module]
    for name in exported:
        assert hasattr(imported, name), name


def test_every_module_outside_the_public_ones_is_private() -> None:
    """Public modules are the ones pinned above, the formats and the integrations;
    everything else is a ``_`` module."""
    for module in MODULES:
        leaf = module.rpartition(".")[2]
        if module in PUBLIC or module.startswith(("toolguard.formats.", "toolguard.integrations")):
            continue
        assert leaf.startswith("_"), module


def test_version_is_the_distributions() -> None:
    assert toolguard.__version__ == importlib.metadata.version("toolguard-agents")
