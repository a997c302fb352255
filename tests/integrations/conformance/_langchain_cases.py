"""LangChain's own conformance scenarios: the bugs of issue 27 and what LangChain does
that the table does not say (played by ``test_langchain.py``).

Each :class:`Case` is a :class:`._table.Scenario` (its name, the calls of the model's
step, the observation fields toolguard is meant to change) and how to build its agent.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Final

import pydantic
from langchain.agents.middleware import AgentMiddleware, ToolRetryMiddleware
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool, ToolException
from langchain_core.tools import tool as lc_tool
from langgraph.prebuilt import InjectedState, InjectedStore
from langgraph.types import Command

from . import _table
from ._table import SECRET, Observation, Scenario

_ANSWER: Final = frozenset({"model_saw", "raised", "final", "shape"})


class Counted:
    """How many times each tool body ran."""

    def __init__(self) -> None:
        self.runs: dict[str, int] = {}
        self._lock = threading.Lock()

    def ran(self, name: str) -> None:
        with self._lock:
            self.runs[name] = self.runs.get(name, 0) + 1

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """``function``, counted (its signature and docstring kept for ``@tool``)."""

        @functools.wraps(function)
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.ran(function.__name__)
            return function(*args, **kwargs)

        return counted


@dataclass
class Built:
    tools: list[BaseTool]
    inner: list[AgentMiddleware[Any, Any, Any]] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    start: dict[str, Any] = field(default_factory=dict)
    state: Callable[[], object] = lambda: None
    script: list[AIMessage] | None = None


Check = Callable[[Observation], None]
GuardedCheck = Callable[[Observation, list[dict[str, Any]]], None]


@dataclass(frozen=True)
class Case:
    scenario: Scenario
    build: Callable[[Counted], Built]
    paths: tuple[bool, ...] = (False, True)  # is_async values it is played on
    unguarded: Check | None = None
    guarded: GuardedCheck | None = None

    @property
    def calls(self) -> tuple[tuple[str, dict[str, Any]], ...]:
        return self.scenario.calls


def _raises(name: str) -> Check:
    def check(seen: Observation) -> None:
        assert seen.raised == name, seen.raised

    return check


# --- the tools ----------------------------------------------------------------------------


def _plain(counted: Counted, function: Callable[..., Any], **options: Any) -> BaseTool:
    handle = options.pop("handle_tool_error", False)
    tool: BaseTool = lc_tool(parse_docstring=True, **options)(counted.wrap(function))
    tool.handle_tool_error = handle  # LangChain's own setting, on the tool
    return tool


def needs_store(query: str, store: Annotated[Any, InjectedStore()]) -> str:
    """Read the store.

    Args:
        query: What to read.
    """
    return "stored"


def needs_field(query: str, region: Annotated[str, InjectedState("region")]) -> str:
    """Read a state field the agent's state does not have.

    Args:
        query: What to read.
    """
    return region


def list_command(query: str, call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
    """Answer with a Command whose update is a list (a dict-state agent refuses it).

    Args:
        query: What to note.
    """
    return Command(update=[ToolMessage("noted", tool_call_id=call_id)])


def two_answers(query: str, call_id: Annotated[str, InjectedToolCallId]) -> list[Any]:
    """Answer twice (ToolNode wants exactly one closing message).

    Args:
        query: What to answer.
    """
    return [ToolMessage("one", tool_call_id=call_id), ToolMessage("two", tool_call_id=call_id)]


def quota(query: str) -> str:
    """Fail with LangChain's ToolException.

    Args:
        query: What to look up.
    """
    raise ToolException(f"Quota reached for {query}; try tomorrow.")


def own_error(query: str, call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
    """Answer a problem with an error message of its own.

    Args:
        query: What to look up.
    """
    return ToolMessage(f"{query} is archived", tool_call_id=call_id, status="error")


def not_a_pair(query: str) -> str:
    """Declared content_and_artifact, returns a str.

    Args:
        query: What to look up.
    """
    return "just text"


def parses_upstream(query: str) -> str:
    """Parse an upstream reply that fails validation (the body's failure).

    Args:
        query: What to look up.
    """
    pydantic.TypeAdapter(dict[str, int]).validate_python({f"token {SECRET}": "x"})
    return "unreachable"


def flaky(failures: int) -> Callable[[str], str]:
    """A tool body that fails ``failures`` times, then answers."""
    left = [failures]

    def lookup(query: str) -> str:
        """Look something up, on a flaky backend.

        Args:
            query: What to look up.
        """
        if left[0]:
            left[0] -= 1
            raise ConnectionError(f"backend reset: {SECRET}")
        return f"found {query}"

    return lookup


class SyncOnly(AgentMiddleware[Any, Any, Any]):
    """A middleware with only a sync ``wrap_tool_call``: LangChain's wiring error on
    the async path."""

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        return handler(request)


class JumpsBack(AgentMiddleware[Any, Any, Any]):
    """An ``after_model`` hook that asks to jump to the model without declaring it:
    LangChain ignores it in an agent without a tools node."""

    def after_model(self, state: Any, runtime: Any) -> dict[str, Any]:
        return {"jump_to": "model"}


# --- the cases ----------------------------------------------------------------------------


def _one(counted: Counted, function: Callable[..., Any], **options: Any) -> Built:
    return Built([_plain(counted, function, **options)])


def _no_tools(counted: Counted) -> Built:
    return Built([])


def _no_tools_jump(counted: Counted) -> Built:
    script = [AIMessage("first"), AIMessage("second"), AIMessage("third")]
    return Built([], inner=[JumpsBack()], script=script)


def _flaky(retries: int, on_failure: Any) -> Callable[[Counted], Built]:
    def build(counted: Counted) -> Built:
        tool = _plain(counted, flaky(2))
        retry = ToolRetryMiddleware(max_retries=retries, on_failure=on_failure, initial_delay=0)
        return Built([tool], inner=[retry])

    return build


def _answered_hidden(seen: Observation, logs: list[dict[str, Any]]) -> None:
    _table.answered_hidden(seen, logs)


def _visible(text: str) -> GuardedCheck:
    def check(seen: Observation, logs: list[dict[str, Any]]) -> None:
        assert seen.model_saw[-1] == (text, True)

    return check


def _s(name: str, calls: Any, about: str, changes: frozenset[str] = frozenset()) -> Scenario:
    return Scenario(name, (), tuple(calls), changes=changes, about=about)


LANGCHAIN: Final[tuple[Case, ...]] = (
    Case(
        _s(
            "no_tools",
            [("lookup", {"query": "x"})],
            "an agent without tools keeps its shape: "
            "the model's tool call ends the run unanswered, as without the guard",
        ),
        _no_tools,
    ),
    Case(
        _s(
            "no_tools_jump",
            [],
            "an undeclared after_model jump is ignored without a tools "
            "node (guarded, it used to loop to the recursion limit)",
        ),
        _no_tools_jump,
    ),
    Case(
        _s(
            "missing_store",
            [("needs_store", {"query": "x"})],
            "InjectedStore without a store: LangGraph's ValueError reaches the developer",
        ),
        lambda c: _one(c, needs_store),
        unguarded=_raises("ValueError"),
    ),
    Case(
        _s(
            "missing_state_field",
            [("needs_field", {"query": "x"})],
            "InjectedState of a field the state lacks: LangGraph's KeyError",
        ),
        lambda c: _one(c, needs_field),
        unguarded=_raises("KeyError"),
    ),
    Case(
        _s(
            "command_update_type",
            [("list_command", {"query": "x"})],
            "a Command with a list update in a dict-state agent: LangGraph's ValueError",
        ),
        lambda c: _one(c, list_command),
        unguarded=_raises("ValueError"),
    ),
    Case(
        _s(
            "two_closing_messages",
            [("two_answers", {"query": "x"})],
            "a list return without exactly one closing message: LangGraph's ValueError",
        ),
        lambda c: _one(c, two_answers),
        unguarded=_raises("ValueError"),
    ),
    Case(
        _s(
            "sync_only_middleware",
            [("lookup", {"query": "x"})],
            "a sync-only middleware on the async path: LangChain's NotImplementedError",
        ),
        lambda c: Built([_plain(c, _table.lookup)], inner=[SyncOnly()]),
        paths=(True,),
        unguarded=_raises("NotImplementedError"),
    ),
    Case(
        _s(
            "async_only_tool",
            [("lookup", {"query": "x"})],
            "an async-only tool on the sync "
            "path: LangChain's NotImplementedError, not 'internal error'",
        ),
        lambda c: Built([StructuredTool.from_function(coroutine=_alookup, name="lookup")]),
        paths=(False,),
        unguarded=_raises("NotImplementedError"),
    ),
    Case(
        _s(
            "not_a_pair",
            [("not_a_pair", {"query": "x"})],
            "content_and_artifact without a pair: LangChain's ValueError",
        ),
        lambda c: _one(c, not_a_pair, response_format="content_and_artifact"),
        unguarded=_raises("ValueError"),
    ),
    Case(
        _s(
            "no_call_id",
            [],
            "a tool call without an id: LangGraph's own TypeError, not toolguard's ValueError",
        ),
        lambda c: Built(
            [_plain(c, _table.lookup)],
            script=[
                AIMessage("", tool_calls=[{"name": "lookup", "args": {"query": "x"}, "id": None}])
            ],
        ),
        unguarded=_raises("TypeError"),
    ),
    Case(
        _s(
            "handle_tool_error",
            [("quota", {"query": "maps"})],
            "the tool's own handle_tool_error answer is kept as written, nothing added or warned",
        ),
        lambda c: _one(c, quota, handle_tool_error=True),
    ),
    Case(
        _s(
            "own_error_message",
            [("own_error", {"query": "maps"})],
            "the tool's own error ToolMessage is kept as written",
        ),
        lambda c: _one(c, own_error),
    ),
    Case(
        _s(
            "retry_middleware_inside",
            [("lookup", {"query": "x"})],
            "ToolRetryMiddleware inside: its retries and its answer, as without the guard",
        ),
        _flaky(3, "continue"),
    ),
    Case(
        _s(
            "retry_middleware_gives_up",
            [("lookup", {"query": "x"})],
            "ToolRetryMiddleware inside gives up and raises: the same attempts, toolguard answers",
            _ANSWER,
        ),
        _flaky(1, "error"),
        unguarded=_raises("ConnectionError"),
        guarded=_answered_hidden,
    ),
    Case(
        _s(
            "tool_exception",
            [("quota", {"query": "maps"})],
            "LangChain's ToolException is "
            "model-visible: its message, where the run failed unguarded",
            _ANSWER,
        ),
        lambda c: _one(c, quota),
        unguarded=_raises("ToolException"),
        guarded=_visible("Quota reached for maps; try tomorrow."),
    ),
    Case(
        _s(
            "body_validation_error",
            [("parses_upstream", {"query": "x"})],
            "a "
            "ValidationError the body raises is the tool's failure, hidden (ToolNode sends "
            "it as the model's bad arguments, secret included)",
            _ANSWER,
        ),
        lambda c: _one(c, parses_upstream),
        guarded=_answered_hidden,
    ),
)


async def _alookup(query: str) -> str:
    """Look something up (async only)."""
    return f"found {query}"
