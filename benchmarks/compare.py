"""Per-call cost of a guarded tool call: toolguard against a bare call, a floor and its peers.

    python benchmarks/compare.py [--quick] [--toolguard-only] [--json PATH] [--markdown PATH]
    python benchmarks/compare.py --only KEY[,KEY...]   # a few rows, for working on them

One process, one run. Most cases time the same trivial tool, ``add(a: int, b: int)
-> int``; the others (a dict result, nested and 100 KB / 1 MB arguments, unknown
names at 10 and 10,000 tools, the hidden failure logged by a pipeline that renders
to a file) each sit beside their *floor*: a prebuilt pydantic-core validator over
the same arguments, the call and a ``try/except`` (and, for the logging rows, the
same event logged through the same pipeline). A case is a statement compiled into
a tight loop (like ``timeit``) and run in batches sized to take about 20 ms each
(1.5 ms with ``--quick``). Every case is sized first, then the batches are
interleaved (batch 1 of every case, batch 2 of every case, ...) so that a burst of
load on a shared machine hits all cases alike. The table gives the median, min and
max over the batches of the per-call wall time (``perf_counter_ns``), and the median
per-call process CPU time (``process_time_ns``; it does not count time spent
descheduled, so it is steadier on a busy machine). Async cases are timed inside the
coroutine, on one event loop that lives for the whole run. GC stays enabled during
batches (a path that makes cyclic garbage pays for it), everything built before
timing is frozen out of the collector (``gc.freeze()``) so one framework's heap does
not slow another's collections, and ``gc.collect()`` runs before every batch. Every
row says what it does (validation, error handling, logging, result), so that each
pairing can be checked.

Logging is configured so that it costs what an application that keeps warnings
would pay for the event itself and nothing for output: structlog (toolguard) with
``processors=[]``, a ``ReturnLogger`` and a filtering bound logger at WARNING, so
toolguard's hidden-cause warning is built, bound and passed through the (empty)
pipeline, then dropped; the standard library (the peers) with a ``NullHandler`` on
the root logger at WARNING, so ERROR and WARNING records are built and dropped. The
rows of "logging to a file" run each batch under a rendering pipeline of their own
(:class:`Pipeline`, entered by the harness around each of their batches only).

Peers that are not installed are reported as skipped. Nothing here fails on a
timing; ``--quick`` is for CI (its numbers are not for quoting) so that the script
never rots.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import gc
import importlib.metadata
import importlib.util
import itertools
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import warnings
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# Measure the checkout this script lives in, even when another copy is installed.
sys.path[:0] = [str(ROOT), str(HERE)]

from _peers import (  # noqa: E402
    ARGS,
    ARGS_JSON,
    BAD_ARGS,
    Bench,
    Namespace,
    RunAsync,
    Suite,
    does,
    peer_suites,
)

STRUCTLOG_PIPELINE = (
    "structlog.configure(processors=[], logger_factory=structlog.ReturnLoggerFactory(), "
    "wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING), "
    "cache_logger_on_first_use=True)"
)
STDLIB_LOGGING = "logging.basicConfig(level=logging.WARNING, handlers=[logging.NullHandler()])"
GC_POLICY = "enabled during batches; gc.freeze() after setup; gc.collect() before each batch"


@dataclass(frozen=True)
class Mode:
    name: str
    batch_ns: int  # target duration of one batch
    batches: int
    round_batches: int
    import_runs: int
    # the fresh interpreters run one at a time; quick: *while* the rest runs (two
    # cores: one for them, one for this process); full: alone, before the rest
    imports_in_background: bool
    leak_dispatches: int
    memory_tools: int
    many_tools: int  # the large dispatcher of the unknown-tool rows
    unknown_pool: int  # distinct invented names the "new name" rows cycle through


FULL = Mode("full", 20_000_000, 21, 15, 7, False, 100_000, 1000, 10_000, 50_000)
# quick: 1,000 tools, since decorating 10,000 takes 10-20 s here; its numbers are not
# for quoting anyway
QUICK = Mode("quick", 1_500_000, 3, 3, 1, True, 10_000, 50, 1_000, 5_000)


@dataclass
class Row:
    """One line of the table (and of the JSON)."""

    key: str
    label: str
    group: str
    unit: str = "µs"
    median_us: float | None = None
    min_us: float | None = None
    max_us: float | None = None
    cpu_median_us: float | None = None  # process CPU time: immune to being descheduled
    batches: int = 0
    calls_per_batch: int = 0
    ratio_to_bare: float | None = None
    vs: str | None = None
    ratio_to_toolguard: float | None = None
    ratio_to_toolguard_cpu: float | None = None
    ideal_us: float | None = None
    ratio_to_ideal: float | None = None
    skipped: str | None = None
    note: str = ""
    does: str = ""  # what the timed path does: validation, errors, logging, result
    own: bool = False  # toolguard's case: a failure propagates


# --- the process's configuration ------------------------------------------------------------


def configure_process() -> None:
    """Logging, structlog and warnings for the whole benchmark process (see the docstring)."""
    # Peers may warn about their own deprecations at import or first use; this is a
    # script, and a warning printed mid-table is noise. Only the peers' modules.
    for module in (
        r"langchain_core(\..*)?",
        r"langgraph(\..*)?",
        r"agents(\..*)?",
        r"mcp(\..*)?",
        r"pydantic_ai(\..*)?",
    ):
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=module)
        warnings.filterwarnings("ignore", category=PendingDeprecationWarning, module=module)
        warnings.filterwarnings("ignore", category=FutureWarning, module=module)
    # Before any peer is imported: MCPServer() calls logging.basicConfig(), a no-op
    # once the root logger has a handler.
    logging.basicConfig(level=logging.WARNING, handlers=[logging.NullHandler()])
    os.environ.setdefault("LANGCHAIN_TRACING_V2", "false")
    import structlog

    structlog.configure(
        processors=[],
        logger_factory=structlog.ReturnLoggerFactory(),
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        cache_logger_on_first_use=True,
    )


# --- toolguard's own cases --------------------------------------------------------------------

# What each side does (the "does" column), in the words the peers' rows use too.
TG_VALIDATES = "prebuilt pydantic-core validator (a TypedDict of the signature)"
TG_VALIDATES_JSON = "the same validator's validate_json on the string"
TG_CHAIN = "the precedence chain, resolved once per tool (armed, not asked)"
TG_HIDDEN = "chain asked: built-in generic message with an error id, cause hidden"
TG_RESULT = "ToolResult, the value serialised to a JSON string"
TG_ERROR_RESULT = "ToolResult(is_error=True)"
TG_QUIET = "nothing (success)"
TG_WARNING = "WARNING event with exc_info through the process's empty pipeline"
FLOOR_VALIDATES = "a prebuilt pydantic-core validator, the tool's own but for its name (checked)"
FLOOR_DOES = does(FLOOR_VALIDATES, "try/except", "nothing", "the value (or the exception)")


def floor_validator(arguments: Any) -> Any:
    """The floors' prebuilt validator of ``arguments`` (a TypedDict), validating as
    toolguard does: unknown keys rejected, no inf or NaN (``toolguard/_schema.py``).

    Without the same rules, a floor would be cheaper for its leniency: on 100 KB of
    rows, ``extra="forbid"`` alone costs about 30% of the validation.
    """
    import pydantic

    arguments.__pydantic_config__ = pydantic.ConfigDict(extra="forbid", allow_inf_nan=False)
    return pydantic.TypeAdapter(arguments).validator


def validates_alike(floor: Any, dispatcher: Any, tool: str) -> bool:
    """Whether a floor's validator is the tool's own, but for its name (the check that
    keeps a floor like for like)."""
    import re

    def shape(validator: Any) -> str:
        return re.sub(r'(title=|cls_name: Some\(\s*)"[^"]*"', r"\1_", repr(validator))

    return shape(floor) == shape(dispatcher._runner.entries[tool].arguments.validator)


def _passthrough(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    return wrapped(*args, **kwargs)


def _toolguard_setup(run: RunAsync) -> Namespace:
    import structlog.testing
    import wrapt
    from typing_extensions import TypedDict

    from toolguard import Breaker, Dispatcher, Retry, ToolCall, ToolError, tool

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async def add_async(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def boom(a: int, b: int) -> int:
        """Add two integers (fails)."""
        raise ValueError("database down")

    def refuse(a: int, b: int) -> int:
        """Add two integers (refuses)."""
        raise ToolError("There is no order 42. Ask the user to check the number.")

    class AddArguments(TypedDict):
        a: int
        b: int

    validator = floor_validator(AddArguments)
    validate = validator.validate_python

    def floor(call: Any) -> Any:
        """What any guard must do at least: a prebuilt validator, the call, a try."""
        try:
            kwargs = validate(call.arguments)
            value = add(**kwargs)
        except Exception as error:
            return error
        return value

    tg_add = tool(add)
    dispatcher = Dispatcher([tg_add, tool(add_async), tool(boom), tool(refuse)])
    assert validates_alike(validator, dispatcher, "add")
    # the same tool with resilience configured but unused on the success path
    retrying = Dispatcher([tool(add, retries=Retry(attempts=3))])
    session = Dispatcher([tool(add, breaker=Breaker())]).session()
    # one thread hand-off, the yardstick of a round's per-call cost
    handoff = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bench-handoff")

    def call(name: str, arguments: Any, id: str = "call-1") -> Any:
        return ToolCall(name=name, arguments=arguments, id=id)

    def events(thunk: Callable[[], Any]) -> int:
        """How many structlog events one call emits (checks: success logs nothing)."""
        with structlog.testing.capture_logs() as logs:
            thunk()
        return len(logs)

    return {
        "add": add,
        "floor": floor,
        "wrapped_add": wrapt.FunctionWrapper(add, _passthrough),
        "tg_add": tg_add,
        "d": dispatcher,
        "d_retry": retrying,
        "session": session,
        "handoff": handoff,
        "events": events,
        "ToolCall": ToolCall,
        "tg_args": ARGS,
        "tg_dict": call("add", ARGS),
        "tg_json": call("add", ARGS_JSON),
        "tg_async_dict": call("add_async", ARGS),
        "tg_async_json": call("add_async", ARGS_JSON),
        "tg_one": [call("add_async", ARGS)],
        "tg_round": [call("add", ARGS, f"call-{i}") for i in range(ROUND_OF)],
        "tg_boom": call("boom", ARGS),
        "tg_refuse": call("refuse", ARGS),
        "tg_bad": call("add", BAD_ARGS),
        "tg_unknown": call("ad", ARGS),
    }


ROUND_OF = 8  # the sync round compared with as many single dispatches

TOOLGUARD = Suite(
    group="toolguard",
    module="toolguard",
    own=True,
    versions=("toolguard", "wrapt", "pydantic", "pydantic-core", "structlog", "attrs"),
    description="Dispatcher.dispatch / adispatch of @tool functions",
    benches=(
        Bench(key="bare_call", label="bare call add(1, 2)", stmt="add(1, 2)",
              check="add(1, 2) == 3", does=does("nothing", "nothing", "nothing", "int")),
        Bench(key="wrapt_passthrough", label="plain wrapt.FunctionWrapper, pass-through",
              stmt="wrapped_add(1, 2)", check="wrapped_add(1, 2) == 3",
              does=does("nothing", "nothing", "nothing", "int")),
        Bench(key="tool_direct", label="@tool function called directly",
              stmt="tg_add(1, 2)", check="tg_add(1, 2) == 3",
              does=does("nothing (a direct call is the plain function)", "nothing", "nothing",
                        "int")),
        Bench(key="toolcall_construction", label="ToolCall(...) construction",
              stmt="ToolCall(name='add', arguments=tg_args, id='call-1')",
              note="the input of every dispatch; not in the rows below"),
        Bench(key="floor", label="floor: prebuilt validator + call + try/except",
              stmt="floor(tg_dict)", check="floor(tg_dict) == 3",
              note="the least any guard does; the success path's yardstick", does=FLOOR_DOES),
        Bench(key="dispatch_dict", label="dispatch, dict arguments", stmt="d.dispatch(tg_dict)",
              check="d.dispatch(tg_dict).content == '3' "
                    "and events(lambda: d.dispatch(tg_dict)) == 0",
              does=does(TG_VALIDATES, TG_CHAIN, TG_QUIET, TG_RESULT)),
        Bench(key="dispatch_retry_unused", label="dispatch, retry policy configured (unused)",
              stmt="d_retry.dispatch(tg_dict)", check="d_retry.dispatch(tg_dict).content == '3'",
              note="issue 5: no more than dispatch, dict arguments",
              does=does(TG_VALIDATES, TG_CHAIN + "; retries armed", TG_QUIET, TG_RESULT)),
        Bench(key="session_dispatch", label="session.dispatch, circuit breaker configured",
              stmt="session.dispatch(tg_dict)", check="session.dispatch(tg_dict).content == '3'",
              note="issue 5: at most 1 µs over dispatch, dict arguments",
              does=does(TG_VALIDATES, TG_CHAIN + "; breaker consulted and updated", TG_QUIET,
                        TG_RESULT)),
        Bench(key="dispatch_json", label="dispatch, JSON string arguments",
              stmt="d.dispatch(tg_json)", check="d.dispatch(tg_json).content == '3'",
              does=does(TG_VALIDATES_JSON, TG_CHAIN, TG_QUIET, TG_RESULT)),
        Bench(key="adispatch_async", label="adispatch, async tool, dict arguments",
              stmt="await d.adispatch(tg_async_dict)", is_async=True,
              check="(await d.adispatch(tg_async_dict)).content == '3'",
              does=does(TG_VALIDATES, TG_CHAIN, TG_QUIET, TG_RESULT)),
        Bench(key="adispatch_async_json", label="adispatch, async tool, JSON string",
              stmt="await d.adispatch(tg_async_json)", is_async=True,
              check="(await d.adispatch(tg_async_json)).content == '3'",
              does=does(TG_VALIDATES_JSON, TG_CHAIN, TG_QUIET, TG_RESULT)),
        Bench(key="adispatch_sync_inline", label="adispatch, sync tool, dict (default: inline)",
              stmt="await d.adispatch(tg_dict)", is_async=True,
              check="(await d.adispatch(tg_dict)).content == '3'",
              note="toolguard's default: a sync tool runs inline, blocking the event loop "
                   "while it runs",
              does=does(TG_VALIDATES, TG_CHAIN, TG_QUIET, TG_RESULT + "; the call on the loop")),
        Bench(key="adispatch_offload_dict", label="adispatch(offload=True), sync tool, dict",
              stmt="await d.adispatch(tg_dict, offload=True)", is_async=True,
              check="(await d.adispatch(tg_dict, offload=True)).content == '3'",
              note="the sync tool on the dispatcher's pool: what the peers' sync rows do",
              does=does(TG_VALIDATES, TG_CHAIN, TG_QUIET,
                        TG_RESULT + "; the call on a worker thread")),
        Bench(key="adispatch_offload_json", label="adispatch(offload=True), sync tool, JSON",
              stmt="await d.adispatch(tg_json, offload=True)", is_async=True,
              check="(await d.adispatch(tg_json, offload=True)).content == '3'",
              note="the sync tool on the dispatcher's pool: what the peers' sync rows do",
              does=does(TG_VALIDATES_JSON, TG_CHAIN, TG_QUIET,
                        TG_RESULT + "; the call on a worker thread")),
        Bench(key="thread_handoff", label="one thread hand-off: pool.submit(add, 1, 2).result()",
              stmt="handoff.submit(add, 1, 2).result()",
              check="handoff.submit(add, 1, 2).result() == 3",
              note="the yardstick of a round's per-call cost (a one-thread executor)",
              does=does("nothing", "nothing", "nothing", "int, from a worker thread")),
        Bench(key="dispatch_hidden_failure", label="dispatch, hidden failure (logged)",
              stmt="d.dispatch(tg_boom)",
              check="(r := d.dispatch(tg_boom)).is_error and r.error_id is not None "
                    "and events(lambda: d.dispatch(tg_boom)) == 1",
              note="warning event through the empty structlog pipeline",
              does=does(TG_VALIDATES, TG_HIDDEN, TG_WARNING, TG_ERROR_RESULT)),
        Bench(key="dispatch_tool_error", label="dispatch, model-visible ToolError",
              stmt="d.dispatch(tg_refuse)",
              check="(r := d.dispatch(tg_refuse)).is_error and r.error_id is None "
                    "and events(lambda: d.dispatch(tg_refuse)) == 0",
              does=does(TG_VALIDATES, "chain asked: the ToolError's message sent", "nothing",
                        TG_ERROR_RESULT)),
        Bench(key="dispatch_validation_error", label="dispatch, invalid arguments",
              stmt="d.dispatch(tg_bad)", check="d.dispatch(tg_bad).is_error",
              does=does(TG_VALIDATES, "on_invalid_call: the argument and what was expected",
                        "nothing", TG_ERROR_RESULT)),
        Bench(key="dispatch_unknown_tool", label="dispatch, unknown tool (4 tools)",
              stmt="d.dispatch(tg_unknown)",
              check="d.dispatch(tg_unknown).is_error "
                    "and events(lambda: d.dispatch(tg_unknown)) == 0",
              does=does("-", "on_invalid_call: the tools that exist", "nothing", TG_ERROR_RESULT)),
        Bench(key="arun_one", label="arun of one call (async tool, dict)",
              stmt="await d.arun(tg_one)", is_async=True,
              check="[r.content for r in (await d.arun(tg_one)).results] == ['3']",
              note="issue 16: at most 1.3x adispatch, async tool, dict arguments",
              does=does(TG_VALIDATES, TG_CHAIN, TG_QUIET, "Round of one ToolResult")),
        Bench(key="run_round_sync", label=f"run: a round of {ROUND_OF} sync calls (add)",
              stmt="d.run(tg_round)",
              check=f"[r.content for r in d.run(tg_round).results] == ['3'] * {ROUND_OF}",
              note=f"per call over one dispatch: see the targets; vs {ROUND_OF} dispatches",
              does=does(TG_VALIDATES, TG_CHAIN, TG_QUIET,
                        f"Round of {ROUND_OF} ToolResults; the calls on the round pool")),
        Bench(key="dispatch_round_of", label=f"{ROUND_OF} dispatches, one after another",
              stmt="for _c in tg_round: d.dispatch(_c)",
              check=f"[d.dispatch(c).content for c in tg_round] == ['3'] * {ROUND_OF}",
              note="the round's yardstick: the same calls inline",
              does=does(TG_VALIDATES, TG_CHAIN, TG_QUIET, f"{ROUND_OF} ToolResults")),
    ),
    setup=_toolguard_setup,
)  # fmt: skip


# --- arguments and results: a dict result, nested arguments, large payloads -----------------

LARGE_SIZES = (("100k", 100_000), ("1m", 1_000_000))


def large_payload(size: int) -> str:
    """JSON arguments of about ``size`` characters: ``{"rows": [record, ...]}``.

    Records are small objects (an int, two strings, a list, a float), so a large
    payload has many leaves, as a model's batch of rows or search hits would.
    """

    def record(i: int) -> dict[str, Any]:
        return {"id": i, "name": f"item-{i:07d}", "tags": ["red", "large"], "price": 9.5}

    per_record = len(json.dumps(record(0))) + 2
    payload = json.dumps({"rows": [record(i) for i in range(max(1, size // per_record))]})
    assert abs(len(payload) - size) / size < 0.05, (len(payload), size)
    return payload


def _arguments_setup(run: RunAsync) -> Namespace:
    import dataclasses

    import pydantic
    from typing_extensions import TypedDict

    from toolguard import Dispatcher, ToolCall, tool

    # a dict result, serialised to a JSON string for the model
    def lookup(a: int, b: int) -> dict[str, Any]:
        """Look a pair up."""
        return {"a": a, "b": b, "sum": a + b, "tags": ["x", "y"]}

    class AddArguments(TypedDict):
        a: int
        b: int

    validate_add = floor_validator(AddArguments).validate_python
    # what the model is sent: compact JSON, non-ASCII kept (toolguard's own encoding)
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

    def floor_dict_result(arguments: Any) -> Any:
        try:
            value = encode(lookup(**validate_add(arguments)))
        except Exception as error:
            return error
        return value

    # nested arguments: a pydantic model and a dataclass holding lists of objects
    class Item(pydantic.BaseModel):
        sku: str
        qty: int

    class Address(pydantic.BaseModel):
        street: str
        city: str
        postcode: str

    class Order(pydantic.BaseModel):
        id: int
        items: list[Item]
        ship_to: Address

    # (this module's annotations are strings: the types below are given as objects,
    # so that they resolve wherever they are read)
    item_dc = dataclasses.make_dataclass("ItemDC", [("sku", str), ("qty", int)])
    address_dc = dataclasses.make_dataclass(
        "AddressDC", [("street", str), ("city", str), ("postcode", str)]
    )
    order_dc = dataclasses.make_dataclass(
        "OrderDC", [("id", int), ("items", list[item_dc]), ("ship_to", address_dc)]
    )

    def place_order(order: Any) -> int:
        """Place an order."""
        return int(order.id)

    def place_order_dc(order: Any) -> int:
        """Place an order."""
        return int(order.id)

    place_order.__annotations__ = {"order": Order, "return": int}
    place_order_dc.__annotations__ = {"order": order_dc, "return": int}
    # (functional TypedDicts below: class syntax would give string annotations of local names)
    OrderArguments = TypedDict("OrderArguments", {"order": Order})  # noqa: UP013
    OrderDCArguments = TypedDict("OrderDCArguments", {"order": order_dc})  # noqa: UP013

    def floor_of(validate: Callable[[Any], Any], function: Callable[..., Any]) -> Any:
        def floor(arguments: Any) -> Any:
            try:
                value = function(**validate(arguments))
            except Exception as error:
                return error
            return value

        return floor

    order = {
        "order": {
            "id": 7,
            "items": [{"sku": f"sku-{i}", "qty": i + 1} for i in range(3)],
            "ship_to": {"street": "1 Main St", "city": "Springfield", "postcode": "12345"},
        }
    }

    # large payloads: the same rows, a tool that counts them and one that fails
    Record = TypedDict(  # noqa: UP013
        "Record", {"id": int, "name": str, "tags": list[str], "price": float}
    )

    def ingest(rows: list[Any]) -> int:
        """Store rows."""
        return len(rows)

    def ingest_fails(rows: list[Any]) -> int:
        """Store rows (fails)."""
        raise ValueError("database down")

    ingest.__annotations__ = {"rows": list[Record], "return": int}
    ingest_fails.__annotations__ = {"rows": list[Record], "return": int}
    IngestArguments = TypedDict("IngestArguments", {"rows": list[Record]})  # noqa: UP013

    rows_validator = floor_validator(IngestArguments)
    validate_rows = rows_validator.validate_json

    dispatcher = Dispatcher(
        [tool(lookup), tool(place_order), tool(place_order_dc), tool(ingest), tool(ingest_fails)]
    )
    order_validator = floor_validator(OrderArguments)
    order_dc_validator = floor_validator(OrderDCArguments)
    for floor, name in (
        (order_validator, "place_order"),
        (order_dc_validator, "place_order_dc"),
        (rows_validator, "ingest"),
        (rows_validator, "ingest_fails"),
    ):
        assert validates_alike(floor, dispatcher, name), name
    ns: Namespace = {
        "da": dispatcher,
        "ar_args": ARGS,
        "ar_lookup": ToolCall(name="lookup", arguments=ARGS, id="call-1"),
        "floor_dict_result": floor_dict_result,
        "ar_order": order,
        "ar_order_call": ToolCall(name="place_order", arguments=order, id="call-1"),
        "ar_order_dc_call": ToolCall(name="place_order_dc", arguments=order, id="call-1"),
        "floor_order": floor_of(order_validator.validate_python, place_order),
        "floor_order_dc": floor_of(order_dc_validator.validate_python, place_order_dc),
        "floor_rows": floor_of(validate_rows, ingest),
        "floor_rows_fails": floor_of(validate_rows, ingest_fails),
        "expected_lookup": encode(lookup(1, 2)),
    }
    for suffix, size in LARGE_SIZES:
        payload = large_payload(size)
        ns[f"ar_payload_{suffix}"] = payload
        ns[f"ar_rows_{suffix}"] = str(len(json.loads(payload)["rows"]))
        ns[f"ar_ok_{suffix}"] = ToolCall(name="ingest", arguments=payload, id="call-1")
        ns[f"ar_fail_{suffix}"] = ToolCall(name="ingest_fails", arguments=payload, id="call-1")
    return ns


def _large_benches() -> tuple[Bench, ...]:
    out: list[Bench] = []
    for suffix, size in LARGE_SIZES:
        shown = f"{size // 1000:,} KB" if size < 1_000_000 else f"{size // 1_000_000} MB"
        out += [
            Bench(key=f"floor_large_{suffix}_ok", label=f"floor: validate_json {shown} + call",
                  stmt=f"floor_rows(ar_payload_{suffix})",
                  check=f"str(floor_rows(ar_payload_{suffix})) == ar_rows_{suffix}",
                  does=FLOOR_DOES.replace("validator", "validator (validate_json)")),
            Bench(key=f"dispatch_large_{suffix}_ok", label=f"dispatch, {shown} JSON arguments",
                  stmt=f"da.dispatch(ar_ok_{suffix})",
                  check=f"da.dispatch(ar_ok_{suffix}).content == ar_rows_{suffix}",
                  does=does(TG_VALIDATES_JSON, TG_CHAIN, TG_QUIET, TG_RESULT)),
            Bench(key=f"floor_large_{suffix}_fail",
                  label=f"floor: validate_json {shown} + failing call",
                  stmt=f"floor_rows_fails(ar_payload_{suffix})",
                  check=f"isinstance(floor_rows_fails(ar_payload_{suffix}), ValueError)",
                  note="issue 16: the failure's yardstick",
                  does=does(FLOOR_VALIDATES + " (validate_json)", "try/except", "nothing",
                            "the exception")),
            Bench(key=f"dispatch_large_{suffix}_fail",
                  label=f"dispatch, {shown} JSON arguments, hidden failure",
                  stmt=f"da.dispatch(ar_fail_{suffix})",
                  check=f"(r := da.dispatch(ar_fail_{suffix})).is_error "
                        "and r.error_id is not None",
                  note="issue 16: at most 1.5x its floor",
                  does=does(TG_VALIDATES_JSON, TG_HIDDEN,
                            TG_WARNING + ", the arguments in the event", TG_ERROR_RESULT)),
        ]  # fmt: skip
    return tuple(out)


ARGUMENTS = Suite(
    group="arguments and results",
    module="toolguard",
    own=True,
    description="a dict result, nested model/dataclass arguments, 100 KB and 1 MB JSON "
    "arguments; each beside its floor",
    benches=(
        Bench(key="floor_dict_result", label="floor: validator + call + the dict as JSON",
              stmt="floor_dict_result(ar_args)",
              check="floor_dict_result(ar_args) == expected_lookup",
              does=does(FLOOR_VALIDATES, "try/except", "nothing", "the dict as compact JSON")),
        Bench(key="dispatch_dict_result", label="dispatch, tool returning a dict",
              stmt="da.dispatch(ar_lookup)",
              check="da.dispatch(ar_lookup).content == expected_lookup",
              does=does(TG_VALIDATES, TG_CHAIN, TG_QUIET, TG_RESULT + " (the dict as JSON)")),
        Bench(key="floor_nested_model", label="floor: nested pydantic model argument",
              stmt="floor_order(ar_order)", check="floor_order(ar_order) == 7",
              does=FLOOR_DOES),
        Bench(key="dispatch_nested_model", label="dispatch, nested pydantic model argument",
              stmt="da.dispatch(ar_order_call)", check="da.dispatch(ar_order_call).content == '7'",
              note="an Order with a list of Items and an Address, as a dict",
              does=does(TG_VALIDATES + ", the model inside", TG_CHAIN, TG_QUIET, TG_RESULT)),
        Bench(key="floor_nested_dataclass", label="floor: nested dataclass argument",
              stmt="floor_order_dc(ar_order)", check="floor_order_dc(ar_order) == 7",
              does=FLOOR_DOES),
        Bench(key="dispatch_nested_dataclass", label="dispatch, nested dataclass argument",
              stmt="da.dispatch(ar_order_dc_call)",
              check="da.dispatch(ar_order_dc_call).content == '7'",
              note="the same order as dataclasses",
              does=does(TG_VALIDATES + ", the dataclass inside", TG_CHAIN, TG_QUIET,
                        TG_RESULT)),
        *_large_benches(),
    ),
    setup=_arguments_setup,
)  # fmt: skip


# --- unknown tools: cost and message size independent of the number of tools ----------------


def _unknown_setup(mode: Mode, run: RunAsync) -> Namespace:
    from toolguard import Dispatcher, ToolCall, tool

    def make(name: str) -> Any:
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        return tool(name=name)(add)

    tools = [make(f"tool_{i:05d}") for i in range(mode.many_tools)]
    few, many = Dispatcher(tools[:FEW_TOOLS]), Dispatcher(tools)

    # Names the model invented: each a slip on one of the dispatcher's own tools
    # ("tool_00042_17"), so both sizes answer with a suggestion, like for like. "New"
    # rows cycle through a pool of distinct names, so a name recurs only after
    # mode.unknown_pool calls: no bounded cache can answer it from memory.
    def pool(size: int) -> list[Any]:
        names = (f"tool_{i % size:05d}_{i}" for i in range(mode.unknown_pool))
        return [ToolCall(name=name, arguments=ARGS, id="call-1") for name in names]

    few_pool, many_pool = pool(FEW_TOOLS), pool(mode.many_tools)
    repeated = ToolCall(name="tool_00003_x", arguments=ARGS, id="call-1")
    return {
        "un_few": few,
        "un_many": many,
        "un_fresh_few": itertools.cycle(few_pool),
        "un_fresh_many": itertools.cycle(many_pool),
        "un_repeated": repeated,
        "un_few_pool": few_pool,
        "un_many_pool": many_pool,
    }


FEW_TOOLS = 10


def unknown_suite(mode: Mode) -> Suite:
    many = f"{mode.many_tools:,} tools"
    fresh = f"a new slip on a tool's name each call (a pool of {mode.unknown_pool:,})"
    unknown = does("-", "on_invalid_call: the tools that exist, closest matches", "nothing",
                   TG_ERROR_RESULT)  # fmt: skip
    return Suite(
        group="unknown tools",
        module="toolguard",
        own=True,
        description=f"an unknown tool name at {FEW_TOOLS} and at {many}",
        benches=(
            Bench(key="unknown_few_new", label=f"dispatch, unknown tool, {FEW_TOOLS} tools, new",
                  stmt="un_few.dispatch(next(un_fresh_few))",
                  check="'did you mean' in str(un_few.dispatch(un_few_pool[1]).content)",
                  note=fresh, does=unknown),
            Bench(key="unknown_many_new", label=f"dispatch, unknown tool, {many}, new",
                  stmt="un_many.dispatch(next(un_fresh_many))",
                  check="'did you mean' in str(un_many.dispatch(un_many_pool[1]).content)",
                  note=f"{fresh}; issue 16: within 1.2x of {FEW_TOOLS} tools", does=unknown),
            Bench(key="unknown_few_repeated",
                  label=f"dispatch, unknown tool, {FEW_TOOLS} tools, repeated",
                  stmt="un_few.dispatch(un_repeated)",
                  check="un_few.dispatch(un_repeated).is_error",
                  note="the same invented name every call", does=unknown),
            Bench(key="unknown_many_repeated", label=f"dispatch, unknown tool, {many}, repeated",
                  stmt="un_many.dispatch(un_repeated)",
                  check="un_many.dispatch(un_repeated).is_error",
                  note=f"the same invented name; issue 16: within 1.2x of {FEW_TOOLS} tools",
                  does=unknown),
        ),
        setup=functools.partial(_unknown_setup, mode),
    )  # fmt: skip


# --- the hidden failure with logging that renders, to a file ---------------------------------

RENDERERS = ("json", "console")


def rendered_processors(kind: str, out: IO[str]) -> list[Any]:
    """An application's pipeline that renders the event and writes it to ``out``.

    ``json``: ``add_log_level``, ``format_exc_info``, ``JSONRenderer()``; ``console``:
    ``add_log_level``, ``ConsoleRenderer(colors=False)`` (with structlog's plain
    traceback formatter, its default when rich and better-exceptions are absent, named
    so that it cannot change). The last processor writes the line with structlog's own
    ``WriteLogger`` (write, newline, flush: what ``WriteLoggerFactory(out)`` would do)
    and hands the line on to the process's ``ReturnLogger``.
    """
    import structlog

    write = structlog.WriteLogger(out).msg

    def to_file(logger: Any, method: str, line: Any) -> Any:
        write(line)
        return line

    if kind == "json":
        return [
            structlog.processors.add_log_level,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
            to_file,
        ]
    if kind == "console":
        return [
            structlog.processors.add_log_level,
            structlog.dev.ConsoleRenderer(
                colors=False, exception_formatter=structlog.dev.plain_traceback
            ),
            to_file,
        ]
    raise ValueError(f"no renderer {kind!r}")


class Pipeline:
    """A structlog pipeline for the batches of one case (see ``Bench.around``).

    Entered, it swaps the *contents* of structlog's configured processor list for
    its own, in place, as ``structlog.testing.capture_logs()`` does; left, it puts
    the process's processors back and empties its file. In place, because loggers
    cached on first use (``cache_logger_on_first_use=True``: toolguard's module-level
    proxy and the floor's alike) keep a reference to that list, not a copy, and would
    ignore a new ``structlog.configure()``. The wrapper class (filtering at WARNING)
    and the logger (a ``ReturnLogger``) stay the process's. Every batch of the case
    runs inside it, and nothing else does: the harness interleaves cases batch by
    batch, so the next case's batch runs under the process's pipeline again. A batch
    that wrote nothing raises (the switch did not reach the logger that logged).
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.out: IO[str] = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115
        self.processors = rendered_processors(kind, self.out)
        self._saved: list[Any] = []

    def __call__(self) -> Pipeline:
        return self

    def __enter__(self) -> Pipeline:
        import structlog

        live = structlog.get_config()["processors"]
        self._saved = list(live)
        live[:] = self.processors
        self.out.seek(0)
        self.out.truncate()
        return self

    def __exit__(self, *exc: object) -> None:
        import structlog

        structlog.get_config()["processors"][:] = self._saved
        wrote = self.out.tell()
        self.out.seek(0)
        self.out.truncate()
        if wrote == 0 and exc[0] is None:
            raise AssertionError(f"{self.kind} pipeline: a batch wrote nothing")

    def lines(self, thunk: Callable[[], Any]) -> str:
        """What one call writes (inside the pipeline: the checks)."""
        self.out.seek(0)
        self.out.truncate()
        thunk()
        self.out.flush()
        self.out.seek(0)
        return self.out.read()


def _logging_setup(run: RunAsync) -> Namespace:
    import structlog
    import structlog.testing
    from typing_extensions import TypedDict

    from toolguard import Dispatcher, ToolCall, tool

    def boom(a: int, b: int) -> int:
        """Add two integers (fails)."""
        raise ValueError("database down")

    class AddArguments(TypedDict):
        a: int
        b: int

    validator = floor_validator(AddArguments)
    validate = validator.validate_python
    dispatcher = Dispatcher([tool(boom)])
    assert validates_alike(validator, dispatcher, "boom")
    call = ToolCall(name="boom", arguments=ARGS, id="call-1")
    # the floor logs the same event with the same fields toolguard logs
    with structlog.testing.capture_logs() as logs:
        dispatcher.dispatch(call)
    (event,) = logs
    name = event["event"]
    fields = {k: v for k, v in event.items() if k not in ("event", "log_level", "exc_info")}
    floor_log = structlog.get_logger("toolguard_bench.floor")

    def floor_logged(call: Any) -> Any:
        """The floor, and the exception logged with exc_info through the same pipeline."""
        try:
            kwargs = validate(call.arguments)
            value = boom(**kwargs)
        except Exception as error:
            floor_log.warning(name, exc_info=error, **fields)
            return error
        return value

    def written(pipeline: Pipeline, thunk: Callable[[], Any]) -> bool:
        """One call wrote the event, the exception and its traceback."""
        text = pipeline.lines(thunk)
        if pipeline.kind == "json":
            (line,) = text.splitlines()
            entry = json.loads(line)
            return bool(entry["event"] == name and "database down" in entry["exception"])
        return name in text and "Traceback" in text and "database down" in text

    return {
        "lg_d": dispatcher,
        "lg_call": call,
        "floor_logged": floor_logged,
        "lg_written": written,
        **{f"lg_{kind}": Pipeline(kind) for kind in RENDERERS},
    }


def _logging_benches() -> tuple[Bench, ...]:
    out = [
        Bench(key="floor_logged", label="floor + the same event logged (empty pipeline)",
              stmt="floor_logged(lg_call)", check="isinstance(floor_logged(lg_call), ValueError)",
              note="the yardstick of dispatch, hidden failure (logged)",
              does=does(FLOOR_VALIDATES, "try/except",
                        "the same WARNING event, fields and exc_info, empty pipeline",
                        "the exception")),
    ]  # fmt: skip
    shown = {"json": "JSONRenderer", "console": "ConsoleRenderer"}
    for kind in RENDERERS:
        log = f"add_log_level, {shown[kind]}, written to a temp file"
        out += [
            Bench(key=f"floor_logged_{kind}",
                  label=f"floor + the same event: {shown[kind]} to a file",
                  stmt="floor_logged(lg_call)", around=f"lg_{kind}",
                  check=f"lg_written(lg_{kind}, lambda: floor_logged(lg_call))",
                  note=f"issue 16: the yardstick of the {kind} row below",
                  does=does(FLOOR_VALIDATES, "try/except",
                            f"the same WARNING event and fields, exc_info: {log}",
                            "the exception")),
            Bench(key=f"dispatch_hidden_{kind}",
                  label=f"dispatch, hidden failure: {shown[kind]} to a file",
                  stmt="lg_d.dispatch(lg_call)", around=f"lg_{kind}",
                  check=f"lg_written(lg_{kind}, lambda: lg_d.dispatch(lg_call))",
                  note="issue 16: at most 1.2x its floor",
                  does=does(TG_VALIDATES, TG_HIDDEN, f"WARNING event, exc_info: {log}",
                            TG_ERROR_RESULT)),
        ]  # fmt: skip
    return tuple(out)


LOGGING = Suite(
    group="logging to a file",
    module="toolguard",
    own=True,
    description="the hidden failure with structlog rendering to a file, beside a floor that "
    "logs the same event through the same pipeline",
    benches=_logging_benches(),
    setup=_logging_setup,
)


ROUND_SLEEP_S = 0.01
ASYNC_ROUND = 100
SYNC_ROUND = 16


def _rounds_setup(run: RunAsync) -> Namespace:
    from toolguard import Dispatcher, ToolCall, tool

    @tool
    async def nap(i: int) -> int:
        """Sleep 10 ms (async)."""
        await asyncio.sleep(ROUND_SLEEP_S)
        return i

    @tool
    def snooze(i: int) -> int:
        """Sleep 10 ms (sync)."""
        time.sleep(ROUND_SLEEP_S)
        return i

    def calls(name: str, count: int) -> list[Any]:
        return [ToolCall(name=name, arguments={"i": i}, id=f"call-{i}") for i in range(count)]

    return {
        "d_async": Dispatcher([nap]),
        "d_sync": Dispatcher([snooze], max_workers=SYNC_ROUND),
        "nap_calls": calls("nap", ASYNC_ROUND),
        "snooze_calls": calls("snooze", SYNC_ROUND),
    }


ROUNDS = Suite(
    group="rounds",
    module="toolguard",
    own=True,
    benches=(
        Bench(key="round_async_100", label=f"arun: {ASYNC_ROUND} async calls x 10 ms sleep",
              stmt="await d_async.arun(nap_calls)", is_async=True, unit="ms", repeat_n=1,
              ideal_us=ROUND_SLEEP_S * 1e6,
              check="[r.content for r in (await d_async.arun(nap_calls)).results] "
                    "== [str(i) for i in range(len(nap_calls))]"),
        Bench(key="round_sync_16", label=f"run: {SYNC_ROUND} sync calls x 10 ms, 16 threads",
              stmt="d_sync.run(snooze_calls)", unit="ms", repeat_n=1,
              ideal_us=ROUND_SLEEP_S * 1e6,
              check="[r.content for r in d_sync.run(snooze_calls).results] "
                    "== [str(i) for i in range(len(snooze_calls))]"),
    ),
    setup=_rounds_setup,
)  # fmt: skip


def toolguard_suites(mode: Mode) -> tuple[Suite, ...]:
    """toolguard's own cases, in table order (the unknown-tool suite's size is the mode's)."""
    return (TOOLGUARD, ARGUMENTS, unknown_suite(mode), LOGGING, ROUNDS)


IMPORTS: tuple[tuple[str, str, str, str | None], ...] = (
    # key, statement, module that must exist, toolguard key to compare with
    ("import_toolguard", "import toolguard", "toolguard", None),
    ("import_langchain", "from langchain_core.tools import tool", "langchain_core",
     "import_toolguard"),
    ("import_agents", "import agents", "agents", "import_toolguard"),
    ("import_pydantic_ai", "import pydantic_ai", "pydantic_ai", "import_toolguard"),
    ("import_mcp", "import mcp", "mcp", "import_toolguard"),
)  # fmt: skip


# --- the harness ------------------------------------------------------------------------------

_SYNC_TEMPLATE = """
def _bench(_n, _timer, _cpu, _ns):
{locals}
    _it = _repeat(None, _n)
    _c0 = _cpu()
    _t0 = _timer()
    for _ in _it:
        {stmt}
    _t1 = _timer()
    return _t1 - _t0, _cpu() - _c0
"""

_ASYNC_TEMPLATE = _SYNC_TEMPLATE.replace("def _bench", "async def _bench", 1)


def _compile(bench: Bench, ns: Namespace) -> Callable[[int], Any]:
    """A function running ``bench.stmt`` n times, its names bound as fast locals."""
    names = [name for name in ns if name.isidentifier()]
    local_lines = "\n".join(f"    {name} = _ns[{name!r}]" for name in names) or "    pass"
    template = _ASYNC_TEMPLATE if bench.is_async else _SYNC_TEMPLATE
    source = template.format(locals=local_lines, stmt=bench.stmt)
    scope: dict[str, Any] = {"_repeat": itertools.repeat}
    exec(compile(source, f"<bench {bench.key}>", "exec"), scope)
    inner = scope["_bench"]

    def timed(n: int) -> Any:
        return inner(n, time.perf_counter_ns, time.process_time_ns, ns)

    return timed


def _around(bench: Bench, ns: Namespace) -> contextlib.AbstractContextManager[Any]:
    """The context every batch of ``bench`` runs in (``Bench.around``), or none."""
    if bench.around is None:
        return contextlib.nullcontext()
    factory: Callable[[], contextlib.AbstractContextManager[Any]] = ns[bench.around]
    return factory()


@dataclass
class Timed:
    """A case ready to time: its compiled loop, calls per batch, and the samples so far."""

    bench: Bench
    run: Callable[[int], Any]
    n: int
    batches: int
    ns: Namespace
    per_call_us: list[float] = field(default_factory=list)
    cpu_per_call_us: list[float] = field(default_factory=list)


class Harness:
    """Runs batches; owns the one event loop every async case runs on."""

    def __init__(self, mode: Mode) -> None:
        self.mode = mode
        self.runner = asyncio.Runner()

    def run_async(self, awaitable: Awaitable[Any]) -> Any:
        async def wrap() -> Any:
            return await awaitable

        return self.runner.run(wrap())

    def check(self, bench: Bench, ns: Namespace) -> None:
        if bench.check is None:
            return
        with _around(bench, ns):
            if bench.is_async:
                scope: dict[str, Any] = {}
                exec(f"async def _check(_ns):\n    return ({bench.check})", dict(ns), scope)
                ok = self.runner.run(scope["_check"](ns))
            else:
                ok = eval(bench.check, dict(ns))
        if not ok:
            raise AssertionError(f"{bench.key}: check failed: {bench.check}")

    def batch(self, timed: Callable[[int], Any], bench: Bench, n: int) -> tuple[int, int]:
        """One batch of n calls: (wall ns, CPU ns of the whole process)."""
        elapsed = timed(n)
        if bench.is_async:
            elapsed = self.runner.run(elapsed)
        wall, cpu = elapsed
        return int(wall), int(cpu)

    def calibrate(self, timed: Callable[[int], Any], bench: Bench) -> int:
        """Calls per batch so that one batch takes about ``mode.batch_ns``."""
        target = self.mode.batch_ns
        n = 1
        while True:
            elapsed = max(self.batch(timed, bench, n)[0], 1)
            if elapsed >= target // 4 or n >= 10**8:
                return max(1, round(n * target / elapsed))
            n = max(n * 2, min(n * 100, int(n * target / 2 / elapsed)))

    def prepare(self, bench: Bench, ns: Namespace) -> Timed:
        """Compile, size and warm one case up (inside its own context, if it has one)."""
        timed = _compile(bench, ns)
        with _around(bench, ns):
            if bench.repeat_n is not None:
                n = bench.repeat_n
                batches = self.mode.round_batches
            else:
                n = self.calibrate(timed, bench)
                batches = self.mode.batches
            self.batch(timed, bench, n)  # warm-up at the final size (thread pools, caches)
        return Timed(bench, timed, n, batches, ns)

    def sample(self, case: Timed) -> None:
        gc.collect()
        with _around(case.bench, case.ns):
            wall, cpu = self.batch(case.run, case.bench, case.n)
        case.per_call_us.append(wall / case.n / 1000)
        case.cpu_per_call_us.append(cpu / case.n / 1000)

    def close(self) -> None:
        self.runner.close()


def _installed(module: str | None) -> bool:
    if module is None:
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def run_suites(harness: Harness, suites: Sequence[Suite], echo: Callable[[str], None]) -> list[Row]:
    """Set every suite up and check its cases, then time them all, interleaved.

    toolguard's own failures propagate; a peer that is missing, or whose setup or
    check fails (its API moved), becomes rows with a skip reason.
    """
    rows: list[Row] = []
    prepared: list[tuple[Bench, Namespace, Row]] = []
    for suite in suites:
        suite_rows = [
            Row(key=b.key, label=b.label, group=suite.group, unit=b.unit, vs=b.vs,
                ideal_us=b.ideal_us, note=b.note, skipped=b.skip, does=b.does, own=suite.own)
            for b in suite.benches
        ]  # fmt: skip
        rows.extend(suite_rows)
        if not _installed(suite.module):
            for row in suite_rows:
                row.skipped = "skipped (not installed)"
            continue
        own = suite.own
        echo(f"  setting up {suite.group} ...")
        try:
            ns = suite.setup(harness.run_async)
            for bench, row in zip(suite.benches, suite_rows, strict=True):
                if bench.skip is None:
                    harness.check(bench, ns)
                    prepared.append((bench, ns, row))
        except Exception as error:
            if own:
                raise
            # A peer whose API moved: say so in the table, do not fail CI on it.
            echo(f"warning: {suite.group}: setup failed: {error!r}")
            for row in suite_rows:
                if row.skipped is None:
                    row.skipped = f"skipped (setup failed: {type(error).__name__}: {error})"
            prepared = [p for p in prepared if p[2] not in suite_rows]
    gc.collect()
    gc.freeze()  # what setup built is long-lived: keep it out of every collection
    try:
        _time_interleaved(harness, prepared, echo)
    finally:
        gc.unfreeze()
    return rows


def _failed(row: Row, error: Exception, echo: Callable[[str], None]) -> None:
    if row.own:
        raise error
    echo(f"warning: {row.key}: {error!r}")
    row.skipped = f"skipped (failed: {type(error).__name__}: {error})"


def _time_interleaved(
    harness: Harness, prepared: list[tuple[Bench, Namespace, Row]], echo: Callable[[str], None]
) -> None:
    """Size every case, then take batch 1 of each, batch 2 of each, ...

    On a shared, noisy machine a burst of load then hits every case alike instead
    of whichever case happened to be running, so the ratios hold up.
    """
    echo(f"  sizing {len(prepared)} cases ...")
    cases: list[tuple[Timed, Row]] = []
    for bench, ns, row in prepared:
        try:
            cases.append((harness.prepare(bench, ns), row))
        except Exception as error:
            _failed(row, error, echo)
    rounds = max((case.batches for case, _ in cases), default=0)
    echo(f"  timing: {rounds} interleaved batches of each case ...")
    for index in range(rounds):
        for case, row in cases:
            if index >= case.batches or row.skipped is not None:
                continue
            try:
                harness.sample(case)
            except Exception as error:
                _failed(row, error, echo)
    for case, row in cases:
        if row.skipped is not None:
            continue
        row.median_us = statistics.median(case.per_call_us)
        row.min_us = min(case.per_call_us)
        row.max_us = max(case.per_call_us)
        row.cpu_median_us = statistics.median(case.cpu_per_call_us)
        row.batches = len(case.per_call_us)
        row.calls_per_batch = case.n


# --- import time ------------------------------------------------------------------------------


class ImportFailed(Exception):
    """The interpreter exited non-zero; the message is the last line of its stderr."""


def _interpreter(statement: str) -> tuple[int, int | None]:
    """Run ``python -c statement``: (wall ns, the child's user+system CPU ns, if known)."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter_ns()
        child = subprocess.Popen(
            [sys.executable, "-c", statement], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=errors
        )
        cpu: int | None = None
        if hasattr(os, "wait4"):
            _, status, usage = os.wait4(child.pid, 0)
            child.returncode = os.waitstatus_to_exitcode(status)
            cpu = int((usage.ru_utime + usage.ru_stime) * 1e9)
        else:  # pragma: no cover - no per-child rusage
            child.wait()
        wall = time.perf_counter_ns() - start
        if child.returncode != 0:
            errors.seek(0)
            tail = errors.read().decode(errors="replace").strip().splitlines()[-1:] or ["?"]
            raise ImportFailed(tail[0])
    return wall, cpu


def measure_imports(mode: Mode, echo: Callable[[str], None]) -> tuple[list[Row], float]:
    """Wall time of ``python -c "import x"`` minus ``python -c "pass"``, interleaved runs.

    The child's CPU time (``wait4``), minus that of ``pass``, goes in the cpu column.
    Returns the rows and the interpreter's own start-up time (seconds, median).
    """
    rows = {
        key: Row(key=key, label=f"import: {stmt}", group="imports", unit="ms", vs=vs)
        for key, stmt, _, vs in IMPORTS
    }
    active = []
    for key, stmt, module, _ in IMPORTS:
        if _installed(module):
            active.append((key, stmt))
        else:
            rows[key].skipped = "skipped (not installed)"
    where = "in the background" if mode.imports_in_background else "alone"
    echo(f"  timing imports ({mode.import_runs} run(s) each, {where}) ...")
    jobs = [("", "pass"), *active]
    samples: dict[str, list[tuple[int, int | None]]] = {key: [] for key, _ in jobs}
    for _ in range(mode.import_runs):
        for key, stmt in jobs:
            if key and rows[key].skipped is not None:
                continue
            try:
                samples[key].append(_interpreter(stmt))
            except ImportFailed as error:
                if not key:
                    raise
                rows[key].skipped = f"skipped (import failed: {error})"
    startup = statistics.median(wall for wall, _ in samples[""])
    startup_cpu = [cpu for _, cpu in samples[""] if cpu is not None]
    for key, values in samples.items():
        row = rows.get(key)
        if row is None or row.skipped is not None or not values:
            continue
        net = [(wall - startup) / 1000 for wall, _ in values]
        row.median_us = statistics.median(net)
        row.min_us = min(net)
        row.max_us = max(net)
        cpus = [cpu for _, cpu in values if cpu is not None]
        if cpus and startup_cpu:
            row.cpu_median_us = (statistics.median(cpus) - statistics.median(startup_cpu)) / 1000
        row.batches = len(net)
        row.calls_per_batch = 1
    return list(rows.values()), startup / 1e9


# --- memory -----------------------------------------------------------------------------------


def _make_add() -> Callable[[int, int], int]:
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return add


def _traced() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def measure_memory(mode: Mode) -> dict[str, Any]:
    """Bytes per decorated tool, per plain wrapt wrapper, and per Dispatcher of N tools."""
    import wrapt

    from toolguard import Dispatcher, tool

    count = mode.memory_tools
    Dispatcher([tool(name="warm_up")(_make_add())])  # first-use caches are not per tool
    # time first, untraced: what N tools cost at import time
    functions = [_make_add() for _ in range(count)]
    gc.collect()
    start_ns = time.perf_counter_ns()
    timed_tools = [tool(name=f"add_{i}")(fn) for i, fn in enumerate(functions)]
    decorated_ns = time.perf_counter_ns()
    Dispatcher(timed_tools)
    dispatcher_ns = time.perf_counter_ns()
    del timed_tools

    functions = [_make_add() for _ in range(count)]
    tracemalloc.start()
    try:
        start = _traced()
        plain = [wrapt.FunctionWrapper(fn, _passthrough) for fn in functions]
        after_plain = _traced()
        tools = [tool(name=f"add_{i}")(fn) for i, fn in enumerate(functions)]
        after_tools = _traced()
        dispatcher = Dispatcher(tools)
        after_dispatcher = _traced()
    finally:
        tracemalloc.stop()
    del plain, dispatcher
    return {
        "tools": count,
        "bytes_per_wrapt_wrapper": (after_plain - start) / count,
        "bytes_per_tool": (after_tools - after_plain) / count,
        "bytes_per_dispatcher": after_dispatcher - after_tools,
        "dispatcher_bytes_per_tool": (after_dispatcher - after_tools) / count,
        "decoration_us_per_tool": (decorated_ns - start_ns) / count / 1000,
        "dispatcher_construction_us_per_tool": (dispatcher_ns - decorated_ns) / count / 1000,
    }


def measure_leak(mode: Mode, echo: Callable[[str], None]) -> dict[str, Any]:
    """Traced memory before and after N dispatches, success and failure mixed."""
    from toolguard import Dispatcher, ToolCall, ToolError, tool

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool
    def boom(a: int, b: int) -> int:
        """Add two integers (fails)."""
        raise ValueError("database down")

    @tool
    def refuse(a: int, b: int) -> int:
        """Add two integers (refuses)."""
        raise ToolError("There is no order 42.") from KeyError(42)

    dispatcher = Dispatcher([add, boom, refuse])
    mix = [
        ToolCall(name="add", arguments=ARGS, id="1"),
        ToolCall(name="add", arguments=ARGS_JSON, id="2"),
        ToolCall(name="boom", arguments=ARGS, id="3"),
        ToolCall(name="refuse", arguments=ARGS_JSON, id="4"),
        ToolCall(name="add", arguments=BAD_ARGS, id="5"),
        ToolCall(name="ad", arguments=ARGS, id="6"),
    ]
    total = mode.leak_dispatches
    half = total // 2
    echo(f"  leak check ({total:,} dispatches under tracemalloc) ...")
    calls = itertools.cycle(mix)

    def dispatch(n: int) -> None:
        for call in itertools.islice(calls, n):
            dispatcher.dispatch(call)

    dispatch(len(mix) * 50)  # warm-up outside tracing
    tracemalloc.start()
    try:
        dispatch(len(mix) * 20)  # and under tracing (first-use allocations)
        before = _traced()
        dispatch(half)
        middle = _traced()
        dispatch(total - half)
        after = _traced()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return {
        "dispatches": total,
        "mix": "dict ok, JSON ok, hidden failure (logged), ToolError from a cause (logged), "
        "invalid arguments, unknown tool",
        "traced_before_bytes": before,
        "traced_after_bytes": after,
        "growth_bytes": after - before,
        "growth_first_half_bytes": middle - before,
        "growth_second_half_bytes": after - middle,
        "peak_bytes": peak,
    }


# --- targets from the issue -------------------------------------------------------------------


def _median(rows: dict[str, Row], key: str, cpu: bool = False) -> float | None:
    row = rows.get(key)
    if row is None:
        return None
    return row.cpu_median_us if cpu else row.median_us


def _ratio(rows: dict[str, Row], top: str, bottom: str, cpu: bool = False) -> float | None:
    a, b = _median(rows, top, cpu), _median(rows, bottom, cpu)
    return None if a is None or b is None or b == 0 else a / b


def evaluate_targets(rows: dict[str, Row]) -> list[dict[str, Any]]:
    """The issues' targets, judged on wall-time medians; CPU-time medians beside them.

    A goal of ``report`` is a number the issue asks to see, not to meet; ``note``
    says what a reader needs to judge one (why a target is not expected to be met).
    """

    def us(key: str) -> Callable[[bool], float | None]:
        return lambda cpu: _median(rows, key, cpu)

    def ratio(top: str, bottom: str) -> Callable[[bool], float | None]:
        return lambda cpu: _ratio(rows, top, bottom, cpu)

    def extra(top: str, bottom: str) -> Callable[[bool], float | None]:
        def get(cpu: bool) -> float | None:
            high, low = _median(rows, top, cpu), _median(rows, bottom, cpu)
            return None if high is None or low is None else high - low

        return get

    def per_call_over(
        round_key: str, single_key: str, calls: int
    ) -> Callable[[bool], float | None]:
        """A round's cost per call above the same calls made one after another."""

        def get(cpu: bool) -> float | None:
            whole, singles = _median(rows, round_key, cpu), _median(rows, single_key, cpu)
            return None if whole is None or singles is None else (whole - singles) / calls

        return get

    def over_handoff(cpu: bool) -> float | None:
        # wall time only: a hand-off's cost is mostly waiting, which CPU time does not see
        value = None if cpu else per_call_over("run_round_sync", "dispatch_round_of", ROUND_OF)(cpu)
        handoff = _median(rows, "thread_handoff")
        return None if value is None or not handoff else value / handoff

    def scaled(key: str, factor: float, wall_only: bool = False) -> Callable[[bool], float | None]:
        def get(cpu: bool) -> float | None:
            value = None if cpu and wall_only else _median(rows, key, cpu)
            return None if value is None else value * factor

        return get

    many = "unknown_many"
    not_expected = (
        "not expected to be met: 15.8k instructions per dispatch against the floor's 4.7k "
        "(benchmarks/instructions.py floor dispatch_dict)"
    )
    specs: list[tuple[str, Callable[[bool], float | None], str, float, str]] = [
        ("dispatch, dict arguments (µs)", us("dispatch_dict"), "<=", 3.0, ""),
        ("dispatch / floor (issues 11, 16)", ratio("dispatch_dict", "floor"), "<=", 1.7,
         not_expected),
        ("unused retry policy / dispatch (issue 5)",
         ratio("dispatch_retry_unused", "dispatch_dict"), "<=", 1.05, ""),
        ("session over dispatch, µs (issue 5)",
         extra("session_dispatch", "dispatch_dict"), "<=", 1.0, ""),
        ("LangChain invoke / dispatch", ratio("langchain_invoke", "dispatch_dict"), ">=", 50.0,
         ""),
        ("Agents SDK async JSON / adispatch async JSON",
         ratio("agents_async", "adispatch_async_json"), ">=", 2.0,
         "like for like (was >= 4x against the sync dict path)"),
        ("hidden failure, empty pipeline (µs)", us("dispatch_hidden_failure"), "<=", 15.0, ""),
        ("hidden failure, empty pipeline / its floor",
         ratio("dispatch_hidden_failure", "floor_logged"), "report", 0.0, ""),
        ("hidden failure, JSONRenderer to a file / floor (16)",
         ratio("dispatch_hidden_json", "floor_logged_json"), "<=", 1.2, ""),
        ("hidden failure, ConsoleRenderer to a file / floor (16)",
         ratio("dispatch_hidden_console", "floor_logged_console"), "<=", 1.2, ""),
        ("unknown tool, new name: many / 10 tools (16)",
         ratio(f"{many}_new", "unknown_few_new"), "<=", 1.2, ""),
        ("unknown tool, repeated: many / 10 tools (16)",
         ratio(f"{many}_repeated", "unknown_few_repeated"), "<=", 1.2, ""),
        ("failure, 100 KB arguments / floor (16)",
         ratio("dispatch_large_100k_fail", "floor_large_100k_fail"), "<=", 1.5, ""),
        ("failure, 1 MB arguments / floor (16)",
         ratio("dispatch_large_1m_fail", "floor_large_1m_fail"), "<=", 1.5, ""),
        ("success, 100 KB arguments / floor",
         ratio("dispatch_large_100k_ok", "floor_large_100k_ok"), "report", 0.0, ""),
        ("success, 1 MB arguments / floor",
         ratio("dispatch_large_1m_ok", "floor_large_1m_ok"), "report", 0.0, ""),
        ("one-call arun / adispatch (16)", ratio("arun_one", "adispatch_async"), "<=", 1.3, ""),
        (f"round of {ROUND_OF} sync: per call over a dispatch, µs",
         per_call_over("run_round_sync", "dispatch_round_of", ROUND_OF), "report", 0.0, ""),
        (f"round of {ROUND_OF} sync: that / one thread hand-off (16)", over_handoff, "<=", 1.0,
         "wall time only"),
        ("LangChain handled error / hidden failure",
         ratio("langchain_handled_error", "dispatch_hidden_failure"), ">=", 10.0, ""),
        ("@tool direct call / plain wrapt", ratio("tool_direct", "wrapt_passthrough"),
         "<=", 1.2, ""),
        ("round: 100 async x 10 ms (ms)", scaled("round_async_100", 1e-3, wall_only=True),
         "<=", 25.0, ""),
        ("round: 16 sync x 10 ms, 16 threads (ms)",
         scaled("round_sync_16", 1e-3, wall_only=True), "<=", 40.0, ""),
        ("import toolguard (s)", scaled("import_toolguard", 1e-6), "<=", 0.35, ""),
        ("import langchain_core.tools / toolguard",
         ratio("import_langchain", "import_toolguard"), ">=", 3.0, ""),
    ]  # fmt: skip
    out = []
    for name, get, op, goal, note in specs:
        measured, measured_cpu = get(False), get(True)
        met: bool | None
        if op == "report" or measured is None:
            met = None
        else:
            met = measured <= goal if op == "<=" else measured >= goal
        out.append(
            {
                "target": name,
                "goal": "report" if op == "report" else f"{op} {goal:g}",
                "measured": measured,
                "met": met,
                "measured_cpu": measured_cpu,
                "note": note,
            }
        )
    return out


# --- output -----------------------------------------------------------------------------------


def _finish(rows: list[Row]) -> None:
    by_key = {row.key: row for row in rows}
    bare = _median(by_key, "bare_call")
    for row in rows:
        if row.median_us is None:
            continue
        if row.unit == "µs" and bare:
            row.ratio_to_bare = row.median_us / bare
        if row.vs is not None:
            row.ratio_to_toolguard = _ratio(by_key, row.key, row.vs)
            row.ratio_to_toolguard_cpu = _ratio(by_key, row.key, row.vs, cpu=True)
        if row.ideal_us:
            row.ratio_to_ideal = row.median_us / row.ideal_us


def _num(value_us: float | None, unit: str) -> str:
    if value_us is None:
        return "-"
    value = value_us / 1000 if unit == "ms" else value_us
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def _times(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:,.0f}x" if value >= 100 else f"{value:.1f}x" if value >= 10 else f"{value:.2f}x"


def _cells(row: Row) -> list[str]:
    if row.skipped is not None:
        return [row.label, "-", "-", "-", "-", row.unit, "", "", row.vs or "", row.skipped]
    note = row.note
    if row.ratio_to_ideal is not None and row.ideal_us is not None:
        note = f"{_times(row.ratio_to_ideal)} the ideal {row.ideal_us / 1000:g} ms" + (
            f"; {note}" if note else ""
        )
    return [
        row.label,
        _num(row.median_us, row.unit),
        _num(row.min_us, row.unit),
        _num(row.max_us, row.unit),
        _num(row.cpu_median_us, row.unit),
        row.unit,
        _times(row.ratio_to_bare),
        _times(row.ratio_to_toolguard),
        row.vs or "",
        note,
    ]


HEADERS = [
    "case", "median", "min", "max", "cpu", "unit", "x bare", "peer/tg", "vs (toolguard)", "note"
]  # fmt: skip


def render_text(rows: list[Row]) -> str:
    table = [HEADERS] + [_cells(row) for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADERS) - 1)]
    right = {1, 2, 3, 4, 6, 7}
    out: list[str] = []
    group = None
    for index, line in enumerate(table):
        if index > 0 and rows[index - 1].group != group:
            group = rows[index - 1].group
            out.append(f"-- {group} " + "-" * 40)
        cells = [
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(line[:-1])
        ]
        out.append("  ".join([*cells, line[-1]]).rstrip())
        if index > 0 and rows[index - 1].does:
            out.append(f"    ({rows[index - 1].does})")
    return "\n".join(out)


