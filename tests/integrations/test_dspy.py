"""The DSPy integration, driven through ``dspy.ReAct`` on DSPy's own offline model.

The model is ``dspy.utils.DummyLM`` (DSPy's own test model) playing a script: each
answer is one ReAct step (``next_thought``, ``next_tool_name``, ``next_tool_args``),
then ``finish`` and the extraction's fields. ReAct, its adapter, its trajectory and
``dspy.Tool`` are DSPy's; what the model was told is read from the LM's own history.
"""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import dspy  # type: ignore[import-untyped]  # dspy is untyped
import pytest
from dspy.utils import DummyLM  # type: ignore[import-untyped]  # dspy is untyped
from dspy.utils.callback import BaseCallback  # type: ignore[import-untyped]  # dspy is untyped
from structlog.testing import capture_logs

from toolguard import Dispatcher, InjectedCallId, ToolError, ToolPolicy
from toolguard import tool as guard_tool
from toolguard.errors import ToolDefinitionError
from toolguard.integrations.dspy import (
    AsyncGuardedFunction,
    GuardedFunction,
    ToolguardDspyTool,
    as_dspy_tool,
    as_dspy_tools,
    guard,
)

from ._served import SECRET, search

Call = tuple[str, dict[str, Any]]


def script(calls: Sequence[Call]) -> DummyLM:
    """DSPy's DummyLM playing ``calls`` as ReAct steps, then ``finish`` and the answer."""
    steps = [{"next_thought": "go", "next_tool_name": n, "next_tool_args": a} for n, a in calls]
    finish = {"next_thought": "done", "next_tool_name": "finish", "next_tool_args": {}}
    return DummyLM([*steps, finish, {"reasoning": "r", "answer": "done"}])


def run(tools: list[Any], calls: Sequence[Call], *, use_async: bool = False) -> tuple[Any, str]:
    """One ``dspy.ReAct`` run of ``calls``: its prediction, and every prompt the model
    was sent, as text."""
    react = dspy.ReAct("question -> answer", tools=tools)
    lm = script(calls)
    with dspy.context(lm=lm):
        if use_async:
            prediction = asyncio.run(react.acall(question="where is my order?"))
        else:
            prediction = react(question="where is my order?")
    told = "\n".join(str(m["content"]) for entry in lm.history for m in entry["messages"])
    return prediction, told


def observations(prediction: Any) -> list[Any]:
    trajectory = prediction.trajectory
    return [trajectory[key] for key in trajectory if key.startswith("observation_")]


def lookup_order(number: int) -> str:
    """Look an order up."""
    if number == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    if number == 7:
        raise RuntimeError(f"orders db refused: {SECRET}")
    return f"Order {number}: shipped"


async def alookup_order(number: int) -> str:
    """Look an order up, asynchronously."""
    await asyncio.sleep(0)
    return lookup_order(number)


