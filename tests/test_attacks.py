"""The holes an adversarial review found in the core (issue 12), each pinned.

Every test here failed on the tree before the fix it pins: a leak (the model sees
what it must not), a lost answer or crash, or a call that wedges. The integrations'
own holes are pinned in ``tests/integrations``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import random
import threading
import time
from typing import Annotated, Any

import attrs
import pydantic
import pytest
from pydantic_core import PydanticCustomError

from tests._content import str_content
from tests._stuck import STUCK, Stuck
from toolguard import (
    Breaker,
    ControlFlow,
    Dispatcher,
    Image,
    RetryWithFeedback,
    Text,
    ToolCall,
    ToolCallFailed,
    ToolError,
    ToolPolicy,
    ToolResult,
    register_control_flow,
    tool,
)
from toolguard.handlers import fail

SECRET = "sk-attack-5c1f0e9a"


def everything_sent(result: ToolResult) -> str:
    """Every field of a result as text: what a format could send anywhere."""
    return json.dumps(attrs.asdict(result), default=repr)


def hidden_events(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for event in logs if event["event"] == "tool_error_hidden"]


def chain_text(error: BaseException) -> str:
    """An exception and its causes, as a log renderer would show them."""
    parts = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append(f"{type(current).__name__}: {current}")
        current = current.__cause__ or current.__context__
    return "\n".join(parts)


# --- leaks: validator text ------------------------------------------------------------


class Order(pydantic.BaseModel):
    sku: str

    @pydantic.field_validator("sku")
    @classmethod
    def known_sku(cls, value: str) -> str:
        if value.startswith("x"):
            raise ValueError(f"sku lookup failed: db password is {SECRET}")
        if value.startswith("y"):
            raise PydanticCustomError("unknown_sku", "There is no SKU {sku}.", {"sku": value})
        if value.startswith("z"):
            raise Visible(f"SKU {value} is discontinued; offer SKU a-1 instead.")
        if value.startswith("big"):
            raise ValueError(SECRET + "!" * 1_000_000)
        return value

    @pydantic.model_validator(mode="after")
    def not_forbidden(self) -> Order:
        assert self.sku != "forbidden", f"internal rule 7 ({SECRET})"
        return self


class Visible(ValueError):
    def message_for_model(self) -> str:
        return str(self)


@dataclasses.dataclass
class Shipment:
    city: str

    def __post_init__(self) -> None:
        if self.city == "nowhere":
            raise ValueError(f"geocoder token {SECRET} rejected")


@attrs.define
class Priority:
    level: str = attrs.field(validator=attrs.validators.in_(["low", "high"]))


@tool
def place(order: Order) -> str:
    """Place an order."""
    return order.sku


@tool
def ship(shipment: Shipment) -> str:
    """Ship."""
    return shipment.city


@tool
def escalate(priority: Priority) -> str:
    """Escalate."""
    return priority.level


def _call(name: str, arguments: Any) -> ToolResult:
    return Dispatcher([place, ship, escalate]).dispatch(
        ToolCall(name=name, arguments=arguments, id="c1")
    )


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("place", {"order": {"sku": "x1"}}),  # field_validator, ValueError
        ("place", {"order": {"sku": "forbidden"}}),  # model_validator, AssertionError
        ("ship", {"shipment": {"city": "nowhere"}}),  # dataclass __post_init__
    ],
)
def test_a_custom_validators_text_is_hidden_and_logged_once(
    name: str, arguments: dict[str, Any], logs: list[dict[str, Any]]
) -> None:
    result = _call(name, arguments)
    assert result.is_error and result.error_kind == "arguments"
    assert SECRET not in everything_sent(result)
    assert "rejected" in str_content(result)
    assert result.error_id is not None
    [event] = hidden_events(logs)
    assert event["error_id"] == result.error_id
    assert SECRET in chain_text(event["exc_info"])


def test_an_attrs_validators_text_is_hidden_too(logs: list[dict[str, Any]]) -> None:
    result = _call("escalate", {"priority": {"level": "urgent"}})
    assert result.is_error and result.error_kind == "arguments"
    assert "must be in" not in str_content(result)  # attrs' own wording, hidden
    assert "priority.level" in str_content(result) or "priority" in str_content(result)
    assert len(hidden_events(logs)) == 1


def test_a_model_visible_validator_error_and_a_pydantic_custom_error_are_sent() -> None:
    visible = str_content(_call("place", {"order": {"sku": "z9"}}))
    assert "SKU z9 is discontinued; offer SKU a-1 instead." in visible
    custom = str_content(_call("place", {"order": {"sku": "y7"}}))
    assert "There is no SKU y7" in custom


def test_every_validation_message_is_bounded(logs: list[dict[str, Any]]) -> None:
    result = _call("place", {"order": {"sku": "big"}})
    assert len(str_content(result)) < 2_000
    assert SECRET not in everything_sent(result)

    @tool
    def pick(choice: Annotated[str, pydantic.Field(pattern="^" + "a" * 50_000 + "$")]) -> str:
        """Pick."""
        return choice

    long_rule = Dispatcher([pick]).dispatch(ToolCall(name="pick", arguments={"choice": "b"}))
    assert len(str_content(long_rule)) < 2_000


def test_pydantics_own_descriptions_of_the_models_mistake_stay_visible(
    logs: list[dict[str, Any]],
) -> None:
    result = _call("place", {"order": {"sku": 12}})
    assert "order.sku" in str_content(result) and "string" in str_content(result)
    assert result.error_id is None and not hidden_events(logs)


# --- leaks: model-supplied names --------------------------------------------------------

HOSTILE_NAMES = [
    "x" * 1_000_000,
    "evil\nname\x1b[31mred",
    "\x1b]0;title\x07" + "y" * 70,
]


def _raw_and_bounded(result: ToolResult) -> tuple[bool, int]:
    """Whether a result carries a control character anywhere, and its size as sent."""
    texts = [result.text, result.name, str(result.call_id)]
    return any(ch in text for text in texts for ch in "\x1b\x07\n"), len(everything_sent(result))


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=["huge", "newline-ansi", "osc"])
def test_a_hostile_tool_name_is_never_echoed_raw_or_unbounded(
    name: str, logs: list[dict[str, Any]]
) -> None:
    @tool
    def lookup(key: str) -> str:
        """Look up."""
        return key

    for agent in (
        Dispatcher([lookup]),
        Dispatcher([lookup], on_invalid_call="The tool {tool} does not exist ({error_id})."),
    ):
        raw, size = _raw_and_bounded(agent.dispatch(ToolCall(name=name, arguments={}, id="c1")))
        assert not raw
        assert size < 5_000
    failing = Dispatcher([lookup], on_invalid_call=fail)  # an unknown tool: on_invalid_call's
    with pytest.raises(ToolCallFailed) as raised:
        failing.run([ToolCall(name=name, arguments={}, id="c1")])
    round_ = raised.value.round
    assert round_ is not None
    raw, size = _raw_and_bounded(round_.results[0])
    assert not raw
    assert size < 5_000
    fields = [str(value) for event in logs for key, value in event.items() if key != "exc_info"]
    assert not any(ch in text for text in fields for ch in "\x1b\x07")
    assert max(map(len, fields)) < 10_000


# --- leaks: redaction ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    ["X-Api-Key", "api-key", "privateKey", "private-key", "client_secret", "Set-Cookie",
     "Proxy-Authorization", "API_KEY", "x_auth_token"],
)  # fmt: skip
def test_secret_looking_keys_are_redacted_whatever_their_case_and_separators(
    key: str, logs: list[dict[str, Any]]
) -> None:
    @tool
    def call_api(**headers: str) -> str:
        """Call the API."""
        raise RuntimeError("upstream down")

    Dispatcher([call_api]).dispatch(ToolCall(name="call_api", arguments={key: SECRET}))
    [event] = hidden_events(logs)
    assert SECRET not in json.dumps(event["arguments"])


# --- leaks: max_result_chars bounds the whole content -------------------------------------


def test_max_result_chars_bounds_the_whole_content_not_each_block() -> None:
    @tool(max_result_chars=1_000)
    def many() -> list[Text]:
        """Many blocks."""
        return [Text(text="t" * 90) for _ in range(200)]

    @tool(max_result_chars=1_000)
    def picture() -> list[Text | Image]:
        """A huge picture."""
        return [Text(text="here"), Image(data="A" * 1_000_000, media_type="image/png")]

    agent = Dispatcher([many, picture])
    for name in ("many", "picture"):
        result = agent.dispatch(ToolCall(name=name))
        assert not result.is_error
        blocks = result.content
        assert isinstance(blocks, tuple)
        sent = sum(len(b.text) if isinstance(b, Text) else len(b.data) for b in blocks)
        assert sent <= 1_000 + 200  # the limit, and the note saying what was cut
        assert "truncated" in result.text or "omitted" in result.text


# --- lost answers: hostile exceptions, malformed calls, groups --------------------------------


class ApiError(Exception):
    """An API client's error: attribute access goes to a dict, and raises KeyError."""

    def __init__(self, payload: dict[str, Any]) -> None:
        super().__init__("api error")
        self._payload = payload

    def __getattr__(self, name: str) -> Any:
        return self.__dict__["_payload"][name]


