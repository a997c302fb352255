"""A model that answers from a script, in a provider's response shape (``toolguard.testing``).

For offline agent-loop tests: :class:`ScriptedModel` stands where the provider's
client would (``model.chat.completions.create(...)``, ``model.messages.create(...)``)
and answers each request with the next scripted response: a dict of the response's
JSON shape, or (``sdk=True``) the provider SDK's own object built from it.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias

from toolguard._values import ToolCall

__all__ = ["ScriptedModel", "anthropic_response", "openai_response"]


# --- a scripted model ---------------------------------------------------------------------

CallLike: TypeAlias = ToolCall | tuple[str, Mapping[str, Any] | str | None]
"""A scripted tool call: a ToolCall, or ``(name, arguments)``."""

Turn: TypeAlias = Sequence[CallLike] | str
"""A scripted turn: the tool calls of one round, or the model's final text."""


def _as_call(call: CallLike) -> ToolCall:
    if isinstance(call, ToolCall):
        return call
    if isinstance(call, tuple) and len(call) == 2 and isinstance(call[0], str):
        return ToolCall(name=call[0], arguments=call[1])
    raise TypeError(f"a scripted tool call is a ToolCall or (name, arguments), got {call!r}")


def _arguments_text(arguments: Mapping[str, Any] | str | None) -> str:
    """OpenAI sends arguments as a JSON string; a string is sent exactly as given."""
    if arguments is None:
        return "{}"
    if isinstance(arguments, str):
        return arguments
    return json.dumps(dict(arguments))


def _arguments_object(arguments: Mapping[str, Any] | str | None) -> Any:
    """Anthropic sends an object; a string that is a JSON object becomes one, any other
    string is passed through (to test malformed input)."""
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            return arguments
        return parsed if isinstance(parsed, dict) else arguments
    return dict(arguments)


def openai_response(
    calls: Sequence[CallLike] = (),
    *,
    content: str | None = None,
    model: str = "scripted-model",
    response_id: str = "chatcmpl-scripted",
    first_call: int = 1,
) -> dict[str, Any]:
    """A Chat Completions response (the dict form of ``ChatCompletion``).

    ``calls`` become ``message.tool_calls`` (ids ``call_1``, ``call_2``…, unless a
    :class:`~toolguard.ToolCall` has its own); ``content`` is the message text.
    Arguments are sent as the JSON string a model sends; a string is sent as given.
    """
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    tool_calls = []
    for number, call in enumerate((_as_call(c) for c in calls), start=first_call):
        tool_calls.append(
            {
                "id": call.id or f"call_{number}",
                "type": "function",
                "function": {"name": call.name, "arguments": _arguments_text(call.arguments)},
            }
        )
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": response_id,
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def anthropic_response(
    calls: Sequence[CallLike] = (),
    *,
    text: str | None = None,
    model: str = "scripted-model",
    response_id: str = "msg_scripted",
    first_call: int = 1,
) -> dict[str, Any]:
    """A Messages API response (the dict form of ``Message``).

    ``text`` is a text block; ``calls`` become ``tool_use`` blocks (ids ``toolu_1``…,
    unless a :class:`~toolguard.ToolCall` has its own) after it.
    """
    content: list[dict[str, Any]] = []
    if text is not None:
        content.append({"type": "text", "text": text})
    uses = 0
    for number, call in enumerate((_as_call(c) for c in calls), start=first_call):
        uses += 1
        content.append(
            {
                "type": "tool_use",
                "id": call.id or f"toolu_{number}",
                "name": call.name,
                "input": _arguments_object(call.arguments),
            }
        )
    return {
        "id": response_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if uses else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }


Provider: TypeAlias = Literal["openai", "anthropic"]


# provider -> (the SDK's module, its response class, the distribution to install)
_SDK: Final = {
    "openai": ("openai.types.chat", "ChatCompletion", "openai"),
    "anthropic": ("anthropic.types", "Message", "anthropic"),
}