def hidden_events(logs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [event for event in logs if event["event"] == "tool_error_hidden"]


# --- what DSPy does by default (the docs' claim) ----------------------------------------


def test_unguarded_react_sends_the_exception_text_and_a_traceback_to_the_model() -> None:
    """If this fails, DSPy stopped leaking: update docs/integrations/dspy.md."""
    prediction, told = run([lookup_order], [("lookup_order", {"number": 7})])
    (observation, _finish) = observations(prediction)
    assert observation.startswith("Execution error in lookup_order: \nTraceback")
    assert f"RuntimeError: orders db refused: {SECRET}" in told
    assert 'raise RuntimeError(f"orders db refused: {SECRET}")' in told  # the tool's source


# --- guard: the app's own tools, in place --------------------------------------------------


@pytest.mark.parametrize(
    ("function", "use_async"),
    [(lookup_order, False), (lookup_order, True), (alookup_order, True)],
    ids=["sync-tool-forward", "sync-tool-aforward", "async-tool-aforward"],
)
def test_a_hidden_failure_never_reaches_the_model_and_is_logged_once(
    function: Any, use_async: bool
) -> None:
    tools = guard([function], Dispatcher([], external_tools=[function.__name__]))
    with capture_logs() as logs:
        prediction, told = run(tools, [(function.__name__, {"number": 7})], use_async=use_async)
    (event,) = hidden_events(logs)
    assert SECRET not in told and "RuntimeError" not in told and "orders db" not in told
    (observation, _finish) = observations(prediction)
    assert observation.startswith(f"Execution error in {function.__name__}: ")  # DSPy's path
    assert f"error id {event['error_id']}" in observation
    assert event["tool"] == function.__name__ and SECRET in str(event["exc_info"])
    assert prediction.answer == "done"


@pytest.mark.parametrize("use_async", [False, True], ids=["forward", "aforward"])
def test_a_tool_errors_message_and_a_success_reach_the_model_as_written(use_async: bool) -> None:
    calls: list[Call] = [("lookup_order", {"number": 42}), ("lookup_order", {"number": 1})]
    plain, _ = run([lookup_order], calls, use_async=use_async)
    with capture_logs() as logs:
        guarded, told = run(guard([lookup_order]), calls, use_async=use_async)
    refused, shipped, _finish = observations(guarded)
    assert refused.endswith(
        "toolguard.errors.ToolError: There is no order 42. Ask the user to check the number."
    )
    assert shipped == "Order 1: shipped" == observations(plain)[1]  # the value itself
    assert not hidden_events(logs) and refused in told


def test_an_override_by_name_answers_the_failure() -> None:
    dispatcher = Dispatcher(
        [],
        external_tools=["lookup_order"],
        overrides={"lookup_order": ToolPolicy(on_error="Orders are offline; try later.")},
    )
    with capture_logs() as logs:
        prediction, told = run(guard([lookup_order], dispatcher), [("lookup_order", {"number": 7})])
    assert observations(prediction)[0].endswith("ToolError: Orders are offline; try later.")
    assert SECRET not in told and len(hidden_events(logs)) == 1


# DSPy's refusal leaves the tool's coroutine unawaited, guarded or not (its own warning)
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited:RuntimeWarning")
def test_an_async_tool_on_the_sync_path_is_dspys_own_answer_as_unguarded() -> None:
    """DSPy refuses an async tool called by ``forward`` (unless its async-to-sync
    conversion is on); guarded, the same refusal, and the conversion works the same."""
    calls: list[Call] = [("alookup_order", {"number": 1})]
    plain, _ = run([alookup_order], calls)
    guarded, _ = run(guard([alookup_order]), calls)
    assert "please use `acall` instead" in observations(plain)[0]
    assert "please use `acall` instead" in observations(guarded)[0]
    with dspy.context(allow_tool_async_sync_conversion=True):
        converted, _ = run(guard([alookup_order]), calls)
    assert observations(converted)[0] == "Order 1: shipped"


class Counting:
    """A callable object keeping its own state (what ReAct takes as a tool)."""

    __name__ = "bump"
    __doc__ = "Count the calls."

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> int:
        self.calls += 1
        return self.calls


def test_the_tool_keeps_its_state_name_description_and_args() -> None:
    counting = Counting()
    original = dspy.Tool(counting)
    (guarded,) = guard([original])
    assert isinstance(guarded, dspy.Tool) and guarded is not original
    assert original.func is counting  # the app's dspy.Tool is not changed
    assert isinstance(guarded.func, GuardedFunction) and guarded.func.function is original.func
    assert (guarded.name, guarded.desc, guarded.args) == (original.name, original.desc, {})
    assert str(guarded) == str(original)  # what the model reads of the tool
    prediction, _ = run([guarded], [("bump", {}), ("bump", {})])
    assert observations(prediction)[:2] == [1, 2] and counting.calls == 2


def test_a_copy_of_the_program_copies_the_tools_as_unguarded_under_one_dispatcher() -> None:
    """DSPy's optimizers copy a program (``Module.deepcopy``, ``reset_copy``): the copy's
    tools are copies, with their own state, as unguarded, answered by the same
    dispatcher; nothing falls back to DSPy's shallow copy."""
    dispatcher = Dispatcher([search], external_tools=["bump"])
    counting = Counting()
    react = dspy.ReAct("q -> a", tools=[*guard([counting], dispatcher), *as_dspy_tools(dispatcher)])
    copied = copy.deepcopy(react)
    bump, served = copied.tools["bump"], copied.tools["search"]
    assert bump.func.dispatcher is dispatcher and served.dispatcher is dispatcher
    assert bump.func.function is not counting and bump() == 1 and counting.calls == 0
    assert served(query="hat", limit=1) == ["hat 0"]


def test_max_result_chars_cuts_what_the_model_reads_and_keeps_a_short_value() -> None:
    def listing(count: int) -> list[str]:
        """List items."""
        return [f"item {i}" for i in range(count)]

    dispatcher = Dispatcher(
        [], external_tools=["listing"], overrides={"listing": ToolPolicy(max_result_chars=100)}
    )
    prediction, _ = run(
        guard([listing], dispatcher), [("listing", {"count": 50}), ("listing", {"count": 2})]
    )
    cut, short, _finish = observations(prediction)
    assert isinstance(cut, str) and cut.startswith("['item 0', 'item 1'") and len(cut) < 300
    assert short == ["item 0", "item 1"]  # nothing to cut: the value itself


def test_retries_apply_to_a_guarded_tool() -> None:
    attempts: list[int] = []

    def flaky(query: str) -> str:
        """Fail once."""
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("reset")
        return f"found {query}"

    dispatcher = Dispatcher(
        [], external_tools=["flaky"], overrides={"flaky": ToolPolicy(retries=2)}
    )
    (guarded,) = guard([flaky], dispatcher)
    assert guarded(query="x") == "found x" and len(attempts) == 2


def test_a_tool_with_a_timeout_runs_in_dspys_context() -> None:
    """A timeout runs the tool on a worker thread: it still sees ``dspy.context``'s
    settings (here the LM), as on ReAct's own thread."""

    threads: list[str] = []

    def which_model() -> str:
        """Say which model is configured."""
        threads.append(threading.current_thread().name)
        return str(dspy.settings.lm.model)

    dispatcher = Dispatcher(
        [], external_tools=["which_model"], overrides={"which_model": ToolPolicy(timeout=5)}
    )
    prediction, _ = run(guard([which_model], dispatcher), [("which_model", {})])
    assert observations(prediction)[0] == "dummy"
    assert threads[0].startswith("toolguard-timed")  # not ReAct's thread


def test_dspys_callbacks_see_the_guarded_call_and_its_failure() -> None:
    seen: list[tuple[str, object]] = []

    class Recorder(BaseCallback):  # type: ignore[misc]  # dspy is untyped
        def on_tool_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
            if instance.name != "finish":
                seen.append(("start", inputs))

        def on_tool_end(self, call_id: str, outputs: Any, exception: Exception | None) -> None:
            seen.append(("end", type(exception).__name__ if exception else outputs))

    with dspy.context(callbacks=[Recorder()]):
        run(
            guard([lookup_order]),
            [("lookup_order", {"number": 7}), ("lookup_order", {"number": 1})],
        )
    tool_events = [event for event in seen if event != ("start", {}) and event[1] != "Completed."]
    assert tool_events == [
        ("start", {"kwargs": {"number": 7}}),
        ("end", "ToolError"),
        ("start", {"kwargs": {"number": 1}}),
        ("end", "Order 1: shipped"),
    ]


def test_dspys_own_argument_check_stays_dspys() -> None:
    """``dspy.Tool`` checks the model's arguments against its ``args`` before it calls
    the guarded function: that answer is DSPy's, and the tool does not run."""
    calls: list[Call] = [("lookup_order", {"number": "many"})]
    plain, _ = run([lookup_order], calls)
    with capture_logs() as logs:
        guarded, _ = run(guard([lookup_order]), calls)
    assert "Arg number is invalid" in observations(plain)[0]
    assert observations(guarded)[0] == observations(plain)[0]
    assert not logs


def test_return_direct_cannot_apply_and_is_refused() -> None:
    dispatcher = Dispatcher(
        [], external_tools=["lookup_order"], overrides={"*": ToolPolicy(return_direct=True)}
    )
    with pytest.raises(ToolDefinitionError, match="finish"):
        guard([lookup_order], dispatcher)


def test_functions_become_dspy_tools_and_guarded_ones_stay() -> None:
    tools = guard([lookup_order, alookup_order])
    assert [type(t.func) for t in tools] == [GuardedFunction, AsyncGuardedFunction]
    assert guard(tools) == tools and all(a is b for a, b in zip(guard(tools), tools, strict=True))
    served = as_dspy_tool(search)
    assert guard([served])[0] is served


def test_bad_inputs_at_the_entry_points_are_clear_errors() -> None:
    with pytest.raises(TypeError, match=r"list of dspy\.Tool"):
        guard(lookup_order)  # type: ignore[arg-type]  # one tool, not a list
    with pytest.raises(TypeError, match="item 1 is int"):
        guard([lookup_order, 3])
    with pytest.raises(TypeError, match="item 0 is type"):
        guard([Counting])  # a class, not a tool
    with pytest.raises(TypeError, match="takes a toolguard Dispatcher, got list"):
        guard([lookup_order], [lookup_order])  # type: ignore[arg-type]  # the mistake tested
    with pytest.raises(TypeError, match="takes a toolguard Dispatcher"):
        as_dspy_tools(dspy.ReAct("q -> a", tools=[]))
    with pytest.raises(ToolDefinitionError, match="not one of this dispatcher's tools"):
        as_dspy_tool("nope", dispatcher=Dispatcher([search]))


# --- as_dspy_tool: toolguard's own tools ------------------------------------------------


@guard_tool
async def asearch(query: str) -> str:
    """Search, asynchronously.

    Args:
        query: What to look for.
    """
    if query == "boom":
        raise RuntimeError(SECRET)
    return f"found {query}"


def test_toolguard_tools_declare_their_schema_as_dspy_args() -> None:
    made = as_dspy_tool(search)
    assert isinstance(made, ToolguardDspyTool) and made.name == "search"
    assert made.desc.startswith("Search the catalogue")
    assert made.args == {
        "query": {"type": "string", "description": "What to look for."},
        "limit": {"type": "integer", "description": "How many results.", "default": 3},
    }
    # what a native function call declares: the same schemas, a default where one is
    # (from which DSPy's later 3.x leave the argument out of "required")
    schema = made.format_as_litellm_function_call()["function"]["parameters"]
    assert schema["properties"] == made.args


@pytest.mark.parametrize("use_async", [False, True], ids=["forward", "aforward"])
def test_toolguard_tools_answer_in_react(use_async: bool) -> None:
    tools = as_dspy_tools(Dispatcher([search, asearch]))
    calls: list[Call] = [
        ("search", {"query": "hat", "limit": 2}),
        ("search", {"query": "boom"}),
        ("search", {"query": "hat", "limit": "x"}),
    ]
    if use_async:
        calls.append(("asearch", {"query": "boom"}))
    with capture_logs() as logs:
        prediction, told = run(tools, calls, use_async=use_async)
    found, hidden, invalid, *rest = observations(prediction)
    assert found == ["hat 0", "hat 1"]  # the tool's own value
    assert "error id" in hidden and SECRET not in told
    assert "Invalid arguments for tool 'search'" in invalid and "'limit'" in invalid
    assert len(hidden_events(logs)) == (2 if use_async else 1)
    if use_async:
        assert "error id" in rest[0]


def test_toolguard_tools_are_dspys_own_tools_too() -> None:
    """A toolguard ``@tool`` given to ReAct as it is: DSPy's ``Tool`` reads its
    signature and docstring, and calls it as the function it is."""
    prediction, _ = run([search], [("search", {"query": "hat", "limit": 1})])
    assert observations(prediction)[0] == ["hat 0"]


def test_a_toolguard_tool_asking_for_what_dspy_never_hands_is_refused() -> None:
    @guard_tool
    def traced(query: str, call_id: Annotated[str, InjectedCallId]) -> str:
        """Trace.

        Args:
            query: What.
        """
        return call_id

    with pytest.raises(ToolDefinitionError, match="dspy does not hand a tool"):
        as_dspy_tool(traced)


def test_return_direct_on_a_toolguard_tool_is_refused() -> None:
    @guard_tool(return_direct=True)
    def finish_now(answer: str) -> str:
        """Finish.

        Args:
            answer: The answer.
        """
        return answer

    with pytest.raises(ToolDefinitionError, match="return_direct"):
        as_dspy_tool(finish_now)