def test_an_exception_whose_getattr_raises_is_answered_and_logged(
    logs: list[dict[str, Any]],
) -> None:
    @tool
    def api() -> str:
        """Call the API."""
        raise ApiError({"status": 500})

    @tool
    def fine() -> str:
        """Fine."""
        return "ok"

    agent = Dispatcher([api, fine])
    assert agent.dispatch(ToolCall(name="api")).is_error
    round_ = agent.run([ToolCall(name="api", id="a"), ToolCall(name="fine", id="b")])
    assert [r.is_error for r in round_.results] == [True, False]
    assert agent.handle_error(ToolCall(name="api"), ApiError({})).is_error
    assert len(hidden_events(logs)) == 3


def test_a_control_flow_check_that_trips_over_a_hostile_exception_does_not_crash(
    logs: list[dict[str, Any]],
) -> None:
    """Frameworks register per-instance checks (LangGraph reads an attribute of the
    error); on an exception whose ``__getattr__`` raises, the check must not crash."""
    register_control_flow(check=lambda error: error.marker is True)  # type: ignore[attr-defined]

    @tool
    def api() -> str:
        """Call the API."""
        raise ApiError({})

    assert Dispatcher([api]).dispatch(ToolCall(name="api")).is_error
    assert len(hidden_events(logs)) == 1