def _sdk_class(provider: Provider) -> Any:
    """The provider SDK's response class (``ChatCompletion``, ``Message``), or a
    ``ValueError`` saying what to install."""
    module, name, distribution = _SDK[provider]
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError:
        raise ValueError(
            f"ScriptedModel(provider={provider!r}, sdk=True) answers with the {provider} "
            f"SDK's {name} objects, and the SDK is not installed: pip install {distribution} "
            "(or leave sdk=False: the responses are then dicts of the same shape)"
        ) from None


class _Endpoint:
    """``.create(**request)``, as on an SDK client's resource."""

    def __init__(self, model: ScriptedModel) -> None:
        self._model = model

    def create(self, **request: Any) -> Any:
        return self._model.create(**request)


class _Chat:
    def __init__(self, model: ScriptedModel) -> None:
        self.completions = _Endpoint(model)


class ScriptedModel:
    """A model that answers from a script, for offline agent-loop tests.

    Each turn is either the tool calls of one round (a list of
    :class:`~toolguard.ToolCall` or ``(name, arguments)``) or a string, the final
    answer. Each :meth:`create` returns the next turn in the provider's response
    shape (``"openai"``: Chat Completions; ``"anthropic"``: Messages API), and keeps
    the request it was given in :attr:`requests`. Call ids are unique across the
    script (``call_1``… / ``toolu_1``…).

    Responses are **dicts** of the response's JSON shape (``response["choices"][0]``),
    needing no SDK; with ``sdk=True`` they are the SDK's own objects
    (``openai.types.chat.ChatCompletion``, ``anthropic.types.Message``:
    ``response.choices[0]``), as the real client returns, which needs that SDK
    installed (refused at construction otherwise). It stands in for a client too:
    ``model.chat.completions.create(...)`` and ``model.messages.create(...)``::

        model = ScriptedModel([[("lookup", {"order": 42})], "Your order has shipped."])
        reply = model.create(messages=history, tools=tools)   # the tool call
        ...
        reply = model.create(messages=history, tools=tools)   # the final text
        model.assert_finished()
    """

    def __init__(
        self,
        turns: Iterable[Turn],
        *,
        provider: Provider = "openai",
        model: str = "scripted-model",
        sdk: bool = False,
    ) -> None:
        if provider not in ("openai", "anthropic"):
            raise ValueError(f"provider={provider!r}: use 'openai' or 'anthropic'")
        self._sdk = _sdk_class(provider) if sdk else None
        self.provider: Provider = provider
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self._turns: list[Turn] = list(turns)
        for turn in self._turns:
            if not isinstance(turn, str):
                for call in turn:
                    _as_call(call)  # fail at construction, not mid-test
        self._next = 0
        self._calls = 0
        self.chat = _Chat(self)
        self.messages = _Endpoint(self)

    @property
    def remaining(self) -> int:
        """How many scripted turns are left."""
        return len(self._turns) - self._next

    def create(self, **request: Any) -> Any:
        """The next scripted response (a dict, or with ``sdk=True`` the SDK's object);
        the request is kept in :attr:`requests`."""
        if self._next >= len(self._turns):
            raise AssertionError(
                f"the scripted model was asked for turn {self._next + 1}, but its script "
                f"has {len(self._turns)}: the agent loop did not stop when expected"
            )
        self.requests.append(request)
        turn = self._turns[self._next]
        self._next += 1
        number = self._next
        if isinstance(turn, str):
            calls: Sequence[CallLike] = ()
            text: str | None = turn
        else:
            calls, text = turn, None
        first = self._calls + 1
        self._calls += len(calls)
        if self.provider == "openai":
            response = openai_response(
                calls,
                content=text,
                model=self.model,
                response_id=f"chatcmpl-scripted-{number}",
                first_call=first,
            )
        else:
            response = anthropic_response(
                calls,
                text=text,
                model=self.model,
                response_id=f"msg_scripted_{number}",
                first_call=first,
            )
        return response if self._sdk is None else self._sdk.model_validate(response)

    __call__ = create

    def assert_finished(self) -> None:
        """Assert every scripted turn was used."""
        if self.remaining:
            raise AssertionError(
                f"the scripted model still has {self.remaining} of {len(self._turns)} "
                "turns: the agent loop stopped early"
            )
