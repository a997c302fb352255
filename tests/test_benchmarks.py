"""The benchmark script never rots: ``--quick`` runs and reports every case.

No timing is asserted (CI machines are noisy); only that the script exits 0, prints
its table and writes JSON in which every case has a numeric median or an explicit
skip reason. The skip paths (a peer not installed, a peer whose setup breaks) are
checked in-process on stand-in suites.
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
SCRIPT = BENCHMARKS / "compare.py"

TOOLGUARD_CASES = (
    "bare_call",
    "wrapt_passthrough",
    "tool_direct",
    "toolcall_construction",
    "dispatch_dict",
    "dispatch_retry_unused",
    "session_dispatch",
    "dispatch_json",
    "adispatch_async",
    "adispatch_async_json",
    "dispatch_hidden_failure",
    "dispatch_tool_error",
    "dispatch_validation_error",
    "dispatch_unknown_tool",
    "round_async_100",
    "round_sync_16",
    "import_toolguard",
)
PEER_CASES = (
    "langchain_invoke",
    "langchain_handled_error",
    "langchain_validation_error",
    "agents_async",
    "agents_sync",
    "agents_hidden_failure",
    "agents_validation_error",
    "agents_tool_context",
    "mcp_async",
    "mcp_sync",
    "mcp_hidden_failure",
    "mcp_tool_error",
    "mcp_validation_error",
    "mcp_unknown_tool",
    "pydantic_ai_async",
    "pydantic_ai_sync",
    "pydantic_ai_hidden_failure",
    "pydantic_ai_model_retry",
    "pydantic_ai_validation_error",
    "pydantic_ai_unknown_tool",
    "import_langchain",
    "import_agents",
    "import_pydantic_ai",
    "import_mcp",
)


class QuickRun:
    def __init__(self, stdout: str, report: dict[str, Any]) -> None:
        self.stdout = stdout
        self.report = report


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> QuickRun:
    """One ``--quick`` run in a fresh interpreter, shared by the tests below."""
    out = tmp_path_factory.mktemp("bench") / "bench.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return QuickRun(done.stdout, json.loads(out.read_text()))


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@pytest.mark.parametrize("key", TOOLGUARD_CASES + PEER_CASES)
def test_every_case_has_a_median_or_a_skip_reason(quick: QuickRun, key: str) -> None:
    case = quick.report["cases"][key]
    if case["skipped"] is None:
        assert _finite(case["median_us"])
        assert case["min_us"] <= case["median_us"] <= case["max_us"]
        assert case["batches"] >= 1
    else:
        assert isinstance(case["skipped"], str)
        assert case["skipped"].strip()
        assert case["median_us"] is None


@pytest.mark.parametrize("key", TOOLGUARD_CASES)
def test_toolguard_own_cases_are_always_timed(quick: QuickRun, key: str) -> None:
    assert quick.report["cases"][key]["skipped"] is None


def test_peer_rows_are_compared_to_an_existing_toolguard_case(quick: QuickRun) -> None:
    cases = quick.report["cases"]
    for key in PEER_CASES:
        case = cases[key]
        if case["vs"] is None:
            continue
        assert case["vs"] in TOOLGUARD_CASES
        if case["skipped"] is None:
            assert _finite(case["ratio_to_toolguard"])


def test_rounds_report_their_ideal(quick: QuickRun) -> None:
    for key in ("round_async_100", "round_sync_16"):
        case = quick.report["cases"][key]
        assert case["ideal_us"] == 10_000
        assert _finite(case["ratio_to_ideal"])


def test_memory_and_leak_check_are_reported(quick: QuickRun) -> None:
    memory = quick.report["memory"]
    for field in ("bytes_per_tool", "bytes_per_dispatcher", "dispatcher_bytes_per_tool"):
        assert _finite(memory[field])
    leak = quick.report["leak_check"]
    assert leak["dispatches"] == 10_000
    assert _finite(leak["growth_bytes"])


def test_targets_and_pipeline_are_recorded(quick: QuickRun) -> None:
    report = quick.report
    assert report["meta"]["mode"] == "quick"
    assert "processors=[]" in report["meta"]["structlog"]
    assert {t["target"] for t in report["targets"]}
    assert all(t["met"] in (True, False, None) for t in report["targets"])


def test_the_table_is_printed(quick: QuickRun) -> None:
    assert "median" in quick.stdout
    assert "dispatch, dict arguments" in quick.stdout
    assert "targets (issue 7)" in quick.stdout


# --- the skip paths, in-process on stand-in suites ------------------------------------------------


@pytest.fixture
def compare(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """``benchmarks/compare.py`` as a module; sys.path and sys.modules restored after."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    for name in ("_peers", "toolguard_bench_compare"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    spec = importlib.util.spec_from_file_location("toolguard_bench_compare", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "toolguard_bench_compare", module)
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("_peers", None)


def _suite(compare: ModuleType, module: str, setup: Any) -> Any:
    return compare.Suite(
        group="stand-in",
        module=module,
        benches=(compare.Bench(key="stand_in", label="stand-in", stmt="f()", vs="dispatch_dict"),),
        setup=setup,
    )


def _run(compare: ModuleType, suite: Any) -> Any:
    harness = compare.Harness(compare.QUICK)
    try:
        (row,) = compare.run_suites(harness, [suite], lambda text: None)
    finally:
        harness.close()
    return row


def test_a_peer_that_is_not_installed_is_skipped_not_an_error(compare: ModuleType) -> None:
    def setup(run: Any) -> dict[str, Any]:
        raise AssertionError("never set up")

    row = _run(compare, _suite(compare, "no_such_framework_installed", setup))
    assert row.skipped == "skipped (not installed)"
    assert row.median_us is None


def test_a_peer_whose_setup_breaks_is_skipped_with_the_reason(compare: ModuleType) -> None:
    def setup(run: Any) -> dict[str, Any]:
        raise RuntimeError("API moved")

    row = _run(compare, _suite(compare, "json", setup))
    assert row.skipped is not None
    assert "API moved" in row.skipped


def test_an_installed_peer_is_timed(compare: ModuleType) -> None:
    def setup(run: Any) -> dict[str, Any]:
        return {"f": lambda: None}

    row = _run(compare, _suite(compare, "json", setup))
    assert row.skipped is None
    assert _finite(row.median_us)


def test_an_import_that_is_not_installed_is_skipped(
    compare: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        compare, "IMPORTS", (("import_missing", "import nope", "no_such_framework", None),)
    )
    rows, startup = compare.measure_imports(compare.QUICK, lambda text: None)
    assert [row.skipped for row in rows] == ["skipped (not installed)"]
    assert startup > 0