@pytest.mark.parametrize("name", [42, None, ["lookup"], {"a": 1}, 3.5])
async def test_a_call_whose_name_is_not_a_string_gets_an_error_result(name: Any) -> None:
    @tool
    def lookup() -> str:
        """Look up."""
        return "found"

    agent = Dispatcher([lookup])
    bad = ToolCall(name=name, id="bad")
    assert agent.dispatch(bad).is_error
    assert (await agent.adispatch(bad)).is_error
    for round_ in (
        agent.run([bad, ToolCall(name="lookup", id="ok")]),
        await agent.arun([bad, ToolCall(name="lookup", id="ok")]),
    ):
        assert [r.is_error for r in round_.results] == [True, False]
        assert round_.results[1].content == "found"


class Handoff(ControlFlow):
    pass


class FrameworkSignal(Exception):
    pass


register_control_flow(FrameworkSignal)


@pytest.mark.parametrize("signal", [Handoff, FrameworkSignal])
async def test_control_flow_inside_an_exception_group_is_control_flow(
    signal: type[Exception],
) -> None:
    @tool
    async def fan_out() -> str:
        """Fan out."""
        async with asyncio.TaskGroup() as group:
            group.create_task(asyncio.sleep(0))

            async def hand_off() -> None:
                raise signal("to the billing agent")

            group.create_task(hand_off())
        return "unreachable"

    agent = Dispatcher([fan_out])
    with pytest.raises(ExceptionGroup) as raised:
        await agent.adispatch(ToolCall(name="fan_out"))
    assert raised.group_contains(signal)


async def test_secrets_inside_a_group_stay_hidden(logs: list[dict[str, Any]]) -> None:
    @tool
    async def fan_out() -> str:
        """Fan out."""
        raise ExceptionGroup("several", [ValueError(SECRET), ToolError("visible part")])

    result = await Dispatcher([fan_out]).adispatch(ToolCall(name="fan_out"))
    assert result.is_error and SECRET not in everything_sent(result)
    assert len(hidden_events(logs)) == 1


def test_a_group_holding_keyboard_interrupt_stops_a_sync_round_at_once() -> None:
    """The group propagates while the sibling is still stuck, not after it ends."""
    stuck = Stuck()

    @tool
    def interrupted() -> str:
        """Interrupted."""
        raise BaseExceptionGroup("stop", [KeyboardInterrupt()])

    @tool
    def slow() -> str:
        """Slow."""
        stuck.wait()
        return "late"

    agent = Dispatcher([interrupted, slow])
    try:
        with pytest.raises(BaseExceptionGroup):
            agent.run([ToolCall(name="slow", id="s"), ToolCall(name="interrupted", id="i")])
        assert not stuck.finished.is_set()
    finally:
        stuck.release.set()
        agent.close(wait=False)


