"""The tools and scripted model turns shared by the provider format tests."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import attrs

from toolguard import Dispatcher, Injected, InjectedCallId, Output, Round, tool

SECRET = "payments-db password=hunter2 at 10.0.0.7"
"""The hidden cause's text: it must never reach a produced byte."""

ARTIFACT = "artifact-for-the-application-only"
"""Data for the application: it must never reach a produced byte either."""

SPOOF = "'user': set by the application; it cannot be sent"
"""What the model is told when it tries to set an injected argument."""


@attrs.frozen
class User:
    id: str


ALICE = User(id="u-7")


@tool
def get_current_weather(
    location: Annotated[str, "The city and state, e.g. San Francisco, CA"],
    unit: Literal["celsius", "fahrenheit"] = "fahrenheit",
) -> str:
    """Get the current weather in a given location."""
    return f"22 degrees {unit} in {location}"


@tool
def order_status(
    order_id: int,
    user: Annotated[User, Injected],
    call_id: Annotated[str, InjectedCallId],
) -> Output:
    """Look up one of the user's orders.

    Args:
        order_id: The order number, as printed on the receipt.
        user: The signed-in user (set by the application).
        call_id: The id of this call (set by the application).
    """
    return Output(
        content={"order_id": order_id, "status": "shipped", "owner": user.id},
        artifact=f"{ARTIFACT}:{call_id}",
    )


@tool
def refund(order_id: int, reason: str = "") -> str:
    """Refund an order.

    Args:
        order_id: The order to refund.
        reason: Why, in a few words.
    """
    raise ConnectionError(f"cannot reach {SECRET}")


def shop() -> Dispatcher:
    """The round-trip agent: one tool that succeeds, one whose cause is hidden."""
    return Dispatcher([order_status, refund])


ORDER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "order_id": {
            "type": "integer",
            "description": "The order number, as printed on the receipt.",
        }
    },
    "required": ["order_id"],
    "additionalProperties": False,
}
"""order_status's arguments as every provider sees them: no injected argument."""

ORDER_CONTENT = '{"order_id":42,"status":"shipped","owner":"u-7"}'


def check_round(round_: Round) -> None:
    """The round the scripted turn produces: success first, hidden failure second."""
    ok, failed = round_.results
    assert (ok.is_error, ok.content) == (False, ORDER_CONTENT)
    assert ok.artifact == f"{ARTIFACT}:{ok.call_id}"
    assert failed.is_error and failed.error_id is not None
    assert isinstance(failed.content, str) and failed.error_id in failed.content
    assert SECRET not in failed.content


def assert_nothing_leaks(*produced: Any) -> None:
    """The hidden cause and the artifact are absent from every produced byte."""
    text = json.dumps(list(produced), default=lambda raw: raw.decode("utf-8", "replace"))
    for needle in (SECRET, "hunter2", ARTIFACT, "ConnectionError"):
        assert needle not in text