def render_markdown(rows: list[Row]) -> str:
    headers = [*HEADERS[:-1], "what it does", HEADERS[-1]]
    align = ["---", "--:", "--:", "--:", "--:", "---", "--:", "--:", "---", "---", "---"]
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join(align) + "|"]
    group = None
    for row in rows:
        if row.group != group:
            group = row.group
            out.append(f"| **{group}** |" + " |" * (len(headers) - 1))
        cells = _cells(row)
        cells.insert(-1, row.does)
        cells = [cell.replace("|", "\\|") for cell in cells]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


VERDICTS = {True: "met", False: "MISSED", None: "n/a"}


def render_targets(targets: Iterable[dict[str, Any]]) -> str:
    def shown(value: float | None) -> str:
        return "-" if value is None else f"{value:.3g}"

    lines = [f"  {'target':<56} {'goal':<8} {'wall':>8} {'cpu':>8}  verdict (wall)"]
    for t in targets:
        verdict = _verdict(t, VERDICTS)
        note = f"  ({t['note']})" if t.get("note") else ""
        lines.append(
            f"  {t['target']:<56} {t['goal']:<8} {shown(t['measured']):>8} "
            f"{shown(t['measured_cpu']):>8}  {verdict}{note}"
        )
    return "\n".join(lines)


