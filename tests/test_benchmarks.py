"""The benchmark script never rots: ``--quick`` runs and reports every case.

No timing is asserted (CI machines are noisy); only that the script exits 0, prints
its table and writes JSON in which every case has a numeric median or an explicit
skip reason, that every paired row says what it does, and that every target of the
issues is evaluated. The skip paths (a peer not installed, a peer whose setup breaks)
are checked in-process on stand-in suites; the per-batch logging pipeline is checked
in a fresh interpreter (structlog's cached loggers would outlive the test).
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
    "floor",
    "dispatch_dict",
    "dispatch_retry_unused",
    "session_dispatch",
    "dispatch_json",
    "adispatch_async",
    "adispatch_async_json",
    "adispatch_sync_inline",
    "adispatch_offload_dict",
    "adispatch_offload_json",
    "thread_handoff",
    "dispatch_hidden_failure",
    "dispatch_tool_error",
    "dispatch_validation_error",
    "dispatch_unknown_tool",
    "arun_one",
    "run_round_sync",
    "dispatch_round_of",
    # arguments and results
    "floor_dict_result",
    "dispatch_dict_result",
    "floor_nested_model",
    "dispatch_nested_model",
    "floor_nested_dataclass",
    "dispatch_nested_dataclass",
    "floor_large_100k_ok",
    "dispatch_large_100k_ok",
    "floor_large_100k_fail",
    "dispatch_large_100k_fail",
    "floor_large_1m_ok",
    "dispatch_large_1m_ok",
    "floor_large_1m_fail",
    "dispatch_large_1m_fail",
    # unknown tools
    "unknown_few_new",
    "unknown_many_new",
    "unknown_few_repeated",
    "unknown_many_repeated",
    # logging to a file
    "floor_logged",
    "floor_logged_json",
    "dispatch_hidden_json",
    "floor_logged_console",
    "dispatch_hidden_console",
    # rounds and imports
    "round_async_100",
    "round_sync_16",
    "import_toolguard",
)
PEER_CASES = (
    "langchain_invoke",
    "langchain_handled_error",
    "langchain_validation_error",
    "langgraph_toolnode_sync",
    "langgraph_toolnode_async",
    "langgraph_toolnode_error",
    "langgraph_toolnode_validation",
    "langgraph_toolnode_unknown",
    "agents_async",
    "agents_sync",
    "agents_hidden_failure",
    "agents_hidden_failure_logged",
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


def test_every_paired_row_says_what_each_side_does(quick: QuickRun) -> None:
    """A peer row and the toolguard row it is compared to both state their work."""
    cases = quick.report["cases"]
    for key, case in cases.items():
        if case["vs"] is None or case["group"] == "imports":
            continue
        assert case["does"].startswith("validates: "), key
        assert cases[case["vs"]]["does"].startswith("validates: "), case["vs"]


def test_the_sync_peer_rows_are_paired_with_offload(quick: QuickRun) -> None:
    """Peers hop a thread for a sync tool: so does the toolguard row they are divided by."""
    cases = quick.report["cases"]
    for key in ("agents_sync", "mcp_sync", "pydantic_ai_sync", "langgraph_toolnode_sync"):
        assert cases[key]["vs"].startswith("adispatch_offload_"), key
        assert "inline" in cases[key]["note"], key
    assert cases["agents_async"]["vs"] == "adispatch_async_json"
    assert "blocking the event loop" in cases["adispatch_sync_inline"]["note"]


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


ISSUE_16_TARGETS = (
    "hidden failure, JSONRenderer to a file / floor",
    "hidden failure, ConsoleRenderer to a file / floor",
    "unknown tool, new name: many / 10 tools",
    "unknown tool, repeated: many / 10 tools",
    "failure, 100 KB arguments / floor",
    "failure, 1 MB arguments / floor",
    "one-call arun / adispatch",
    "round of 8 sync: per call over a dispatch",
    "round of 8 sync: that / one thread hand-off",
    "dispatch / floor",
    "session over dispatch",
    "Agents SDK async JSON / adispatch async JSON",
)


@pytest.mark.parametrize("name", ISSUE_16_TARGETS)
def test_every_issue_16_target_is_measured(quick: QuickRun, name: str) -> None:
    """Each target has a number (a goal met or missed, or a figure to report)."""
    (target,) = [t for t in quick.report["targets"] if t["target"].startswith(name)]
    assert _finite(target["measured"]), target
    if target["goal"] != "report":
        assert target["met"] in (True, False)


def test_the_table_is_printed(quick: QuickRun) -> None:
    assert "median" in quick.stdout
    assert "dispatch, dict arguments" in quick.stdout
    assert "(validates: " in quick.stdout
    assert "targets (issues 5, 7, 11, 16)" in quick.stdout


def test_the_markdown_table_has_the_does_column(quick: QuickRun, compare: ModuleType) -> None:
    rows = [compare.Row(**case) for case in quick.report["cases"].values()]
    table = compare.render_markdown(rows)
    assert "| what it does |" in table.splitlines()[0]
    assert "validates: " in table


def test_the_rendered_pipeline_reaches_cached_loggers_batch_by_batch() -> None:
    """In a fresh interpreter configured as the benchmark process is (loggers cached on
    first use): inside a case's Pipeline toolguard's and the floor's events are rendered
    and written to its file; outside it, the process's empty pipeline is back."""
    script = f"""
import sys
sys.path[:0] = [{str(ROOT)!r}, {str(BENCHMARKS)!r}]
import structlog
import compare
compare.configure_process()
ns = compare._logging_setup(lambda awaitable: None)
d, call, floor = ns["lg_d"], ns["lg_call"], ns["floor_logged"]
d.dispatch(call); floor(call)  # both loggers cached under the process's pipeline
live = structlog.get_config()["processors"]
assert live == [], live
for kind in compare.RENDERERS:
    pipeline = ns["lg_" + kind]
    with pipeline:
        assert ns["lg_written"](pipeline, lambda: d.dispatch(call)), kind
        assert ns["lg_written"](pipeline, lambda: floor(call)), kind
    assert structlog.get_config()["processors"] == [], kind
    assert pipeline.lines(lambda: (d.dispatch(call), floor(call))) == "", kind
    try:
        with pipeline:
            pass  # a batch that wrote nothing
    except AssertionError:
        pass
    else:
        raise SystemExit("an empty batch went unnoticed")
print("ok")
"""
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.strip() == "ok"


