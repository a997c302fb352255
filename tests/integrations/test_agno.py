"""The Agno integration, driven through Agno's own ``Agent``.

The model is a subclass of Agno's public model base (``agno.models.base.Model``, the
class every Agno provider extends) that plays a script instead of calling a provider:
each step is a list of tool calls (ids ``c0``, ``c1``... in OpenAI's shape, as Agno's
providers hand them over) or the assistant's final text, and every list of messages it
is sent is recorded. The agent, its run loop, its tool hooks, its validation of the
model's arguments and its tool messages are Agno's.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from agno.agent import Agent
from agno.exceptions import StopAgentRun
from agno.models.base import Model
from agno.models.message import Message
from agno.models.response import ModelResponse
from agno.tools import Toolkit
from agno.tools import tool as agno_tool
from agno.tools.function import ToolResult as AgnoToolResult
from structlog.testing import capture_logs

from toolguard import Breaker, Dispatcher, ToolError, ToolPolicy
from toolguard import tool as guard_tool
from toolguard.errors import ToolDefinitionError
from toolguard.integrations.agno import (
    ToolguardHook,
    as_agno_tool,
    as_agno_tools,
    toolguard_hook,
)

from ._served import SECRET, search

Step = str | Sequence[tuple[str, dict[str, Any]]]


@dataclass
class ScriptedModel(Model):
    """An Agno ``Model`` playing ``steps``: a str is the assistant's final text, a list
    is one assistant message of tool calls; after the script, ``"done"``."""

    id: str = "scripted"
    steps: list[Step] = field(default_factory=list)
    seen: list[list[Message]] = field(default_factory=list)

    def _next(self, messages: list[Message]) -> ModelResponse:
        self.seen.append(list(messages))
        step = self.steps.pop(0) if self.steps else "done"
        if isinstance(step, str):
            return ModelResponse(role="assistant", content=step)
        calls = [
            {
                "id": f"c{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for i, (name, arguments) in enumerate(step)
        ]
        return ModelResponse(role="assistant", tool_calls=calls)

    def invoke(self, messages: list[Message], *args: Any, **kwargs: Any) -> ModelResponse:
        return self._next(messages)

    async def ainvoke(self, messages: list[Message], *args: Any, **kwargs: Any) -> ModelResponse:
        return self._next(messages)

    def invoke_stream(
        self, messages: list[Message], *args: Any, **kwargs: Any
    ) -> Iterator[ModelResponse]:
        yield self._next(messages)

    async def ainvoke_stream(
        self, messages: list[Message], *args: Any, **kwargs: Any
    ) -> AsyncIterator[ModelResponse]:
        yield self._next(messages)

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]  # invoke already made one

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]

    def tool_messages(self) -> list[tuple[str, bool]]:
        """What the model was told of each tool call, last time: (content, is_error)."""
        return [
            (str(m.content), bool(m.tool_call_error)) for m in self.seen[-1] if m.role == "tool"
        ]

    def last_text(self) -> str:
        return "\n".join(str(m.content) for m in self.seen[-1])


def run(
    tools: list[Any],
    steps: Sequence[Step],
    *,
    hooks: list[Any] | None = None,
    run_async: bool = False,
    session_id: str | None = None,
) -> tuple[Any, ScriptedModel]:
    """One run of an Agno ``Agent`` on the script (then ``"done"``)."""
    model = ScriptedModel(steps=[*steps, "done"])
    agent = Agent(model=model, tools=tools, tool_hooks=hooks)
    if run_async:
        output = asyncio.run(agent.arun("go", session_id=session_id))
    else:
        output = agent.run("go", session_id=session_id)
    return output, model


def lookup_order(number: int) -> str:
    """Look an order up.

    Args:
        number: The order's number.
    """
    if number == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    if number == 7:
        raise RuntimeError(f"orders db refused: {SECRET}")
    return f"Order {number}: shipped"


async def track_order(number: int) -> str:
    """Track an order.

    Args:
        number: The order's number.
    """
    await asyncio.sleep(0)
    return lookup_order(number)


def guarded_hook(*names: str, **options: Any) -> ToolguardHook:
    return toolguard_hook(Dispatcher([], external_tools=list(names), **options))


# --- what Agno does by default (the docs' claim) -----------------------------------------


def test_unguarded_agno_sends_the_exception_text_to_the_model() -> None:
    """If this fails, Agno stopped leaking: update docs/integrations/agno.md."""
    output, model = run([lookup_order], [[("lookup_order", {"number": 7})]])
    assert model.tool_messages() == [(f"orders db refused: {SECRET}", True)]
    assert output.tools[0].tool_call_error and SECRET in str(output.tools[0].result)


# --- toolguard_hook: the app's own tools, in place ---------------------------------------


@pytest.mark.parametrize(
    ("tool", "run_async"),
    [(lookup_order, False), (lookup_order, True), (track_order, True)],
    ids=["sync-run", "sync-arun", "async-arun"],  # Agno runs an async tool in arun only
)
def test_a_hidden_failure_is_answered_by_the_dispatcher(tool: Any, run_async: bool) -> None:
    name = tool.__name__
    with capture_logs() as logs:
        output, model = run(
            [tool], [[(name, {"number": 7})]], hooks=[guarded_hook(name)], run_async=run_async
        )
    ((text, is_error),) = model.tool_messages()
    hidden = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert len(hidden) == 1 and hidden[0]["error_id"] in text and is_error
    assert hidden[0]["call_id"] == "c0"
    assert SECRET not in model.last_text() and "RuntimeError" not in model.last_text()
    assert SECRET not in str(output.to_dict())  # nor in what Agno keeps of the run
    assert output.tools[0].tool_call_error


@pytest.mark.parametrize("run_async", [False, True], ids=["run", "arun"])
def test_a_tool_errors_message_and_a_success_reach_the_model_as_unguarded(
    run_async: bool,
) -> None:
    script = [[("lookup_order", {"number": 42}), ("lookup_order", {"number": 1})]]
    plain_output, plain = run([lookup_order], script, run_async=run_async)
    output, guarded = run(
        [lookup_order], script, hooks=[guarded_hook("lookup_order")], run_async=run_async
    )
    assert guarded.tool_messages() == [
        ("There is no order 42. Ask the user to check the number.", True),
        ("Order 1: shipped", False),
    ]
    assert guarded.tool_messages() == plain.tool_messages()
    assert [t.result for t in output.tools] == [t.result for t in plain_output.tools]


def test_a_team_takes_the_same_hook_for_its_own_tools() -> None:
    from agno.team import Team

    model = ScriptedModel(steps=[[("lookup_order", {"number": 7})], "done"])
    member = Agent(name="helper", model=ScriptedModel(steps=["ok"]))
    team = Team(members=[member], model=model, tools=[lookup_order], tool_hooks=[guarded_hook()])
    with capture_logs() as logs:
        team.run("go", session_id="team-1")
    ((text, is_error),) = model.tool_messages()
    (hidden,) = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert is_error and hidden["error_id"] in text and SECRET not in model.last_text()


def test_an_override_by_name_answers_the_failure() -> None:
    hook = guarded_hook(
        "lookup_order", overrides={"lookup_order": ToolPolicy(on_error="Orders are down.")}
    )
    _, model = run([lookup_order], [[("lookup_order", {"number": 7})]], hooks=[hook])
    assert model.tool_messages() == [("Orders are down.", True)]


def test_arguments_agno_refuses_get_toolguards_answer_and_the_tool_does_not_run() -> None:
    ran: list[int] = []

    def take(number: int) -> str:
        """Take a number.

        Args:
            number: A whole number.
        """
        ran.append(number)
        return "ok"

    script = [[("take", {"number": "many"})]]
    _, plain = run([take], script)
    assert "int_parsing" in plain.last_text()  # Agno's own: pydantic's text and link
    _, model = run([take], script, hooks=[guarded_hook("take")])
    ((text, is_error),) = model.tool_messages()
    assert is_error and text.startswith("Invalid arguments for tool 'take'")
    assert "'number'" in text and "errors.pydantic.dev" not in text and not ran


class Shelf(Toolkit):
    """An Agno toolkit whose method Agno validates."""

    def __init__(self) -> None:
        super().__init__(name="shelf", tools=[self.stock])

    def stock(self, item: str, count: int) -> str:
        """Put items on the shelf.

        Args:
            item: The item.
            count: How many.
        """
        return f"{count} {item}"


def test_a_missing_argument_is_named_with_its_type_for_toolkits_and_agno_tools() -> None:
    for tools in ([Shelf()], [agno_tool(lookup_order)]):
        name = "stock" if isinstance(tools[0], Shelf) else "lookup_order"
        arguments = {"item": "hat"} if name == "stock" else {}
        _, model = run(tools, [[(name, arguments)]], hooks=[guarded_hook(name)])
        ((text, is_error),) = model.tool_messages()
        missing = "'count'" if name == "stock" else "'number'"
        assert is_error and f"{missing}: missing required argument (an integer)" in text
    script = [[("lookup_order", {"number": "x", "colour": "red"})]]
    _, model = run([lookup_order], script, hooks=[guarded_hook("lookup_order")])
    ((text, is_error),) = model.tool_messages()
    assert is_error and "'colour': unexpected argument; this tool accepts: number" in text
    assert "'number': Input should be a valid integer" in text and "red" not in text


def test_each_call_of_one_message_is_logged_under_its_own_id() -> None:
    with capture_logs() as logs:
        run(
            [lookup_order],
            [[("lookup_order", {"number": 1}), ("lookup_order", {"number": 7})]],
            hooks=[guarded_hook("lookup_order")],
        )
    assert [e["call_id"] for e in logs if e["event"] == "tool_error_hidden"] == ["c1"]


def test_a_function_call_run_outside_an_agent_is_guarded_by_the_dispatchers_scope() -> None:
    from agno.tools.function import Function, FunctionCall

    function = Function.from_callable(lookup_order)
    function.tool_hooks = [guarded_hook("lookup_order")]
    with capture_logs() as logs:
        outcome = FunctionCall(function=function, arguments={"number": 7}).execute()
    (hidden,) = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert outcome.status == "failure" and hidden["error_id"] in str(outcome.error)
    assert SECRET not in str(outcome.error)


def test_a_validation_error_inside_the_tool_is_the_tools_own_failure() -> None:
    from pydantic import BaseModel

    class Row(BaseModel):
        count: int

    def read(query: str) -> str:
        """Read a row.

        Args:
            query: What to read.
        """
        return str(Row.model_validate({"count": SECRET}))

    with capture_logs() as logs:
        _, model = run([read], [[("read", {"query": "x"})]], hooks=[guarded_hook("read")])
    ((text, is_error),) = model.tool_messages()
    assert is_error and "error id" in text and SECRET not in model.last_text()
    assert [e["event"] for e in logs if e["event"] == "tool_error_hidden"]


class Counter(Toolkit):
    """An Agno toolkit keeping its own state."""

    def __init__(self) -> None:
        super().__init__(name="counter", tools=[self.bump])
        self.calls = 0

    def bump(self) -> str:
        """Count the calls."""
        self.calls += 1
        return f"call {self.calls}"


def test_a_toolkit_keeps_its_state_and_the_hook_sees_every_call() -> None:
    counter = Counter()
    _, model = run([counter], [[("bump", {}), ("bump", {})]], hooks=[guarded_hook("bump")])
    assert counter.calls == 2
    assert sorted(model.tool_messages()) == [("call 1", False), ("call 2", False)]


def test_agnos_own_signals_pass_untouched() -> None:
    def halt(reason: str) -> str:
        """Stop the run.

        Args:
            reason: Why.
        """
        raise StopAgentRun(reason, agent_message="Stopped.")

    script = [[("halt", {"reason": "enough"})]]
    plain_output, plain = run([halt], script)
    output, guarded = run([halt], script, hooks=[guarded_hook("halt")])
    assert len(guarded.seen) == len(plain.seen) == 1  # the run stopped after the tool
    told = [(t.result, t.tool_call_error, t.stop_after_tool_call) for t in output.tools]
    assert told == [
        (t.result, t.tool_call_error, t.stop_after_tool_call) for t in plain_output.tools
    ]
    assert told == [("enough", True, True)]
    assert output.content == plain_output.content


def test_retries_apply_to_a_guarded_tool() -> None:
    attempts: list[int] = []

    def flaky(query: str) -> str:
        """Fail once.

        Args:
            query: What.
        """
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("reset")
        return f"found {query}"

    hook = guarded_hook("flaky", overrides={"flaky": ToolPolicy(retries=2)})
    _, model = run([flaky], [[("flaky", {"query": "x"})]], hooks=[hook])
    assert model.tool_messages() == [("found x", False)] and len(attempts) == 2


def test_a_long_success_is_cut_as_the_dispatcher_says_and_an_agno_result_kept() -> None:
    def page(number: int) -> str:
        """A long page.

        Args:
            number: The page.
        """
        return "x" * 5000

    def card(number: int) -> AgnoToolResult:
        """A card.

        Args:
            number: The card.
        """
        return AgnoToolResult(content="y" * 5000, metadata={"card": number})

    hook = guarded_hook("page", "card", max_result_chars=1000)
    _, model = run([page, card], [[("page", {"number": 1}), ("card", {"number": 2})]], hooks=[hook])
    (cut, is_error), (cut_card, _) = model.tool_messages()
    assert not is_error and cut.startswith("x" * 1000) and "truncated" in cut
    assert len(cut) < 1200 and cut_card.startswith("y" * 1000) and len(cut_card) < 1200
    _, plain = run([page], [[("page", {"number": 1})]], hooks=[guarded_hook("page")])
    assert plain.tool_messages() == [("x" * 5000, False)]  # nothing to decide: as it was


def test_breakers_count_per_agno_session() -> None:
    hook = guarded_hook("lookup_order", breaker=Breaker(failures=1))
    script = [[("lookup_order", {"number": 7})]]
    run([lookup_order], script, hooks=[hook], session_id="conversation-1")
    _, again = run([lookup_order], script, hooks=[hook], session_id="conversation-1")
    ((text, _),) = again.tool_messages()
    assert "unavailable" in text  # the breaker of that conversation is open
    _, other = run([lookup_order], script, hooks=[hook], session_id="conversation-2")
    ((text, _),) = other.tool_messages()
    assert "error id" in text and "unavailable" not in text


def test_return_direct_cannot_apply_and_is_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="stop_after_tool_call"):
        guarded_hook("lookup_order", overrides={"lookup_*": ToolPolicy(return_direct=True)})
    # a glob the hook cannot see coming: refused at the call, which Agno reports failed
    hook = guarded_hook(overrides={"lookup_*": ToolPolicy(return_direct=True)})
    ran: list[int] = []

    def lookup_stock(item: str) -> str:
        """Look stock up.

        Args:
            item: The item.
        """
        ran.append(1)
        return "in stock"

    _, model = run([lookup_stock], [[("lookup_stock", {"item": "hat"})]], hooks=[hook])
    ((text, is_error),) = model.tool_messages()
    assert is_error and "return_direct for 'lookup_stock' cannot apply" in text and not ran


def test_the_hook_listed_uncalled_fails_each_call_loudly_and_runs_no_tool() -> None:
    ran: list[int] = []

    def note(text: str) -> str:
        """Note something.

        Args:
            text: What.
        """
        ran.append(1)
        return "noted"

    _, model = run([note], [[("note", {"text": "x"})]], hooks=[toolguard_hook])
    ((text, is_error),) = model.tool_messages()
    assert is_error and "dispatcher" in text and not ran


def test_bad_inputs_at_the_entry_points_are_clear() -> None:
    with pytest.raises(TypeError, match=r"toolguard_hook\(dispatcher\) takes a toolguard"):
        toolguard_hook([lookup_order])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"toolguard_hook\(dispatcher\) takes a toolguard"):
        toolguard_hook(None)  # type: ignore[arg-type]
    assert ToolguardHook().dispatcher.tools == {}  # the global defaults alone
    with pytest.raises(TypeError, match=r"as_agno_tools\(dispatcher\) takes a toolguard"):
        as_agno_tools([search])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tool name only with dispatcher"):
        as_agno_tool("search")
    with pytest.raises(ToolDefinitionError, match="not one of this dispatcher's tools"):
        as_agno_tool("nothing", dispatcher=Dispatcher([search]))


# --- as_agno_tool: toolguard's own tools -------------------------------------------------


@guard_tool
async def fetch(url: str) -> str:
    """Fetch a page.

    Args:
        url: The page.
    """
    await asyncio.sleep(0)
    if url == "boom":
        raise RuntimeError(SECRET)
    return f"<html>{url}</html>"


def test_toolguard_tools_declare_their_schema_as_agno_parameters() -> None:
    made = as_agno_tool(search)
    assert made.name == "search" and (made.description or "").startswith("Search the catalogue")
    assert made.parameters == search.parameters


@pytest.mark.parametrize("run_async", [False, True], ids=["run", "arun"])
def test_toolguard_tools_answer_in_an_agent(run_async: bool) -> None:
    tools = as_agno_tools(Dispatcher([search]))
    script: list[Step] = [
        [
            ("search", {"query": "hat", "limit": 2}),
            ("search", {"query": "boom"}),
            ("search", {"query": "hat", "limit": "x"}),
        ]
    ]
    with capture_logs() as logs:
        _, model = run(tools, script, run_async=run_async)
    ok, hidden, invalid = model.tool_messages()
    assert ok == ('["hat 0","hat 1"]', False)  # toolguard's JSON of the list
    assert hidden[1] and "error id" in hidden[0] and SECRET not in model.last_text()
    assert invalid[1] and "limit" in invalid[0]
    assert [e["call_id"] for e in logs if e["event"] == "tool_error_hidden"] == ["c1"]


def test_agnos_signals_from_a_toolguard_tool_reach_agno() -> None:
    @guard_tool
    def halt(reason: str) -> str:
        """Stop the run.

        Args:
            reason: Why.
        """
        raise StopAgentRun(reason)

    output, model = run(as_agno_tools(Dispatcher([halt])), [[("halt", {"reason": "enough"})]])
    assert len(model.seen) == 1  # Agno stopped the run after the tool, as it means to
    assert [(t.result, t.stop_after_tool_call) for t in output.tools] == [("enough", True)]


def test_an_async_toolguard_tool_is_an_async_agno_function() -> None:
    (made,) = as_agno_tools(Dispatcher([fetch]))
    _, model = run([made], [[("fetch", {"url": "a"}), ("fetch", {"url": "boom"})]], run_async=True)
    ok, failed = model.tool_messages()
    assert ok == ("<html>a</html>", False) and failed[1] and SECRET not in failed[0]


def test_toolguard_tools_and_guarded_tools_together_answer_once() -> None:
    dispatcher = Dispatcher([search], external_tools=["lookup_order"])
    with capture_logs() as logs:
        _, model = run(
            [*as_agno_tools(dispatcher), lookup_order],
            [[("search", {"query": "boom"}), ("lookup_order", {"number": 7})]],
            hooks=[toolguard_hook(dispatcher)],
        )
    assert [e["tool"] for e in logs if e["event"] == "tool_error_hidden"] == [
        "search",
        "lookup_order",
    ]
    assert all(is_error and "error id" in text for text, is_error in model.tool_messages())


def test_return_direct_on_a_toolguard_tool_is_refused() -> None:
    @guard_tool(return_direct=True)
    def finish(answer: str) -> str:
        """Finish.

        Args:
            answer: The answer.
        """
        return answer

    with pytest.raises(ToolDefinitionError, match="return_direct"):
        as_agno_tool(finish)
