"""In-place rows: Pydantic AI's own tool call, unguarded and with its one line.

``ToolManager.handle_call(ToolCallPart)``: what the agent graph runs per tool call
(validate, then execute, through the run's capability hooks). The manager is the one
a real ``agent.run`` prepared for its tool step (taken from the run's ``RunContext``
by a tool), on an agent with and without ``capabilities=[ToolguardCapability(...)]``:
the same run id, conversation id and step, so the guarded side runs in the default
session of the conversation as an application does. Repeating a call within one step
is steady state: Pydantic AI charges a retry budget only between steps, and the
capability looks its scope up once a step (the first call of each step also pays the
session lookup, not timed here).

Failures: a tool raising a plain exception is not handled by Pydantic AI, it
propagates out of ``handle_call`` and ends the run (the unguarded side; caught here);
guarded, toolguard's hidden failure (the cause logged once through structlog, here to
a no-op logger) answered as Pydantic AI's ``ToolFailed``, which ``handle_call`` raises
as ``ToolFailedError`` for the graph (caught here). A tool's own ``ModelRetry`` is
Pydantic AI's retry on both sides (toolguard lets it pass). Two reference rows: a
tool answering a failed result itself (``ToolFailed``, Pydantic AI's own failure
answer, what the guarded failure ends in), and a call under a capability that does
nothing (Pydantic AI's own price of one more capability, which the one line adds).
"""

from __future__ import annotations

import logging
from typing import Any

from _peers import ARGS, Bench, RunAsync, Suite, does


def _setup(run: RunAsync) -> dict[str, Any]:
    import structlog
    from pydantic_ai import Agent, ModelRetry, RunContext, ToolFailed
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.exceptions import ToolFailedError, ToolRetryError
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from toolguard import Dispatcher
    from toolguard.integrations.pydantic_ai import ToolguardCapability

    structlog.configure(logger_factory=structlog.ReturnLoggerFactory())
    logging.getLogger("pydantic_ai").addHandler(logging.NullHandler())

    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async def boom(a: int, b: int) -> int:
        """Add two integers (fails)."""
        raise ValueError("database down")

    async def refuse(a: int, b: int) -> int:
        """Add two integers (asks the model again)."""
        raise ModelRetry("There is no order 42. Ask the user to check the number.")

    async def failed_itself(a: int, b: int) -> int:
        """Add two integers (answers a failed result itself)."""
        raise ToolFailed("There is no order 42. Ask the user to check the number.")

    class Nothing(AbstractCapability[Any]):
        """A capability that does nothing: what any capability costs a tool call."""

    def manager(guarded: bool, capabilities: list[Any] | None = None) -> Any:
        """The tool manager of a real run's tool step."""
        taken: list[Any] = []

        def take(ctx: RunContext[None]) -> str:
            """Take the run's tool manager."""
            taken.append(ctx.tool_manager)
            return "taken"

        take.__annotations__ = {"ctx": RunContext[None], "return": str}  # resolved here

        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            if len(messages) == 1:
                return ModelResponse(parts=[ToolCallPart("take", {}, tool_call_id="t")])
            return ModelResponse(parts=[TextPart("done")])

        if capabilities is None:
            capabilities = [ToolguardCapability(Dispatcher([]))] if guarded else []
        agent = Agent(
            FunctionModel(respond),
            tools=[take, add, boom, refuse, failed_itself],
            capabilities=capabilities,
            retries=1,
        )
        run(agent.run("go"))
        return taken[0]

    def part(name: str) -> Any:
        return ToolCallPart(tool_name=name, args=ARGS, tool_call_id="call-1")

    async def failed(tool_manager: Any, call: Any) -> str:
        """The tool's failure as the graph receives it: its exception's type."""
        try:
            await tool_manager.handle_call(call)
        except (ToolFailedError, ToolRetryError, ValueError) as error:  # what the graph handles
            return type(error).__name__
        raise AssertionError("expected a failure")

    plain, guarded = manager(False), manager(True)
    return {
        "pa_nothing": manager(False, [Nothing()]).handle_call,
        "pa_failed_itself": part("failed_itself"),
        "pa_plain": plain.handle_call,
        "pa_guarded": guarded.handle_call,
        "pa_plain_manager": plain,
        "pa_guarded_manager": guarded,
        "pa_failed": failed,
        "pa_add": part("add"),
        "pa_boom": part("boom"),
        "pa_refuse": part("refuse"),
    }