def _nested_group(depth: int, leaf: BaseException) -> BaseException:
    error = leaf
    for level in range(depth):
        error = BaseExceptionGroup(f"level {level}", [error])
    return error


@pytest.mark.parametrize("depth", [1_000, 5_000])
async def test_a_deeply_nested_exception_group_is_answered_on_every_path(
    depth: int, logs: list[dict[str, Any]]
) -> None:
    """A recursive TaskGroup nests its groups as deep as it recursed: looking for control
    flow or an interrupt inside must not recurse (it raised RecursionError out of the
    call, and the round lost its other results)."""

    @tool
    def deep() -> str:
        """Fails with a deep group."""
        raise _nested_group(depth, ValueError(SECRET))

    @tool
    def fine() -> str:
        """Works."""
        return "fine"

    with Dispatcher([deep, fine]) as agent:
        single = agent.dispatch(ToolCall(name="deep"))
        calls = [ToolCall(name="deep", id="d"), ToolCall(name="fine", id="f")]
        round_ = agent.run(calls)
        async_round = await agent.arun(calls)
    assert single.is_error and single.error_kind == "hidden"
    for answered in (round_, async_round):
        assert [r.content for r in answered.results][1] == "fine"
        assert answered.results[0].is_error
        assert SECRET not in everything_sent(answered.results[0])
    assert len(hidden_events(logs)) == 3


async def test_control_flow_deep_inside_a_group_is_still_control_flow() -> None:
    @tool
    def deep() -> str:
        """Hands off from deep inside."""
        raise _nested_group(2_000, Handoff("to billing"))

    with pytest.raises(BaseExceptionGroup):
        Dispatcher([deep]).dispatch(ToolCall(name="deep"))
    with pytest.raises(BaseExceptionGroup):
        await Dispatcher([deep]).arun([ToolCall(name="deep")])


# --- wedges: timeouts ---------------------------------------------------------------------------


def test_abandoned_threads_of_one_slow_tool_do_not_starve_the_others(
    logs: list[dict[str, Any]],
) -> None:
    """Past its bound of abandoned attempts, the stuck tool is refused at once, without
    running: given a 30 s limit, the refusal comes long before it, and no attempt is left
    behind; other tools still run."""
    wedge = Stuck()
    runs: list[int] = []

    @tool(timeout=0.05)
    def stuck() -> str:
        """Stuck."""
        runs.append(1)
        wedge.wait()
        return "late"

    @tool(timeout=STUCK)
    def quick() -> str:
        """Quick, with a timeout too."""
        return "quick"

    def abandoned() -> int:
        return sum(event["event"] == "tool_abandoned" for event in logs)

    agent = Dispatcher([stuck, quick], max_workers=2)
    try:
        for _ in range(6):
            assert agent.dispatch(ToolCall(name="stuck")).error_kind in ("timeout", "unavailable")
        assert agent.dispatch(ToolCall(name="quick")).content == "quick"
        assert abandoned() == agent.max_abandoned  # each waited out its limit, then left
        started = time.monotonic()
        answer = agent.dispatch(ToolCall(name="stuck"), policy=ToolPolicy(timeout=STUCK))
        assert answer.error_kind == "unavailable"
        assert time.monotonic() - started < STUCK / 2  # at once, not at its deadline
        assert abandoned() == agent.max_abandoned  # nothing left running
        assert len(runs) <= agent.max_abandoned  # never started
    finally:
        wedge.release.set()
        agent.close(wait=False)


async def test_untimed_offloaded_calls_are_answered_after_timed_ones_overran() -> None:
    """The overrun attempts hold threads of their own, not the pool's two: a plain call
    runs while all of them are still stuck."""
    wedge = Stuck()

    @tool(timeout=0.05)
    def stuck() -> str:
        """Stuck."""
        wedge.wait()
        return "late"

    @tool
    def plain() -> str:
        """Plain."""
        return "plain"

    agent = Dispatcher([stuck, plain], max_workers=2)
    try:
        for _ in range(4):
            await agent.adispatch(ToolCall(name="stuck"), offload=True)
        result = await agent.adispatch(ToolCall(name="plain"), offload=True)
        assert result.content == "plain"
        assert not wedge.finished.is_set()
    finally:
        wedge.release.set()
        agent.close(wait=False)


