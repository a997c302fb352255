"""The shape of the package: no import cycles, every module importable alone, and the
public names pinned (what each public module exports is exactly what is documented).
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import importlib.util
import re
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
            # `from toolguard import _config` imports the module toolguard.policy._config
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
    assert GRAPH["toolguard._dispatcher"] >= {"toolguard.guard._guard", "toolguard.runner._rounds"}
    assert "toolguard._values" in GRAPH["toolguard.errors"]  # a TYPE_CHECKING import


def test_the_package_has_no_import_cycle_lazy_imports_included() -> None:
    assert _cycle(GRAPH) is None


# --- who may import whom -------------------------------------------------------------
#
# A unit is a top-level module or a package (with every module in it). Read from the
# bottom up, the table is the flow of one call: values and text, then what an exception
# says about itself, the policy, what a tool declares, a conversation's state, the guard
# (decides, runs nothing), the runner (runs, hands outcomes to the guard), the stores,
# the public face that composes them, and on top the command, the formats and the
# integrations. A unit may import itself and what its row names, nothing else (lazy and
# TYPE_CHECKING imports included).

_BOTTOM = {"_values", "_text", "_suggest", "_engine"}
_CORE_VALUES = {*_BOTTOM, "_marks", "errors"}
MAY_IMPORT: dict[str, set[str]] = {
    "_values": set(),
    "_text": set(),
    "_suggest": {"_text"},
    "_engine": set(),
    "_logging": {"_text", "_marks", "_engine"},
    "_marks": set(),
    "errors": {"_marks", "_values"},
    "telemetry": _CORE_VALUES,
    "policy": {*_CORE_VALUES, "telemetry"},
    "schema": {*_CORE_VALUES, "_logging", "policy"},
    "sessions": {*_CORE_VALUES, "_logging", "policy"},
    "guard": {*_CORE_VALUES, "_logging", "policy", "telemetry"},
    "runner": {
        *_CORE_VALUES,
        "_logging",
        "_misuse",
        "policy",
        "telemetry",
        "schema",
        "sessions",
        "guard",
    },
    "stores": {*_CORE_VALUES, "_logging", "policy", "sessions"},
    "files": {*_CORE_VALUES, "policy"},
    "handlers": {"policy"},
    "_tool": {*_CORE_VALUES, "policy", "schema", "guard", "runner"},
    "_scope": {*_CORE_VALUES, "policy", "schema", "sessions", "runner"},
    "_session": {*_CORE_VALUES, "policy", "sessions", "runner", "_scope", "_misuse"},
    "_dispatcher": {
        *_CORE_VALUES,
        "policy",
        "telemetry",
        "sessions",
        "guard",
        "runner",
        "stores",
        "_tool",
        "_session",
        "_scope",
        "_misuse",
    },
    "_scripted": {"_values"},
    "_misuse": _CORE_VALUES,
    "testing": {*_CORE_VALUES, "_logging", "_scripted"},
}
# The top: they may import any unit of the core above (never each other's privates).
_TOP = ("", "cli", "pytest_plugin", "_demo", "targets", "_explained", "formats", "integrations")
for _top in _TOP:
    MAY_IMPORT[_top] = {*MAY_IMPORT, "testing"} - set(_TOP)
MAY_IMPORT["cli"] |= {"_demo", "targets", "_explained", "", "integrations"}  # serve-mcp, lazily
MAY_IMPORT["_demo"] |= {""}
MAY_IMPORT["pytest_plugin"] |= {""}
MAY_IMPORT["integrations"] |= {"", "formats", "targets"}  # "": the public face, toolguard


def _unit(module: str) -> str:
    """``toolguard.runner._pipeline`` -> ``runner``; ``toolguard`` -> ``""``."""
    return module.removeprefix("toolguard").removeprefix(".").split(".")[0]


def _violations(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every import of ``graph`` that its unit's row in :data:`MAY_IMPORT` does not allow
    (a unit with no row is a violation too: a new package says where it stands)."""
    found = []
    for module, targets in sorted(graph.items()):
        unit = _unit(module)
        allowed = MAY_IMPORT.get(unit)
        for target in sorted(targets):
            if _unit(target) == unit:
                continue
            if allowed is None or _unit(target) not in allowed:
                found.append((module, target))
    return found