def _ok(key: str, guarded: bool, vs: str | None) -> Bench:
    call = "pa_guarded" if guarded else "pa_plain"
    return Bench(
        key=key,
        label=f"pydantic-ai in place: add, {'guarded' if guarded else 'unguarded'}",
        stmt=f"await {call}(pa_add)",
        is_async=True,
        vs=vs,
        check=f"(await {call}(pa_add)) == 3",
        does=does("the toolset's pydantic-core validator", "-", "-", "the value"),
    )


def _nothing() -> Bench:
    return Bench(
        key="inplace_pydantic_ai_ok_any_capability",
        label="pydantic-ai: add, under a capability that does nothing",
        stmt="await pa_nothing(pa_add)",
        is_async=True,
        check="(await pa_nothing(pa_add)) == 3",
        note="Pydantic AI's own price of one more capability: it runs every tool hook of "
        "every capability, on a copy of the RunContext each",
        does=does("the toolset's pydantic-core validator", "-", "-", "the value"),
    )


def _failure(key: str, guarded: bool, part: str, expect: str, vs: str | None) -> Bench:
    manager = "pa_guarded_manager" if guarded else "pa_plain_manager"
    errors = {
        ("pa_boom", False): "propagates (ends the run)",
        ("pa_boom", True): "toolguard's answer: ToolFailed",
        ("pa_refuse", False): "ModelRetry: a retry part",
        ("pa_refuse", True): "ModelRetry passes: a retry part",
        ("pa_failed_itself", False): "ToolFailed: Pydantic AI's own failed result",
    }[part, guarded]
    return Bench(
        key=key,
        label=(
            f"pydantic-ai in place: {part.removeprefix('pa_')}, "
            f"{'guarded' if guarded else 'unguarded'}"
        ),
        stmt=f"await pa_failed({manager}, {part})",
        is_async=True,
        vs=vs,
        check=f"(await pa_failed({manager}, {part})) == {expect!r}",
        does=does(
            "the toolset's pydantic-core validator",
            errors,
            "structlog, once" if guarded and part == "pa_boom" else "-",
            "the exception the graph handles",
        ),
    )


SUITE = Suite(
    group="inplace pydantic-ai",
    module="pydantic_ai",
    versions=("pydantic-ai-slim",),
    description=(
        "ToolManager.handle_call on a real run's tool step, without and with "
        "capabilities=[ToolguardCapability(Dispatcher([]))]"
    ),
    benches=(
        _ok("inplace_pydantic_ai_ok_unguarded", False, None),
        _ok("inplace_pydantic_ai_ok_guarded", True, "inplace_pydantic_ai_ok_unguarded"),
        _nothing(),
        _failure("inplace_pydantic_ai_fail_unguarded", False, "pa_boom", "ValueError", None),
        _failure(
            "inplace_pydantic_ai_fail_guarded",
            True,
            "pa_boom",
            "ToolFailedError",
            "inplace_pydantic_ai_fail_unguarded",
        ),
        _failure(
            "inplace_pydantic_ai_failed_result_unguarded",
            False,
            "pa_failed_itself",
            "ToolFailedError",
            None,
        ),
        _failure("inplace_pydantic_ai_retry_unguarded", False, "pa_refuse", "ToolRetryError", None),
        _failure(
            "inplace_pydantic_ai_retry_guarded",
            True,
            "pa_refuse",
            "ToolRetryError",
            "inplace_pydantic_ai_retry_unguarded",
        ),
    ),
    setup=_setup,
)
