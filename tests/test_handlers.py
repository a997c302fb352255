"""The handler vocabulary on marked, unmarked, blank-marked and wrapped-marked errors."""

from __future__ import annotations

import asyncio
from typing import Any

import attrs
import pytest

from tests._content import str_content
from toolguard import (
    Dispatcher,
    HandlerContext,
    ToolCall,
    ToolCallFailed,
    ToolError,
    ToolPolicy,
    ToolResult,
    load_policy,
    tool,
)
from toolguard.handlers import (
    Handler,
    fail,
    fail_unless_visible,
    generic_unless_visible,
    on,
    send_exception_message,
)
from toolguard.policy._handlers import as_handler


class Marked(Exception):
    def message_for_model(self) -> str:
        return "marked message"


class BlankMarked(Exception):
    def message_for_model(self) -> str:
        return "   "


def _wrapped_marked() -> Exception:
    try:
        raise ToolError("inner visible message")
    except ToolError as inner:
        try:
            raise RuntimeError("wrapper hides it") from inner
        except RuntimeError as outer:
            return outer


ERRORS: dict[str, Any] = {
    "marked": lambda: ToolError("tool error message"),
    "protocol": lambda: Marked("secret text"),
    "unmarked": lambda: ValueError("secret text"),
    "blank": lambda: BlankMarked("secret text"),
    "wrapped": _wrapped_marked,
}
VISIBLE = {"marked": "tool error message", "protocol": "marked message"}


def _dispatch(kind: str, handler: Any) -> ToolResult:
    def failing() -> str:
        raise ERRORS[kind]()

    options = {} if handler is None else {"on_error": handler}
    dispatcher = Dispatcher([tool(name="t", **options)(failing)])
    return dispatcher.dispatch(ToolCall(name="t", id="c1"))


@pytest.mark.parametrize("kind", list(ERRORS))
def test_send_exception_message(kind: str) -> None:
    result = _dispatch(kind, send_exception_message)
    expected = VISIBLE.get(kind) or ("wrapper hides it" if kind == "wrapped" else "secret text")
    assert result.is_error
    assert result.content == expected


@pytest.mark.parametrize("kind", list(ERRORS))
def test_generic_unless_visible(kind: str) -> None:
    result = _dispatch(kind, generic_unless_visible("Failed in {tool}, id {error_id}. {other}"))
    if kind in VISIBLE:
        assert result.content == VISIBLE[kind]
        assert result.error_id is None
    else:
        assert result.content == f"Failed in t, id {result.error_id}. {{other}}"
        assert "secret" not in result.content
        assert "inner visible message" not in result.content


@pytest.mark.parametrize("kind", list(ERRORS))
def test_fail_unless_visible(kind: str) -> None:
    if kind in VISIBLE:
        assert _dispatch(kind, fail_unless_visible).content == VISIBLE[kind]
        return
    with pytest.raises(ToolCallFailed) as caught:
        _dispatch(kind, fail_unless_visible)
    assert caught.value.tool == "t"
    assert caught.value.call_id == "c1"
    assert len(caught.value.error_id) == 8
    assert type(caught.value.__cause__) is type(ERRORS[kind]())


@pytest.mark.parametrize("kind", list(ERRORS))
def test_fail_fails_every_error_even_visible_ones(kind: str) -> None:
    with pytest.raises(ToolCallFailed) as caught:
        _dispatch(kind, fail)
    assert caught.value.__cause__ is not None
    assert str(caught.value) == f"tool 't' failed (error id {caught.value.error_id})"


def test_blank_model_message_is_ignored_with_a_warning(logs: list[dict[str, Any]]) -> None:
    result = _dispatch("blank", None)
    assert str_content(result).startswith("The tool 't' failed because of an internal error")
    [warning] = [e for e in logs if e["event"] == "blank_model_message"]
    assert warning == {
        "event": "blank_model_message",
        "log_level": "warning",
        "tool": "t",
        "error_type": "BlankMarked",
    }


def test_on_matches_subclasses_and_tuples_and_declines_otherwise() -> None:
    handler = on((KeyError, ValueError), "bad key or value")
    assert _dispatch("unmarked", handler).content == "bad key or value"
    assert str_content(_dispatch("unmarked", on(LookupError, "x"))).startswith(
        "The tool 't' failed"
    )


def test_on_with_a_text_answers_it_for_the_types_it_names_visible_ones_included(
    logs: list[dict[str, Any]],
) -> None:
    """Naming the types is the explicit choice (LangChain's handle_tool_error="..."):
    the text replaces a ToolError's own message, and the error is logged under the id
    it quotes."""
    handler = on(ToolError, "The {tool} service could not answer (ref {error_id}).")
    result = _dispatch("marked", handler)
    assert result.content == f"The t service could not answer (ref {result.error_id})."
    [event] = logs
    assert event["error_id"] == result.error_id
    assert isinstance(event["exc_info"], ToolError)
    assert _dispatch("protocol", on(Marked, "replaced")).content == "replaced"


def test_on_with_a_text_still_declines_other_types_and_a_name_is_the_handler() -> None:
    assert _dispatch("marked", on(KeyError, "not this one")).content == "tool error message"
    with pytest.raises(ToolCallFailed):
        _dispatch("marked", on(ToolError, "fail"))
    # a catch-all text keeps model-visible messages (generic_unless_visible)
    assert _dispatch("marked", "Service down.").content == "tool error message"
    kept = on(ToolError, generic_unless_visible("explicitly kept"))
    assert _dispatch("marked", kept).content == "tool error message"