def test_suites_have_unique_keys_and_pair_only_with_toolguard_rows(compare: ModuleType) -> None:
    """Statically, without timing: keys are unique; a peer's ``vs`` names a toolguard row;
    an in-place row (a framework guarded by its one line) pairs with its own
    unguarded twin, in its own suite."""
    own = compare.toolguard_suites(compare.QUICK)
    own_keys = [b.key for suite in own for b in suite.benches]
    inplace = importlib.import_module("_inplace").inplace_suites()  # beside compare.py
    peers = [suite for suite in compare.peer_suites() if suite not in inplace]
    peer_benches = [b for suite in peers for b in suite.benches]
    inplace_benches = [b for suite in inplace for b in suite.benches]
    keys = own_keys + [b.key for b in (*peer_benches, *inplace_benches)]
    assert len(keys) == len(set(keys))
    assert all(suite.own for suite in own)
    assert not any(suite.own for suite in compare.peer_suites())
    for bench in peer_benches:
        assert bench.vs is None or bench.vs in own_keys, bench.key
    for suite in inplace:
        suite_keys = {b.key for b in suite.benches}
        for bench in suite.benches:
            assert bench.key.startswith("inplace_"), bench.key
            assert bench.vs is None or (
                bench.vs in suite_keys and bench.key.endswith("_guarded")
            ), bench.key
    assert set(own_keys) <= set(TOOLGUARD_CASES)
    assert {b.key for b in peer_benches} <= set(PEER_CASES)


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


def _only(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--only", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_only_times_the_named_rows_and_their_targets() -> None:
    done = _only("adispatch_async,arun_one")
    assert done.returncode == 0, done.stderr[-4000:]
    assert "arun of one call (async tool, dict)" in done.stdout
    assert "adispatch, async tool, dict arguments" in done.stdout
    assert "dispatch, dict arguments " not in done.stdout  # only the named rows
    assert "one-call arun / adispatch (16)" in done.stdout
    assert "hidden failure, empty pipeline" not in done.stdout  # targets of other rows


def test_only_refuses_a_row_that_does_not_exist() -> None:
    done = _only("arun_one,no_such_row")
    assert done.returncode == 2
    assert "no such row: no_such_row" in done.stderr


def test_every_floor_validates_as_its_tool_does(compare: ModuleType) -> None:
    from typing_extensions import TypedDict

    from toolguard import Dispatcher, tool

    class Lenient(TypedDict):
        a: int

    def tool_a(a: int) -> int:
        return a

    dispatcher = Dispatcher([tool(tool_a)])
    assert compare.validates_alike(compare.floor_validator(Lenient), dispatcher, "tool_a")
    import pydantic

    class Other(TypedDict):
        a: int

    lenient = pydantic.TypeAdapter(Other).validator  # unknown keys ignored: not alike
    assert not compare.validates_alike(lenient, dispatcher, "tool_a")
