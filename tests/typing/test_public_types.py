"""The public types, pinned: mypy checks this module (``mypy --strict tests``).

``assert_type`` fails the type check when a public signature drifts; a
``# type: ignore[code]`` on a misuse fails it when the misuse stops being an error
(``warn_unused_ignores`` is part of ``--strict``). At run time the module is an
ordinary test, so the same lines also run.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, assert_type

import pytest

from toolguard import (
    BoundTool,
    Dispatcher,
    HandlerContext,
    Round,
    Session,
    Setting,
    Tool,
    ToolCall,
    ToolDefinitionError,
    ToolPolicy,
    ToolResult,
    configure,
    tool,
)
from toolguard.handlers import Handler, fail_unless_visible, on


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(name="times", retries=2, return_direct=True)
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@tool
async def later(text: str) -> str:
    """Echo, asynchronously."""
    return text


class Account:
    def __init__(self) -> None:
        self.balance = 100

    @tool
    def withdraw(self, amount: int) -> int:
        """Withdraw money."""
        self.balance -= amount
        return self.balance


def hint(error: Exception, context: HandlerContext) -> str | None:
    return f"{context.tool} failed" if isinstance(error, KeyError) else None


async def ahint(error: Exception, context: HandlerContext) -> str | None:
    return None


def test_a_tool_keeps_its_function_type_and_its_bound_form_drops_self() -> None:
    as_function: Callable[[int, int], int] = add  # a Tool is the function, for mypy too
    named: Tool[..., int] = multiply
    assert_type(add(1, 2), int)
    pending: Coroutine[Any, Any, str] = later("x")  # an async tool gives its coroutine
    pending.close()
    wrong: Callable[[str], int] = add  # type: ignore[assignment]
    account = Account()
    bound: BoundTool[..., int] = account.withdraw
    as_method: Callable[[int], int] = account.withdraw  # `self` is bound
    with_self: Callable[[Account, int], int] = account.withdraw  # type: ignore[assignment]
    assert_type(account.withdraw(10), int)
    assert as_function(1, 2) == 3 and named(2, 3) == 6 and as_method(10) == 80
    assert isinstance(add, Tool) and isinstance(bound, BoundTool)
    assert callable(wrong) and callable(with_self)


def test_dispatch_round_and_session_results_are_typed() -> None:
    agent = Dispatcher([add, multiply], on_error=hint, max_workers=2)
    result = agent.dispatch(ToolCall(name="add", arguments={"a": 1, "b": 2}))
    assert_type(result, ToolResult)
    round_ = agent.run([ToolCall(name="times", arguments={"a": 2, "b": 3})])
    assert_type(round_, Round)
    assert_type(round_.final, ToolResult | None)
    assert_type(round_.results, tuple[ToolResult, ...])
    session = agent.session()
    assert_type(session, Session)
    assert_type(session.dispatch(ToolCall(name="add", arguments={"a": 1, "b": 1})), ToolResult)
    explained = agent.explain("add")
    assert_type(explained, dict[str, Setting | tuple[Setting, ...]])
    assert result.content == "3" and round_.stop


def test_handlers_compose_and_plain_callables_and_strings_are_handlers() -> None:
    assert_type(on(KeyError, "No such key.") | fail_unless_visible, Handler)
    assert_type("Try again." | on(TimeoutError, hint), Handler)
    policy = ToolPolicy(on_error=on(KeyError, hint) | "fallback", timeout=2.5, retries=1)
    assert_type(policy, ToolPolicy)
    ToolPolicy(on_error=ahint)
    ToolPolicy(return_direct=lambda result: not result.is_error)
    ToolPolicy(return_direct="always")
    assert policy.timeout == 2.5


def test_a_misspelt_or_mistyped_option_is_a_type_error(toolguard_defaults: Any) -> None:
    """Each line below is refused by mypy (the ignore would be unused otherwise) and at
    run time."""
    with pytest.raises(ToolDefinitionError):
        tool(on_eror="x")(add)  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        configure(timout=3)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="timeout"):
        ToolPolicy(timeout="soon")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="return_direct"):
        ToolPolicy(return_direct="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="log_level"):
        Dispatcher([add], log_level=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="on_error"):
        ToolPolicy(on_error=42)  # type: ignore[arg-type]