def test_a_policy_files_rule_message_answers_for_its_types_as_on_does(tmp_path: Any) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(
        'version = 1\n[[agent.rules]]\nexception = "toolguard.errors.ToolError"\n'
        'message = "Ask again later (ref {error_id})."\n',
        encoding="utf-8",
    )

    @tool
    def t() -> str:
        """Fails visibly."""
        raise ToolError("tool error message")

    result = Dispatcher([t], policy=load_policy(path)).dispatch(ToolCall(name="t"))
    assert result.content == f"Ask again later (ref {result.error_id})."


def test_on_rejects_things_that_are_not_exception_classes() -> None:
    with pytest.raises(TypeError, match="exception class"):
        on(42, "x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="exception class"):
        on((), "x")


def test_composition_first_non_none_answer_wins_and_strings_compose_on_either_side() -> None:
    chain = on(KeyError, "key") | on(ValueError, "value") | "fallback"
    assert _dispatch("unmarked", chain).content == "value"
    assert _dispatch("wrapped", chain).content == "fallback"
    left = "always first" | on(ValueError, "never asked")
    assert _dispatch("unmarked", left).content == "always first"


def test_fixed_message_replaces_only_error_id_and_tool_literally() -> None:
    result = _dispatch("unmarked", "{tool} failed ({error_id}); {0} {x} {{tool}}")
    assert result.content == f"t failed ({result.error_id}); {{0}} {{x}} {{t}}"


def test_plain_callable_gets_the_error_and_context() -> None:
    seen: list[tuple[Exception, HandlerContext]] = []

    def handler(error: Exception, context: HandlerContext) -> str | None:
        seen.append((error, context))
        return f"handled {type(error).__name__} at {context.level}"

    result = _dispatch("unmarked", handler)
    assert result.content == "handled ValueError at tool"
    [(error, context)] = seen
    assert isinstance(error, ValueError)
    assert context.tool == "t"
    assert context.call == ToolCall(name="t", id="c1")
    assert context.error_id == result.error_id
    assert context.model_message is None


def test_callable_returning_none_declines() -> None:
    result = _dispatch("unmarked", lambda error, context: None)
    assert str_content(result).startswith("The tool 't' failed")


def test_async_handler_works_on_the_async_path() -> None:
    async def handler(error: Exception, context: HandlerContext) -> str:
        await asyncio.sleep(0)
        return "async answer"

    def failing() -> str:
        raise ValueError("x")

    dispatcher = Dispatcher([tool(name="t", on_error=handler)(failing)])
    result = asyncio.run(dispatcher.adispatch(ToolCall(name="t")))
    assert result.content == "async answer"


def test_async_handler_on_the_sync_path_is_a_clear_error_before_the_tool_runs() -> None:
    ran: list[int] = []

    async def handler(error: Exception, context: HandlerContext) -> str:
        return "never"

    def works() -> str:
        ran.append(1)
        return "ok"

    dispatcher = Dispatcher([tool(name="t")(works)], on_error=on(KeyError, handler))
    with pytest.raises(
        TypeError, match=r"handler on\(KeyError, .*handler\) at level 'agent' is async"
    ):
        dispatcher.dispatch(ToolCall(name="t"))
    assert ran == []


def test_handler_answering_a_wrong_type_is_a_clear_error_that_keeps_the_original() -> None:
    with pytest.raises(TypeError, match="answered int") as caught:
        _dispatch("unmarked", lambda error, context: 42)
    assert isinstance(caught.value.__context__, ValueError)


def test_handler_that_raises_keeps_the_original_failure_reachable(
    logs: list[dict[str, Any]],
) -> None:
    def broken(error: Exception, context: HandlerContext) -> str:
        raise LookupError("handler bug")

    with pytest.raises(LookupError, match="handler bug") as caught:
        _dispatch("unmarked", broken)
    assert isinstance(caught.value.__context__, ValueError)
    [event] = [e for e in logs if e["event"] == "handler_raised"]
    assert isinstance(event["exc_info"], ValueError)
    assert event["handler_error"] == "LookupError"


def test_tool_call_failed_is_logged_once_with_its_error_id(logs: list[dict[str, Any]]) -> None:
    with pytest.raises(ToolCallFailed) as caught:
        _dispatch("unmarked", fail)
    events = [e for e in logs if e["event"] == "tool_call_failed"]
    assert len(events) == 1
    assert events[0]["error_id"] == caught.value.error_id
    assert events[0]["log_level"] == "error"
    assert not [e for e in logs if e["event"] == "tool_error_hidden"]


def test_as_handler_rejects_non_handlers_with_the_allowed_forms() -> None:
    with pytest.raises(TypeError, match="fixed message string"):
        as_handler(42)  # type: ignore[arg-type]
    assert isinstance(as_handler("text"), Handler)


def test_generic_unless_visible_needs_a_message() -> None:
    with pytest.raises(TypeError, match="non-blank message"):
        generic_unless_visible("  ")


def test_handler_names_read_like_the_code() -> None:
    assert repr(on(TimeoutError, "Search timed out.") | fail_unless_visible) == (
        "on(TimeoutError, 'Search timed out.') | fail_unless_visible"
    )
    assert ToolPolicy(on_error=send_exception_message).on_error is send_exception_message


def test_the_context_a_handler_gets_is_a_complete_handler_context() -> None:
    seen: list[HandlerContext] = []

    def handler(error: Exception, context: HandlerContext) -> str:
        seen.append(context)
        return "x"

    _dispatch("unmarked", handler)
    [context] = seen
    assert context == HandlerContext(
        call=ToolCall(name="t", id="c1"), tool="t", error_id=context.error_id, level="tool"
    )
    assert context.__dict__.keys() == {f.name for f in attrs.fields(HandlerContext)}
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        context.tool = "u"  # type: ignore[misc]