async def test_an_async_tool_that_swallows_cancellation_is_answered_at_its_deadline(
    logs: list[dict[str, Any]],
) -> None:
    """Answered "timeout" while the tool still runs (it ends only when released, after the
    assertions, or after 30 s), not once it ends."""
    release = threading.Event()
    ended: list[bool] = []

    @tool(timeout=0.2)
    async def stubborn() -> str:
        """Stubborn."""
        for _ in range(int(STUCK / 0.01)):
            if release.is_set():
                break
            with contextlib.suppress(BaseException):  # the careless retry loop under test
                await asyncio.sleep(0.01)
        ended.append(True)
        return "late"

    try:
        result = await Dispatcher([stubborn]).adispatch(ToolCall(name="stubborn"))
        assert result.error_kind == "timeout"
        assert ended == []
        assert any(event["event"] == "tool_abandoned" for event in logs)
    finally:
        release.set()


# --- wedges: breakers and budgets -------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("ending", ["control_flow", "cancelled"])
async def test_a_half_open_trial_that_never_finishes_expires(ending: str) -> None:
    state = {"mode": "fail"}

    @tool(breaker=Breaker(failures=1, cooldown=10))
    async def flaky() -> str:
        """Flaky."""
        if state["mode"] == "fail":
            raise ConnectionError("down")
        if state["mode"] == "control_flow":
            raise Handoff("elsewhere")
        if state["mode"] == "hang":
            await asyncio.sleep(10)
        return "up"

    clock = Clock()
    session = Dispatcher([flaky]).session(clock=clock)
    call = ToolCall(name="flaky")
    assert (await session.adispatch(call)).is_error  # opens
    clock.now = 11  # half-open: the next call is the trial
    if ending == "control_flow":
        state["mode"] = "control_flow"
        with pytest.raises(Handoff):
            await session.adispatch(call)
    else:
        state["mode"] = "hang"
        task = asyncio.ensure_future(session.adispatch(call))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    state["mode"] = "ok"
    assert (await session.adispatch(call)).error_kind == "unavailable"  # the trial's lease
    clock.now = 22  # the lease (one cool-down) is over: another trial
    assert (await session.adispatch(call)).content == "up"


async def test_interleaved_steps_count_the_model_retry_budget_exactly() -> None:
    gate = asyncio.Event()
    jitter = random.Random(3)

    @tool(max_model_retries=500)
    async def search(query: str) -> str:
        """Search."""
        if query == "wait":
            await gate.wait()
        elif query == "jitter":
            await asyncio.sleep(jitter.random() / 1000)
        raise RetryWithFeedback("Use quotes around phrases.")

    def calls(*queries: str) -> list[ToolCall]:
        return [
            ToolCall(name="search", arguments={"query": q}, id=str(i))
            for i, q in enumerate(queries)
        ]

    session = Dispatcher([search]).session()
    first = asyncio.ensure_future(session.arun(calls("now", "wait")))
    await asyncio.sleep(0.01)  # the first step's first call has counted
    await session.arun(calls("now"))  # a second step, between its two calls
    gate.set()
    await first
    assert session.state("search").model_retries == 2

    session = Dispatcher([search]).session()
    await asyncio.gather(*(session.arun(calls("jitter", "jitter", "jitter")) for _ in range(300)))
    assert session.state("search").model_retries == 300


def test_a_failures_model_visible_marker_is_read_once_in_a_session(
    logs: list[dict[str, Any]],
) -> None:
    reads = []

    class Blank(Exception):
        def message_for_model(self) -> str:
            reads.append(1)
            return " "

    @tool(breaker=Breaker(failures=3))
    def odd() -> str:
        """Odd."""
        raise Blank("x")

    Dispatcher([odd]).session().dispatch(ToolCall(name="odd"))
    assert len(reads) == 1
    assert [e["event"] for e in logs].count("blank_model_message") == 1


# --- error ids and blank messages ----------------------------------------------------


def _error_id() -> str:
    @tool
    def boom() -> str:
        """Boom."""
        raise RuntimeError("x")

    error_id = Dispatcher([boom]).dispatch(ToolCall(name="boom")).error_id
    assert error_id is not None
    return error_id


def test_error_ids_do_not_come_from_the_applications_global_random() -> None:
    random.seed(7)
    first = _error_id()
    random.seed(7)
    assert _error_id() != first
    random.seed(11)
    expected = random.random()
    random.seed(11)
    _error_id()
    assert random.random() == expected  # toolguard did not draw from the global stream


@pytest.mark.parametrize("message", ["", "   ", "\n\t"])
def test_a_blank_tool_error_is_refused_at_construction(message: str) -> None:
    with pytest.raises(ValueError, match="blank"):
        ToolError(message)