def _verdict(target: dict[str, Any], words: dict[bool | None, str]) -> str:
    if target["goal"] == "report":
        return "reported" if target["measured"] is not None else "n/a"
    return words[target["met"]]


def render_targets_markdown(targets: Iterable[dict[str, Any]]) -> str:
    out = [
        "| target | goal | wall | cpu | verdict (wall) | note |",
        "|---|---|--:|--:|---|---|",
    ]
    for t in targets:
        cells = ["-" if t[k] is None else f"{t[k]:.3g}" for k in ("measured", "measured_cpu")]
        verdict = _verdict(t, {True: "met", False: "**missed**", None: "n/a"})
        out.append(
            f"| {t['target']} | {t['goal']} | {cells[0]} | {cells[1]} | {verdict} "
            f"| {t.get('note', '')} |"
        )
    return "\n".join(out)


def _versions(suites: Iterable[Suite]) -> dict[str, str]:
    out: dict[str, str] = {}
    for suite in suites:
        for dist in suite.versions:
            try:
                out[dist] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                out[dist] = "not installed"
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds, for CI")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results here")
    parser.add_argument("--markdown", type=Path, metavar="PATH", help="also write a md table")
    parser.add_argument(
        "--toolguard-only", action="store_true", help="only toolguard's own cases (no peers)"
    )
    parser.add_argument(
        "--only",
        metavar="KEYS",
        help="time only these rows (comma-separated keys; no imports, memory or JSON)",
    )
    options = parser.parse_args(argv)
    mode = QUICK if options.quick else FULL
    if options.only:
        return _only(mode, options.only.split(","), toolguard_only=options.toolguard_only)

    started = time.perf_counter()

    def echo(text: str) -> None:
        print(f"[{time.perf_counter() - started:5.1f}s] {text}", file=sys.stderr, flush=True)

    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    configure_process()
    own = toolguard_suites(mode)
    suites = own if options.toolguard_only else (*own, *peer_suites())
    echo(f"toolguard benchmarks, {mode.name} mode")
    with ThreadPoolExecutor(max_workers=1) as background:
        imports = background.submit(measure_imports, mode, echo)
        if not mode.imports_in_background:
            imports.result()
        harness = Harness(mode)
        try:
            rows = run_suites(harness, suites, echo)
        finally:
            harness.close()
        # tracemalloc traces every thread: the import thread must be done first
        import_rows, startup_s = imports.result()
        echo("  memory ...")
        gc.collect()
        gc.freeze()  # the collections around each measurement then scan only new objects
        try:
            memory = measure_memory(mode)
            leak = measure_leak(mode, echo)
        finally:
            gc.unfreeze()
    rows.extend(import_rows)
    _finish(rows)
    targets = evaluate_targets({row.key: row for row in rows})
    load_after = os.getloadavg() if hasattr(os, "getloadavg") else None

    meta = {
        "mode": mode.name,
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_before": load_before,
        "load_average_after": load_after,
        "versions": _versions(suites),
        "timer": "time.perf_counter_ns",
        "batch_target_ms": mode.batch_ns / 1e6,
        "batches": mode.batches,
        "round_batches": mode.round_batches,
        "import_runs": mode.import_runs,
        "imports_in_background": mode.imports_in_background,
        "interpreter_startup_ms": startup_s * 1000,
        "gc": GC_POLICY,
        "structlog": STRUCTLOG_PIPELINE,
        "stdlib_logging": STDLIB_LOGGING,
        "peers": {s.group: s.description for s in suites if s.description},
        "elapsed_s": None,
    }
    print(render_text(rows))
    print("\ntargets (issues 5, 7, 11, 16):")
    print(render_targets(targets))
    print(
        f"\nmemory: {memory['bytes_per_tool']:,.0f} B per @tool "
        f"(plain wrapt wrapper: {memory['bytes_per_wrapt_wrapper']:,.0f} B); "
        f"Dispatcher of {memory['tools']:,} tools: {memory['bytes_per_dispatcher']:,.0f} B "
        f"({memory['dispatcher_bytes_per_tool']:,.0f} B per tool)\n"
        f"time: @tool {memory['decoration_us_per_tool']:,.0f} µs per tool, Dispatcher "
        f"{memory['dispatcher_construction_us_per_tool']:,.1f} µs per tool"
    )
    print(
        f"leak check: {leak['dispatches']:,} mixed dispatches, traced memory grew "
        f"{leak['growth_bytes']:+,} B (first half {leak['growth_first_half_bytes']:+,} B, "
        f"second half {leak['growth_second_half_bytes']:+,} B)"
    )
    elapsed = time.perf_counter() - started
    meta["elapsed_s"] = round(elapsed, 2)
    print(f"\n{mode.name} mode, {elapsed:.1f} s; python {meta['python']}, {meta['cpus']} cpus")
    if options.json is not None:
        payload = {
            "meta": meta,
            "cases": {row.key: asdict(row) for row in rows},
            "targets": targets,
            "memory": memory,
            "leak_check": leak,
        }
        options.json.write_text(json.dumps(payload, indent=2, allow_nan=False) + "\n")
    if options.markdown is not None:
        options.markdown.write_text(
            render_markdown(rows) + "\n\n" + render_targets_markdown(targets) + "\n"
        )
    return 0


def _only(mode: Mode, keys: Sequence[str], *, toolguard_only: bool) -> int:
    """``--only``: the named rows, timed interleaved as in a whole run, and the targets
    they make up. For working on a few cases; its table is not the published one."""
    configure_process()
    own = toolguard_suites(mode)
    suites = [
        dataclasses.replace(suite, benches=picked)
        for suite in (own if toolguard_only else (*own, *peer_suites()))
        if (picked := tuple(b for b in suite.benches if b.key in keys))
    ]
    found = {b.key for suite in suites for b in suite.benches}
    if missing := [key for key in keys if key not in found]:
        print(f"no such row: {', '.join(missing)}", file=sys.stderr)
        return 2
    harness = Harness(mode)
    try:
        rows = run_suites(harness, suites, lambda text: print(text, file=sys.stderr))
    finally:
        harness.close()
    _finish(rows)
    print(render_text(rows))
    targets = evaluate_targets({row.key: row for row in rows})
    print(render_targets([t for t in targets if t["measured"] is not None]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
