"""What the public entry points say when given the wrong kind of thing.

Each answer names what was given and the line to write instead: ``Dispatcher(add)``
(one tool, not a list), ``agent.run(call)`` (one call, not a round), ``dispatch()``
of a provider's own tool call (an OpenAI SDK object, a dict) where a
:class:`~toolguard.ToolCall` belongs. The checks run only where the common case
costs one type comparison; the messages are built only on the way out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from toolguard._values import ToolCall
from toolguard.errors import InvalidOption

__all__ = ["check_calls", "check_tools", "not_a_call", "not_an_error"]

_TOOLCALL = "ToolCall(name=..., arguments=..., id=...)"


def _what(value: object) -> str:
    kind = type(value)
    if kind.__module__ == "builtins":
        return kind.__name__
    return f"{kind.__module__}.{kind.__qualname__}"


def check_tools(tools: object, dispatcher: type) -> None:
    """Refuse a ``Dispatcher(tools)`` argument that is not a collection of tools
    (:class:`~toolguard.InvalidOption`, a ``TypeError``); ``dispatcher`` is the class."""
    if isinstance(tools, list | tuple | set | frozenset):
        return
    said = "Dispatcher() takes a list of tools"
    if isinstance(tools, dispatcher):
        raise InvalidOption(
            f"{said}, got a Dispatcher: its tools are Dispatcher(list(agent.tools.values()), "
            "...); to change only its policy, agent.with_policy(load_policy(...))"
        )
    if callable(tools) and not isinstance(tools, type):
        named = getattr(tools, "__name__", None)
        write = f"Dispatcher([{named}])" if isinstance(named, str) else "Dispatcher([tool])"
        raise InvalidOption(f"{said}, got one tool: write {write}")
    if tools is None:
        raise InvalidOption(
            f"{said}, got None; an agent whose tools all run elsewhere is "
            "Dispatcher([], external_tools=[...])"
        )
    if isinstance(tools, str | bytes):
        raise InvalidOption(
            f"{said}, got a {_what(tools)} ({tools[:40]!r}): pass the tool objects, "
            "Dispatcher([search, lookup])"
        )
    if isinstance(tools, Mapping):
        raise InvalidOption(
            f"{said}, got a mapping: pass its values, Dispatcher(list(tools.values())) "
            "(a tool's name is its own: @tool(name=...))"
        )
    if not isinstance(tools, Iterable):
        raise InvalidOption(f"{said}, got {_what(tools)}")


def not_a_call(value: object, method: str | None) -> TypeError:
    """What ``method`` (``dispatch``, ``adispatch``; ``None``: any method of a tool
    that runs elsewhere) says about a ``value`` that is not a
    :class:`~toolguard.ToolCall`: the provider's own shapes are named, with the line
    that turns them into one."""
    if method is None:
        return TypeError(f"the call must be a toolguard.ToolCall; {_advice(value, '')}")
    return TypeError(f"{method}() takes one toolguard.ToolCall; {_advice(value, method)}")


def not_an_error(value: object) -> TypeError:
    """What ``handle_error`` (a scope's ``failed``...) says about an ``error`` that is
    not an exception (a message, an error result)."""
    return TypeError(
        "the error must be the exception the tool raised (a BaseException), got "
        f"{_what(value)}; a message of your own for the model is ToolError(message)"
    )


def _advice(value: object, method: str) -> str:
    if isinstance(value, list | tuple) and method.endswith("dispatch"):
        rounds = "arun" if method.startswith("a") else "run"
        return f"got a {type(value).__name__} of calls: a round is {rounds}(calls)"
    if isinstance(value, Mapping):
        return _advice_for_dict(value)
    for describe in _SHAPES:
        said = describe(value)
        if said is not None:
            return said
    return f"got {_what(value)}: build one as {_TOOLCALL}"


def _advice_for_dict(value: Mapping[Any, Any]) -> str:
    if isinstance(value.get("function"), Mapping):
        return (
            "got an OpenAI tool call (a dict): toolguard.formats.openai.parse_calls(response) "
            "reads every call of a response, or ToolCall(name=c['function']['name'], "
            "arguments=c['function']['arguments'], id=c['id'])"
        )
    if value.get("type") == "tool_use":
        return (
            "got an Anthropic tool_use block (a dict): toolguard.formats.anthropic."
            "parse_calls(response) reads every call of a response, or "
            "ToolCall(name=b['name'], arguments=b['input'], id=b['id'])"
        )
    if value.get("type") == "function_call":
        return (
            "got an OpenAI Responses function call (a dict): toolguard.formats.openai."
            "parse_response_calls(response), or ToolCall(name=c['name'], "
            "arguments=c['arguments'], id=c['call_id'])"
        )
    if "name" in value:
        return f"got a dict: a call is {_TOOLCALL} (ToolCall(**call) when it has just those keys)"
    return f"got a dict: build one as {_TOOLCALL}"


def _openai(value: object) -> str | None:
    function = getattr(value, "function", None)
    if hasattr(function, "name") and hasattr(function, "arguments"):
        return (
            f"got the OpenAI SDK's {type(value).__name__}: toolguard.formats.openai."
            "parse_calls(response) reads every call of a response, or "
            "ToolCall(name=call.function.name, arguments=call.function.arguments, id=call.id)"
        )
    return None


def _responses(value: object) -> str | None:
    if getattr(value, "type", None) == "function_call" and hasattr(value, "call_id"):
        return (
            f"got the OpenAI SDK's {type(value).__name__}: toolguard.formats.openai."
            "parse_response_calls(response), or ToolCall(name=item.name, "
            "arguments=item.arguments, id=item.call_id)"
        )
    return None


def _anthropic(value: object) -> str | None:
    if getattr(value, "type", None) == "tool_use" and hasattr(value, "input"):
        return (
            f"got the Anthropic SDK's {type(value).__name__}: toolguard.formats.anthropic."
            "parse_calls(response) reads every call of a response, or "
            "ToolCall(name=block.name, arguments=block.input, id=block.id)"
        )
    return None


def _gemini(value: object) -> str | None:
    if hasattr(value, "name") and hasattr(value, "args") and not hasattr(value, "arguments"):
        return (
            f"got {_what(value)} (Gemini's function call?): toolguard.formats.gemini."
            "parse_calls(response), or ToolCall(name=call.name, arguments=call.args, "
            "id=call.id)"
        )
    return None


_SHAPES: tuple[Callable[[object], str | None], ...] = (_openai, _responses, _anthropic, _gemini)


def check_calls(calls: object, method: str) -> list[ToolCall]:
    """The calls of a round (``run``, ``arun``) as a list, each a :class:`ToolCall`."""
    if isinstance(calls, ToolCall):
        single = "adispatch" if method.startswith("a") else "dispatch"
        raise TypeError(
            f"{method}() takes the round's calls, a list of ToolCall, got one ToolCall: "
            f"{method}([call]), or {single}(call) for its result alone"
        )
    if isinstance(calls, str | bytes | Mapping) or not isinstance(calls, Iterable):
        raise TypeError(f"{method}() takes a list of ToolCall, got {_what(calls)}")
    listed = list(calls)
    for position, call in enumerate(listed):
        if type(call) is not ToolCall and not isinstance(call, ToolCall):
            raise TypeError(
                f"{method}() takes a list of toolguard.ToolCall; its item {position} is "
                f"not one: {_advice(call, method)}"
            )
    return listed