def test_the_abandoned_bound_is_a_setting_of_code_files_and_explain(tmp_path: Any) -> None:
    from toolguard import Setting, load_policy

    release = threading.Event()

    @tool(timeout=0.02)
    def stuck() -> str:
        """Stuck."""
        release.wait(10)
        return "late"

    agent = Dispatcher([stuck], max_abandoned=1)
    try:
        assert agent.explain("stuck")["max_abandoned"] == Setting(1, "agent")
        assert agent.dispatch(ToolCall(name="stuck")).error_kind == "timeout"
        assert agent.dispatch(ToolCall(name="stuck")).error_kind == "unavailable"
    finally:
        release.set()
        agent.close(wait=False)
    assert Dispatcher([stuck]).explain("stuck")["max_abandoned"] == Setting(4, "builtin")
    file = tmp_path / "agent.toml"
    file.write_text("version = 1\n[agent]\nmax_abandoned = 2\n")
    from_file = Dispatcher([stuck], policy=load_policy(file))
    assert from_file.max_abandoned == 2
    assert from_file.explain("stuck")["max_abandoned"].value == 2  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="max_abandoned=0"):
        Dispatcher([stuck], max_abandoned=0)


def test_an_exception_no_renderer_can_render_is_still_answered_and_its_event_logged(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    """Python 3.11's ``traceback`` itself breaks on an exception whose ``__getattr__``
    raises; a real pipeline (format_exc_info, JSON) fails on it, and so does the
    standard library's. The call is answered; the event is logged without the
    traceback, with its error id."""
    import io

    import structlog

    out = io.StringIO()
    structlog.configure(
        processors=[structlog.processors.format_exc_info, structlog.processors.JSONRenderer()],
        logger_factory=structlog.PrintLoggerFactory(out),
    )

    @tool
    def api() -> str:
        """Call the API."""
        raise ApiError({})

    with caplog.at_level("WARNING", logger="toolguard"):
        result = Dispatcher([api]).dispatch(ToolCall(name="api"))
    assert result.is_error and result.error_id is not None
    [record] = [r for r in caplog.records if "could not be rendered" in r.getMessage()]
    assert "tool_error_hidden" in record.getMessage() and "ApiError" in record.getMessage()
    assert result.error_id in record.getMessage()
    capsys.readouterr()  # the standard library's own "--- Logging error ---" on stderr


@pytest.mark.parametrize("name", [42, None, ["lookup"], {"a": 1}])
def test_every_providers_parser_passes_a_malformed_name_on_to_be_answered(name: Any) -> None:
    from toolguard.formats import anthropic, gemini, mcp, openai

    @tool
    def lookup() -> str:
        """Look up."""
        return "found"

    agent = Dispatcher([lookup])
    replies = {
        "openai": (
            openai.parse_calls(
                {"tool_calls": [
                    {"id": str(i), "type": "function", "function": {"name": n, "arguments": "{}"}}
                    for i, n in ((1, name), (2, "lookup"))
                ]}
            ),
            openai.messages,
        ),
        "openai responses": (
            openai.parse_response_calls(
                {"output": [
                    {"type": "function_call", "call_id": "1", "name": name, "arguments": "{}"},
                    {"type": "function_call", "call_id": "2", "name": "lookup", "arguments": "{}"},
                ]}
            ),
            openai.response_items,
        ),
        "anthropic": (
            anthropic.parse_calls(
                {"content": [
                    {"type": "tool_use", "id": "1", "name": name, "input": {}},
                    {"type": "tool_use", "id": "2", "name": "lookup", "input": {}},
                ]}
            ),
            anthropic.tool_results,
        ),
        "gemini": (
            gemini.parse_calls(
                {"candidates": [{"content": {"parts": [
                    {"functionCall": {"id": "1", "name": name, "args": {}}},
                    {"functionCall": {"id": "2", "name": "lookup", "args": {}}},
                ]}}]}
            ),
            gemini.parts,
        ),
        "mcp": (
            [mcp.parse_call({"name": name, "arguments": {}}, call_id="1"),
             mcp.parse_call({"name": "lookup"}, call_id="2")],
            lambda round_: [mcp.call_result(r) for r in round_.results],
        ),
    }  # fmt: skip
    for provider, (calls, reply) in replies.items():
        round_ = agent.run(calls)
        assert [r.is_error for r in round_.results] == [True, False], provider
        assert round_.results[1].content == "found"
        assert json.dumps(reply(round_), default=str)  # the reply can be built and sent