def test_the_import_rules_catch_a_violation() -> None:
    """The positive control: the guard importing the runner, the decorator importing the
    runner, a store importing the public face, and a unit with no row are all caught."""
    bad = {
        "toolguard.guard._guard": {"toolguard.runner._pipeline", "toolguard.policy._values"},
        "toolguard.schema._arguments": {"toolguard.runner._pipeline"},
        "toolguard.stores._redis": {"toolguard._session"},
        "toolguard.newpackage._thing": {"toolguard._values"},
    }
    assert _violations(bad) == [
        ("toolguard.guard._guard", "toolguard.runner._pipeline"),
        ("toolguard.newpackage._thing", "toolguard._values"),
        ("toolguard.schema._arguments", "toolguard.runner._pipeline"),
        ("toolguard.stores._redis", "toolguard._session"),
    ]
    assert set(MAY_IMPORT) >= {_unit(module) for module in MODULES}


def test_every_import_follows_the_package_rules() -> None:
    assert _violations(GRAPH) == []


def test_the_core_imports_no_format_integration_or_agent_framework() -> None:
    """Arrows point one way: formats/ and integrations/ import the core, never back."""
    frameworks = (
        *("langchain", "langgraph", "agents", "pydantic_ai", "mcp", "fastmcp"),
        *("crewai", "google", "llama_index", "strands", "smolagents", "agno"),
        *("agent_framework", "ag2", "haystack", "semantic_kernel", "dspy"),
        *("temporalio", "dbos"),  # the durable engines
    )
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
    "toolguard.integrations.crewai._answers": "crewai",
    "toolguard.integrations.crewai._guarded": "crewai",
    "toolguard.integrations.crewai._tools": "crewai",
    "toolguard.integrations.google_adk": "google.adk",
    "toolguard.integrations.google_adk._calls": "google.adk",
    "toolguard.integrations.google_adk._plugin": "google.adk",
    "toolguard.integrations.google_adk._tool": "google.adk",
    "toolguard.integrations.strands": "strands",
    "toolguard.integrations.strands._calls": "strands",
    "toolguard.integrations.strands._hooks": "strands",
    "toolguard.integrations.strands._tool": "strands",
    "toolguard.integrations.semantic_kernel": "semantic_kernel",
    "toolguard.integrations.semantic_kernel._calls": "semantic_kernel",
    "toolguard.integrations.semantic_kernel._filters": "semantic_kernel",
    "toolguard.integrations.semantic_kernel._functions": "semantic_kernel",
    "toolguard.integrations.dspy": "dspy",
    "toolguard.integrations.dspy._guarded": "dspy",
    "toolguard.integrations.dspy._tools": "dspy",
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
        "EngineRetry",
        "EngineUnit",
        "HandlerContext",
        "Image",
        "Injected",
        "InjectedCallId",
        "InvalidArguments",
        "InvalidOption",
        "ModelRetriesExhausted",
        "Output",
        "PolicyFileError",
        "RemoteFailure",
        "Retry",
        "RetryWithFeedback",
        "ReturnDirect",
        "Round",
        "Scope",
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
        "WorkflowRuntime",
        "__version__",
        "configure",
        "get_config",
        "load_policy",
        "register_control_flow",
        "register_engine_unit",
        "register_workflow_runtime",
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
        "EngineRetry",
        "InjectionError",
        "InvalidArguments",
        "InvalidOption",
        "ModelRetriesExhausted",
        "RemoteFailure",
        "ResultNotSerializable",
        "RetryWithFeedback",
        "ToolCallFailed",
        "ToolDefinitionError",
        "ToolError",
        "ToolTimeout",
        "ToolUnavailable",
        "UnknownTool",
        "VisibleToModel",
        "is_control_flow",
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
    "toolguard.targets": ["TargetError", "importable_cwd", "load_target"],
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
    """Public modules are the ones pinned above, the formats and the integrations; every
    other module is a ``_`` module, and every other package says in its docstring that
    it is private."""
    for module, path in MODULES.items():
        leaf = module.rpartition(".")[2]
        if module in PUBLIC or module.startswith(("toolguard.formats.", "toolguard.integrations")):
            continue
        if path.name == "__init__.py":
            docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
            assert "Private" in docstring and "May import" in docstring, module
            continue
        assert leaf.startswith("_"), module


