"""Dispatcher: arguments, unknown tools, rounds, return_direct, control flow."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from typing import Annotated, Any, cast

import pytest

import toolguard
from tests._content import str_content
from tests._stuck import STUCK
from toolguard import (
    ControlFlow,
    Dispatcher,
    Injected,
    InjectedCallId,
    Round,
    ToolCall,
    ToolCallFailed,
    ToolDefinitionError,
    ToolError,
    ToolPolicy,
    ToolResult,
    tool,
)
from toolguard.handlers import fail

# Every case runs under each tool's own plan and under the general plan (conftest).
pytestmark = pytest.mark.usefixtures("plans")

# --- arguments -----------------------------------------------------------------

runs: list[tuple[Any, ...]] = []


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    runs.append((a, b))
    return a + b


@pytest.fixture(autouse=True)
def _clear_runs() -> None:
    runs.clear()


BAD_ARGUMENTS = [
    ("not json", "{a: 1", ["the arguments are not valid JSON"]),
    ("json array", "[1, 2]", ["the arguments must be a JSON object, got [1, 2]"]),
    ("json number", "3", ["the arguments must be a JSON object, got 3"]),
    ("json null", "null", ["the arguments must be a JSON object, got None"]),
    ("missing one", {"a": 1}, ["'b': missing required argument (an integer)"]),
    (
        "missing both",
        None,
        ["'a': missing required argument (an integer)", "'b': missing required argument"],
    ),
    ("extra", {"a": 1, "b": 2, "c": 3}, ["'c': unexpected argument; this tool accepts: a, b"]),
    ("wrong type", {"a": "one", "b": 2}, ["'a': Input should be a valid integer"]),
    ("null value", {"a": None, "b": 2}, ["'a': Input should be a valid integer, got None"]),
    ("float", '{"a": 1.5, "b": 2}', ["'a': Input should be a valid integer"]),
    ("list value", {"a": [1], "b": 2}, ["'a': Input should be a valid integer, got [1]"]),
]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [pytest.param(a, e, id=i) for i, a, e in BAD_ARGUMENTS],
)
def test_bad_arguments_get_an_error_result_naming_them_and_the_tool_never_runs(
    arguments: Any, expected: list[str]
) -> None:
    result = Dispatcher([add]).dispatch(ToolCall(name="add", arguments=arguments, id="c"))
    assert result.is_error
    assert result.call_id == "c"
    assert str_content(result).startswith("Invalid arguments for tool 'add':\n- ")
    for fragment in expected:
        assert fragment in result.content
    assert runs == []


def test_long_bad_values_are_echoed_only_as_a_short_excerpt() -> None:
    secret_blob = "x" * 10_000
    result = Dispatcher([add]).dispatch(ToolCall(name="add", arguments={"a": secret_blob, "b": 1}))
    assert result.is_error
    assert len(result.content) < 300
    assert "xxx..." in result.content
    assert runs == []


def test_lax_coercions_pydantic_accepts_run_the_tool() -> None:
    result = Dispatcher([add]).dispatch(ToolCall(name="add", arguments='{"a": "2", "b": 3}'))
    assert result.content == "5"
    assert runs == [(2, 3)]


@pytest.mark.parametrize("empty", [None, "", {}])
def test_none_and_empty_string_mean_no_arguments(empty: Any) -> None:
    @tool
    def ping() -> str:
        return "pong"

    assert Dispatcher([ping]).dispatch(ToolCall(name="ping", arguments=empty)).content == "pong"


def test_validation_errors_are_visible_and_not_logged(logs: list[dict[str, Any]]) -> None:
    result = Dispatcher([add]).dispatch(ToolCall(name="add", arguments={}))
    assert result.error_id is None
    assert logs == []


def test_defaults_and_keyword_and_positional_only_parameters() -> None:
    @tool
    def f(a: int, /, b: str = "x", *, c: bool = False) -> str:
        return f"{a}-{b}-{c}"

    dispatcher = Dispatcher([f])
    assert dispatcher.dispatch(ToolCall(name="f", arguments={"a": 1})).content == "1-x-False"
    assert (
        dispatcher.dispatch(ToolCall(name="f", arguments={"a": 1, "b": "y", "c": True})).content
        == "1-y-True"
    )


def test_var_keyword_tools_accept_extra_arguments() -> None:
    @tool
    def f(a: int, **rest: Any) -> dict[str, Any]:
        return {"a": a, **rest}

    result = Dispatcher([f]).dispatch(ToolCall(name="f", arguments={"a": 1, "z": "q"}))
    assert result.content == '{"a":1,"z":"q"}'


# --- unknown tools ----------------------------------------------------------------


def test_unknown_tool_lists_the_tools_and_suggests_a_close_name() -> None:
    dispatcher = Dispatcher([add])
    result = dispatcher.dispatch(ToolCall(name="ad", arguments={"a": 1}, id="c9"))
    assert result.is_error
    assert result.call_id == "c9"
    assert result.name == "ad"
    assert (
        result.content == "There is no tool named 'ad' (did you mean 'add'?). Available tools: add."
    )


def test_unknown_tool_without_a_close_name_has_no_suggestion() -> None:
    result = Dispatcher([add]).dispatch(ToolCall(name="weather"))
    assert result.content == "There is no tool named 'weather'. Available tools: add."


def test_unknown_tool_goes_through_the_agents_on_invalid_call_chain() -> None:
    """An invented tool name is the model's mistake: on_invalid_call answers it (here
    fail, an explicit choice), never on_error (fail there leaves it answered)."""
    answered = Dispatcher([add], on_error=toolguard.handlers.fail).dispatch(ToolCall(name="nope"))
    assert answered.error_kind == "unknown_tool"
    dispatcher = Dispatcher([add], on_invalid_call=toolguard.handlers.fail)
    with pytest.raises(ToolCallFailed) as caught:
        dispatcher.dispatch(ToolCall(name="nope"))
    assert isinstance(caught.value.__cause__, toolguard.UnknownTool)


# --- kinds of tools -----------------------------------------------------------------


class Account:
    def __init__(self, balance: int) -> None:
        self.balance = balance

    @tool
    def withdraw(self, amount: int) -> int:
        """Withdraw money."""
        self.balance -= amount
        return self.balance

    @tool
    @classmethod
    def bank(cls, branch: str) -> str:
        return f"{cls.__name__}@{branch}"

    @tool
    @staticmethod
    def fee(amount: int) -> int:
        return amount // 100

    @tool
    async def audit(self, note: str) -> str:
        await asyncio.sleep(0)
        return f"{self.balance}:{note}"


def test_methods_static_and_class_methods_dispatch_and_calling_them_is_unchanged() -> None:
    account = Account(100)
    assert account.withdraw(10) == 90
    assert Account.bank("x") == "Account@x"
    # cast: toolguard types a staticmethod tool read through an instance as bound, its
    # first parameter dropped (BoundTool[[], int]); at runtime it takes `amount`
    assert cast("Callable[[int], int]", account.fee)(500) == 5
    dispatcher = Dispatcher([account.withdraw, Account.bank, Account.fee, account.audit])
    assert "amount" in account.withdraw.parameters["properties"]
    assert "self" not in account.withdraw.parameters["properties"]
    assert "cls" not in Account.bank.parameters["properties"]
    round_ = dispatcher.run(
        [
            ToolCall(name="withdraw", arguments={"amount": 20}),
            ToolCall(name="bank", arguments={"branch": "b"}),
            ToolCall(name="fee", arguments={"amount": 1000}),
            ToolCall(name="audit", arguments={"note": "n"}),
        ]
    )
    assert [r.content for r in round_.results] == ["70", "Account@b", "10", "70:n"]
    assert account.balance == 70


def test_an_unbound_instance_method_is_refused_with_how_to_fix_it() -> None:
    with pytest.raises(ToolDefinitionError, match=r"pass it bound to an instance"):
        Dispatcher([Account.withdraw])


def test_async_tool_through_sync_dispatch_and_adispatch() -> None:
    @tool
    async def slow(n: int) -> int:
        await asyncio.sleep(0)
        return n * 2

    dispatcher = Dispatcher([slow])
    assert dispatcher.dispatch(ToolCall(name="slow", arguments={"n": 2})).content == "4"
    assert (
        asyncio.run(dispatcher.adispatch(ToolCall(name="slow", arguments={"n": 3}))).content == "6"
    )


def test_sync_dispatch_of_an_async_tool_inside_a_running_loop_says_use_adispatch() -> None:
    @tool
    async def slow() -> int:
        return 1

    async def main() -> None:
        with pytest.raises(RuntimeError, match="adispatch"):
            Dispatcher([slow]).dispatch(ToolCall(name="slow"))

    asyncio.run(main())


def test_plain_functions_are_decorated_on_the_fly() -> None:
    def double(x: int) -> int:
        return 2 * x

    assert Dispatcher([double]).dispatch(ToolCall(name="double", arguments={"x": 4})).content == "8"


def test_duplicate_tool_names_are_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="two tools are named 'add'"):
        Dispatcher([add, tool(name="add")(lambda: 1)])


def test_single_sync_dispatch_runs_inline_on_the_callers_thread() -> None:
    seen: list[threading.Thread] = []

    @tool
    def where() -> str:
        seen.append(threading.current_thread())
        return "here"

    Dispatcher([where]).dispatch(ToolCall(name="where"))
    Dispatcher([where]).run([ToolCall(name="where")])
    assert seen == [threading.current_thread()] * 2


# --- injected arguments ----------------------------------------------------------


@tool
def whoami(
    question: str,
    user: Annotated[str, Injected],
    call_id: Annotated[str, InjectedCallId],
) -> str:
    return f"{user} asked {question} in {call_id}"


def test_injected_arguments_are_filled_and_hidden_from_the_schema() -> None:
    assert list(whoami.parameters["properties"]) == ["question"]
    result = Dispatcher([whoami]).dispatch(
        ToolCall(name="whoami", arguments={"question": "q"}, id="c1"), context="alice"
    )
    assert result.content == "alice asked q in c1"


def test_a_model_that_sends_an_injected_argument_is_refused() -> None:
    result = Dispatcher([whoami]).dispatch(
        ToolCall(name="whoami", arguments={"question": "q", "user": "root"}, id="c1"),
        context="alice",
    )
    assert result.is_error
    assert "'user': set by the application; it cannot be sent" in result.content


def test_a_missing_injected_value_is_a_hidden_failure_naming_the_parameter(
    logs: list[dict[str, Any]],
) -> None:
    result = Dispatcher([whoami]).dispatch(
        ToolCall(name="whoami", arguments={"question": "q"}), context="alice"
    )
    assert result.is_error and result.error_id
    [event] = logs
    assert "needs the call id (parameter 'call_id')" in str(event["exc_info"])


# --- results ---------------------------------------------------------------------


def test_successful_results_carry_the_call_id_name_and_json_content() -> None:
    result = Dispatcher([add]).dispatch(ToolCall(name="add", arguments={"a": 1, "b": 2}, id="x"))
    assert result == ToolResult(call_id="x", name="add", content="3")


def test_an_unserialisable_result_is_a_hidden_failure_not_a_repr(
    logs: list[dict[str, Any]],
) -> None:
    @tool
    def weird() -> object:
        return object()

    result = Dispatcher([weird]).dispatch(ToolCall(name="weird"))
    assert result.is_error
    assert "object at 0x" not in result.content
    assert "cannot serialise a builtins.object" in str(logs[0]["exc_info"])


def test_an_unawaited_coroutine_is_named_as_one_in_the_hidden_cause(
    logs: list[dict[str, Any]],
) -> None:
    """A sync tool that calls an async function without await: the log says so, not
    "cannot serialise a builtins.coroutine"."""

    async def fetch() -> str:
        return "data"

    made: list[Any] = []

    @tool
    def forgot() -> object:
        made.append(fetch())
        return made[0]

    result = Dispatcher([forgot]).dispatch(ToolCall(name="forgot"))
    made[0].close()  # closed, not left to warn "never awaited" at some later collection
    assert result.is_error and "coroutine" not in result.content  # the model is told nothing
    said = str(logs[0]["exc_info"])
    assert "the tool returned a coroutine that nobody awaited" in said
    assert "cannot serialise" not in said


# --- rounds ----------------------------------------------------------------------


def test_a_round_keeps_call_order_and_one_failure_never_loses_a_sibling() -> None:
    @tool
    def boom() -> str:
        raise ValueError("x")

    calls = [
        ToolCall(name="add", arguments={"a": 1, "b": 1}, id="1"),
        ToolCall(name="boom", id="2"),
        ToolCall(name="nope", id="3"),
        ToolCall(name="add", arguments="{", id="4"),
        ToolCall(name="add", arguments={"a": 2, "b": 2}, id="5"),
    ]
    round_ = Dispatcher([add, boom]).run(calls)
    assert [r.call_id for r in round_.results] == ["1", "2", "3", "4", "5"]
    assert [r.is_error for r in round_.results] == [False, True, True, True, False]
    assert round_.results[4].content == "4"


def test_sync_round_runs_tools_in_parallel_on_the_pool() -> None:
    """The eight calls run at once: each waits at a barrier only eight calls running
    together pass (one at a time, the first waits 30 s, the barrier breaks, all fail)."""
    barrier = threading.Barrier(8, timeout=STUCK)

    @tool
    def meet() -> str:
        barrier.wait()
        return "ok"

    with Dispatcher([meet], max_workers=8) as dispatcher:
        round_ = dispatcher.run([ToolCall(name="meet") for _ in range(8)])
    assert [r.content for r in round_.results] == ["ok"] * 8


def test_async_round_runs_tools_concurrently_and_sync_tools_off_the_loop() -> None:
    loop_thread: list[threading.Thread] = []
    sync_threads: list[threading.Thread] = []

    @tool
    async def wait(n: int) -> int:
        loop_thread.append(threading.current_thread())
        await asyncio.sleep(0.05)
        return n

    @tool
    def blocking() -> str:
        sync_threads.append(threading.current_thread())
        return "b"

    dispatcher = Dispatcher([wait, blocking])
    round_ = asyncio.run(
        dispatcher.arun(
            [ToolCall(name="wait", arguments={"n": i}) for i in range(20)]
            + [ToolCall(name="blocking")]
        )
    )
    assert [r.content for r in round_.results] == [str(i) for i in range(20)] + ["b"]
    assert set(loop_thread) == {threading.current_thread()}
    assert sync_threads[0] is not threading.current_thread()
    dispatcher.close()


def test_context_variables_reach_sync_tools_on_the_pool() -> None:
    request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id")

    @tool
    def read_var() -> str:
        return request_id.get("unset")

    request_id.set("r-1")
    with Dispatcher([read_var]) as dispatcher:
        round_ = dispatcher.run([ToolCall(name="read_var"), ToolCall(name="read_var")])
    assert [r.content for r in round_.results] == ["r-1", "r-1"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_tool_call_failed_in_a_round_carries_every_result(mode: str) -> None:
    @tool(on_error=fail)
    def strict() -> str:
        raise KeyError("secret")

    calls = [
        ToolCall(name="add", arguments={"a": 1, "b": 2}, id="1"),
        ToolCall(name="strict", id="2"),
        ToolCall(name="add", arguments={"a": 3, "b": 4}, id="3"),
    ]
    dispatcher = Dispatcher([add, strict])
    with pytest.raises(ToolCallFailed) as caught:
        if mode == "sync":
            dispatcher.run(calls)
        else:
            asyncio.run(dispatcher.arun(calls))
    round_ = caught.value.round
    assert isinstance(round_, Round)
    assert [r.call_id for r in round_.results] == ["1", "2", "3"]
    assert [r.content for r in (round_.results[0], round_.results[2])] == ["3", "7"]
    failed = round_.results[1]
    assert failed.is_error and failed.error_id == caught.value.error_id
    assert "secret" not in failed.content and failed.error_id in failed.content


# --- return_direct -------------------------------------------------------------------


def _stopper(name: str, return_direct: Any, *, fails: bool = False) -> toolguard.Tool[..., Any]:
    def body() -> str:
        if fails:
            raise ValueError("x")
        return name

    return tool(name=name, return_direct=return_direct)(body)


@pytest.mark.parametrize(
    ("return_direct", "fails", "stops"),
    [
        (False, False, False),
        (True, False, True),
        (True, True, False),
        ("always", True, True),
        ("always", False, True),
        (lambda r: r.content == "t", False, True),
        (lambda r: r.content == "other", False, False),
        (lambda r: r.is_error, True, True),
    ],
)
def test_return_direct_values(return_direct: Any, fails: bool, stops: bool) -> None:
    dispatcher = Dispatcher([_stopper("t", return_direct, fails=fails)])
    result = dispatcher.dispatch(ToolCall(name="t"))
    assert result.return_direct is stops
    round_ = dispatcher.run([ToolCall(name="t")])
    assert round_.stop is stops
    assert round_.final == (round_.results[0] if stops else None)


@pytest.mark.parametrize(
    ("mode", "flags", "stop", "final_index"),
    [
        ("any", [True, False], True, 0),
        ("any", [False, True], True, 1),
        ("any", [False, False], False, None),
        ("all", [True, False], False, None),
        ("all", [True, True], True, 0),
    ],
)
def test_mixed_rounds_follow_return_direct_mode_and_keep_every_result(
    mode: Any, flags: list[bool], stop: bool, final_index: int | None
) -> None:
    tools = [_stopper(f"t{i}", flag) for i, flag in enumerate(flags)]
    dispatcher = Dispatcher(tools, return_direct_mode=mode)
    round_ = dispatcher.run([ToolCall(name=f"t{i}", id=str(i)) for i in range(len(flags))])
    assert len(round_.results) == len(flags)
    assert round_.stop is stop
    assert round_.final == (None if final_index is None else round_.results[final_index])


def test_empty_round() -> None:
    assert Dispatcher([add]).run([]) == Round(results=())


def test_bad_return_direct_mode_is_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="'any', 'all'"):
        Dispatcher([add], return_direct_mode="some")  # type: ignore[arg-type]


def test_call_level_return_direct() -> None:
    result = Dispatcher([add]).dispatch(
        ToolCall(name="add", arguments={"a": 1, "b": 1}), policy=ToolPolicy(return_direct=True)
    )
    assert result.return_direct is True


# --- control flow ----------------------------------------------------------------------


class Interrupt(ControlFlow):
    pass


class FrameworkSignal(Exception):
    pass


toolguard.register_control_flow(FrameworkSignal)

PROPAGATING = [
    KeyboardInterrupt,
    SystemExit,
    asyncio.CancelledError,
    Interrupt,
    FrameworkSignal,
]


@pytest.mark.parametrize("error_type", PROPAGATING)
@pytest.mark.parametrize("path", ["dispatch", "adispatch", "run", "arun"])
def test_control_flow_and_base_exceptions_propagate_untouched(
    error_type: type[BaseException], path: str, logs: list[dict[str, Any]]
) -> None:
    asked: list[Exception] = []
    original = error_type("signal")

    def handler(error: Exception, context: Any) -> str:
        asked.append(error)
        return "handled"

    @tool(on_error=handler)
    def signal() -> str:
        raise original

    @tool(on_error=handler)
    async def asignal() -> str:
        raise original

    dispatcher = Dispatcher([signal, asignal, add], on_error=handler)
    name = "asignal" if path.startswith("a") else "signal"
    call = ToolCall(name=name)
    sibling = ToolCall(name="add", arguments={"a": 1, "b": 1})
    with pytest.raises(error_type) as caught:
        if path == "dispatch":
            dispatcher.dispatch(call)
        elif path == "adispatch":
            asyncio.run(dispatcher.adispatch(call))
        elif path == "run":
            dispatcher.run([sibling, call])
        else:
            asyncio.run(dispatcher.arun([sibling, call]))
    if error_type is asyncio.CancelledError and path == "arun":
        pass  # asyncio re-creates a child task's CancelledError when gathering it
    else:
        assert caught.value is original
    assert asked == []
    assert logs == []
    dispatcher.close()


def test_register_control_flow_takes_exception_classes_only() -> None:
    with pytest.raises(TypeError, match="exception classes"):
        toolguard.register_control_flow("GraphInterrupt")  # type: ignore[arg-type]


def test_tool_error_from_a_method_reaches_the_model() -> None:
    class Shop:
        @tool
        def buy(self, item: str) -> str:
            raise ToolError(f"{item} is sold out; suggest something else.")

    result = Dispatcher([Shop().buy]).dispatch(ToolCall(name="buy", arguments={"item": "tea"}))
    assert result.content == "tea is sold out; suggest something else."
    assert result.error_id is None


# --- max_result_chars ------------------------------------------------------------------


def test_long_results_are_truncated_with_a_note_to_the_model() -> None:
    @tool(max_result_chars=100)
    def long_text() -> str:
        return "a" * 250

    result = Dispatcher([long_text]).dispatch(ToolCall(name="long_text"))
    assert result.content == "a" * 100 + (
        "\n[toolguard: output truncated: showing the first 100 of 250 characters]"
    )


def test_truncation_bounds_blocks_and_error_messages_and_follows_precedence() -> None:
    @tool
    def blocks() -> list[Any]:
        return [toolguard.Text(text="b" * 150), toolguard.Image(data="x" * 500, media_type="i/p")]

    @tool(on_error=toolguard.handlers.send_exception_message)
    def loud() -> str:
        raise ValueError("e" * 300)

    dispatcher = Dispatcher([blocks, loud], max_result_chars=120)
    content = dispatcher.dispatch(ToolCall(name="blocks")).content
    assert isinstance(content, tuple)
    # the limit is for the whole content: the text is cut, the image that no longer
    # fits is left out, and one note says so
    first, note = content
    assert first == toolguard.Text(text="b" * 120)
    assert isinstance(note, toolguard.Text)
    assert note.text == (
        "[toolguard: output truncated: showing the first 120 of 650 characters; 1 image(s) omitted]"
    )
    assert str_content(dispatcher.dispatch(ToolCall(name="loud"))).endswith("of 300 characters]")
    assert dispatcher.explain("blocks")["max_result_chars"] == toolguard.Setting(120, "agent")


@pytest.mark.parametrize("bad", [0, 99, -1, "100", True])
def test_max_result_chars_must_be_a_sensible_int(bad: Any) -> None:
    with pytest.raises(ToolDefinitionError, match="max_result_chars="):
        Dispatcher([add], max_result_chars=bad)


# --- other libraries' tools ---------------------------------------------------------------


def test_handle_error_answers_a_foreign_tools_failure_through_the_chain(
    logs: list[dict[str, Any]],
) -> None:
    dispatcher = Dispatcher(
        [add],
        external_tools=["shipping_quote"],
        overrides={"shipping_quote": ToolPolicy(on_error=toolguard.handlers.on(KeyError, "no"))},
    )
    call = ToolCall(name="shipping_quote", id="x1")
    assert dispatcher.handle_error(call, KeyError("zip")).content == "no"
    hidden = dispatcher.handle_error(call, RuntimeError("secret"))
    assert "secret" not in hidden.content and hidden.error_id
    assert [e["tool"] for e in logs] == ["shipping_quote", "shipping_quote"]
    with pytest.raises(Interrupt):
        dispatcher.handle_error(call, Interrupt())


def test_handle_result_applies_return_direct_and_truncation_to_a_foreign_result() -> None:
    dispatcher = Dispatcher(
        [add],
        overrides={"ship_*": ToolPolicy(return_direct=True, max_result_chars=100)},
    )
    result = dispatcher.handle_result(ToolCall(name="ship_it", id="1"), {"eta": "x" * 200})
    assert result.return_direct is True
    assert str_content(result).endswith("of 210 characters]")
    bad = dispatcher.handle_result(ToolCall(name="ship_it", id="2"), object())
    assert bad.is_error and bad.return_direct is False
    async_result = asyncio.run(dispatcher.ahandle_result(ToolCall(name="other"), [1]))
    assert async_result.content == "[1]" and not async_result.return_direct


def test_control_flow_can_be_recognised_per_instance() -> None:
    class Marked(ValueError):
        pass

    toolguard.register_control_flow(check=lambda error: getattr(error, "is_signal", False))

    @tool
    def signal() -> str:
        error = Marked("resume value is invalid")
        error.is_signal = True  # type: ignore[attr-defined]
        raise error

    @tool
    def ordinary() -> str:
        raise Marked("just a bug")

    dispatcher = Dispatcher([signal, ordinary])
    with pytest.raises(Marked, match="resume value"):
        dispatcher.dispatch(ToolCall(name="signal"))
    assert dispatcher.dispatch(ToolCall(name="ordinary")).is_error
    with pytest.raises(TypeError, match="takes a predicate"):
        toolguard.register_control_flow(check="x")  # type: ignore[arg-type]


# --- error kinds (for integrations; never sent to the model) ------------------------------


def test_each_failure_says_what_kind_it_is() -> None:
    @tool
    def feedback() -> str:
        raise toolguard.RetryWithFeedback("send digits")

    @tool
    def visible() -> str:
        raise ToolError("no such order")

    @tool
    def hidden() -> str:
        raise RuntimeError("db down")

    @tool(timeout=0.01)
    async def slow() -> str:
        await asyncio.sleep(1)
        return "late"

    dispatcher = Dispatcher([add, feedback, visible, hidden, slow])
    calls: list[tuple[str, dict[str, Any] | None]] = [
        ("add", {"a": 1, "b": 2}),
        ("add", {"a": "x"}),
        ("nope", None),
        ("feedback", None),
        ("visible", None),
        ("hidden", None),
        ("slow", None),
    ]
    kinds = [
        dispatcher.dispatch(ToolCall(name=name, arguments=arguments)).error_kind
        for name, arguments in calls
    ]
    assert kinds == [None, "arguments", "unknown_tool", "feedback", "visible", "hidden", "timeout"]


def test_the_plans_fixture_runs_each_case_under_the_plan_it_names(plans: str) -> None:
    """The positive control for ``plans``: a plain tool is planned inline, or not at all."""
    from toolguard.runner._plan import GENERAL

    @tool
    def ping() -> str:
        return "pong"

    dispatcher = Dispatcher([ping])
    assert dispatcher.dispatch(ToolCall(name="ping")).content == "pong"
    plan = dispatcher._runner.entries["ping"].plan
    assert (plan is GENERAL) == (plans == "general")
    assert plan.name == ("general" if plans == "general" else "inline+direct+plain")