def test_version_is_the_distributions() -> None:
    assert toolguard.__version__ == importlib.metadata.version("toolguard-agents")


_IGNORE = re.compile(r"#\s*type:\s*ignore(\[[^]]*\])?(?P<rest>.*)$")


def _unexplained_ignores(text: str) -> list[int]:
    """The lines of ``text`` with a ``type: ignore`` that says no reason after it."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        match = _IGNORE.search(line)
        if match and not re.match(r"\s*(#|-)\s*\S", match.group("rest")):
            found.append(number)
    return found


def test_every_type_ignore_in_the_package_says_why() -> None:
    assert _unexplained_ignores("x = f()  # type: ignore[arg-type]\n") == [1]
    assert _unexplained_ignores("x = f()  # type: ignore[arg-type]  # a reason\n") == []
    missing = {
        module: lines
        for module, path in MODULES.items()
        if (lines := _unexplained_ignores(path.read_text(encoding="utf-8")))
    }
    assert missing == {}


# --- integrations stand on public names ---------------------------------------------

_PUBLIC_UNITS = {
    "",
    "errors",
    "handlers",
    "testing",
    "targets",
    "stores",
    "formats",
    "integrations",
}


def _core_private_names() -> set[str]:
    """Private attribute names the core defines (``self._x = ...``, ``def _x``, slots)."""
    names: set[str] = set()
    for module, path in MODULES.items():
        if _unit(module) in ("formats", "integrations"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(node.name)
    return {name for name in names if name.startswith("_") and not name.startswith("__")}


def _private_uses(module: str, source: str, imports: set[str], core_private: set[str]) -> list[str]:
    """What ``module`` reaches of the core that is not public: a private module of the
    core (``imports``), or a core private attribute of another object than
    ``self``/``cls`` (in ``source``)."""
    found = [
        target
        for target in sorted(imports)
        # the integrations' own modules (what they share, each framework's) are theirs
        if not target.startswith("toolguard.integrations.")
        and (
            _unit(target) not in _PUBLIC_UNITS
            or any(part.startswith("_") for part in target.split(".")[1:])
        )
    ]
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in core_private
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        ):
            found.append(f".{node.attr} (line {node.lineno})")
    return found


def test_the_public_names_check_catches_a_private_reach() -> None:
    """The positive control: a private module and a private attribute are both found,
    public names and the integration's own private modules are not."""
    core_private = _core_private_names()
    assert {"_runner", "_state"} <= core_private
    imports = {
        "toolguard.runner._pipeline",
        "toolguard",
        "toolguard.errors",
        "toolguard.integrations.inplace",
        "toolguard.integrations._probe_helpers",
    }
    source = "def f(dispatcher, self):\n    return dispatcher._runner, self._runner\n"
    assert _private_uses("toolguard.integrations._probe", source, imports, core_private) == [
        "toolguard.runner._pipeline",
        "._runner (line 2)",
    ]
    # a package's __init__ re-exporting its own private modules reaches nothing
    own = {"toolguard.integrations.probe._impl"}
    assert _private_uses("toolguard.integrations.probe", "", own, core_private) == []


def test_integrations_reach_nothing_private_of_the_core() -> None:
    core_private = _core_private_names()
    reached = {
        module: uses
        for module, path in MODULES.items()
        if module.startswith("toolguard.integrations")
        if (
            uses := _private_uses(
                module, path.read_text(encoding="utf-8"), GRAPH[module], core_private
            )
        )
    }
    assert reached == {}
