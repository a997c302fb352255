"""Whether telemetry is on, and the OpenTelemetry objects it uses.

``configure(telemetry=..., record_exception=...)`` sets the process-wide switch
(:data:`on`, and :data:`CONFIGURED` with it); an agent's own ``Dispatcher(telemetry=...)``
is :data:`ON` or :data:`OFF`. A hook reads one ``.on`` when telemetry is off, and
``opentelemetry`` is imported only when it is first turned on (:class:`Otel`).
"""

from __future__ import annotations

from typing import Any, Final, Literal, Protocol, TypeAlias

from toolguard.errors import InvalidOption

__all__ = [
    "OFF",
    "CONFIGURED",
    "ON",
    "RECORD_EXCEPTION_MODES",
    "Otel",
    "RecordException",
    "Switch",
    "Switched",
    "configure",
    "distribution_version",
    "reset",
    "settings",
    "start",
    "switch",
]

RecordException: TypeAlias = Literal["type", "full", "none"]
RECORD_EXCEPTION_MODES: Final[tuple[RecordException, ...]] = ("type", "full", "none")

# the boundaries the GenAI conventions advise for their duration histograms (seconds)
_BUCKETS: Final = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48)
_INSTALL: Final = 'telemetry needs the OpenTelemetry API: pip install "toolguard-agents[otel]"'

on = False
"""Whether telemetry is on: the one thing the hooks read when it is off."""

record: RecordException = "type"
otel: Otel | None = None


def distribution_version() -> str:
    """toolguard-agents' installed version (``toolguard.__version__``)."""
    from importlib import metadata  # a third of toolguard's import time: read when asked

    try:
        return metadata.version("toolguard-agents")
    except metadata.PackageNotFoundError:  # pragma: no cover - a checkout, not installed
        return "0+unknown"


class Otel:
    """The OpenTelemetry API objects, made once when telemetry is first turned on."""

    def __init__(self) -> None:
        try:
            from opentelemetry import context, metrics, trace
        except ImportError as error:
            raise ImportError(_INSTALL) from error
        version = distribution_version()
        self.context = context
        self.trace = trace
        self.kind = trace.SpanKind.INTERNAL
        self.error_status = trace.Status(trace.StatusCode.ERROR)
        self.tracer = trace.get_tracer("toolguard", version)
        meter = metrics.get_meter("toolguard", version)
        self.duration = meter.create_histogram(
            "gen_ai.execute_tool.duration",
            unit="s",
            description="The duration of a single tool execution.",
            explicit_bucket_boundaries_advisory=_BUCKETS,
        )
        self.calls = meter.create_counter(
            "toolguard.calls", unit="{call}", description="Guarded tool calls, by tool and outcome."
        )


# --- turning it on and off ---------------------------------------------------------------


def configure(telemetry: bool | None, record_exception: RecordException | None) -> None:
    """``configure(telemetry=..., record_exception=...)``; ``None`` leaves a setting."""
    global on, record, otel
    if telemetry is not None and not isinstance(telemetry, bool):
        raise InvalidOption(
            f"configure(): telemetry={telemetry!r} is not allowed; allowed: True or False"
        )
    if record_exception is not None and record_exception not in RECORD_EXCEPTION_MODES:
        allowed = ", ".join(repr(mode) for mode in RECORD_EXCEPTION_MODES)
        raise InvalidOption(
            f"configure(): record_exception={record_exception!r} is not allowed; allowed: {allowed}"
        )
    if telemetry and otel is None:
        otel = Otel()
    if record_exception is not None:
        record = record_exception
    if telemetry is not None:
        on = CONFIGURED.on = telemetry


class Switch:
    """A telemetry switch: an agent's own (:data:`ON`, :data:`OFF`), or the process-wide
    one (:data:`CONFIGURED`) that an agent following ``configure()`` holds."""

    __slots__ = ("on",)

    def __init__(self, on: bool) -> None:
        self.on = on


ON: Final = Switch(True)
OFF: Final = Switch(False)
CONFIGURED: Final = Switch(False)
"""The process-wide switch as an object: what an agent that follows ``configure()``
reads, kept equal to :data:`on` by :func:`configure` and :func:`reset` (an object of
this module's own, not the module looked up in ``sys.modules``: a durable engine's
sandbox keeps a ``sys.modules`` of its own)."""


class Switched(Protocol):
    """What reads as telemetry on or off: a :class:`Switch`."""

    on: bool


def switch(telemetry: bool | None) -> Switched:
    """What an agent reads ``.on`` of: :data:`CONFIGURED` (``None``: as ``configure()``
    says), :data:`ON` or :data:`OFF`."""
    if telemetry is None:
        return CONFIGURED
    return ON if telemetry else OFF


def start() -> None:
    """Make the OpenTelemetry API objects (an agent of its own turns telemetry on)."""
    global otel
    if otel is None:
        otel = Otel()


def reset() -> None:
    """Telemetry off, ``record_exception="type"`` (``reset_defaults()``)."""
    global on, record
    on = CONFIGURED.on = False
    record = "type"


def settings() -> dict[str, Any]:
    """The current settings, as ``configure()`` takes them."""
    return {"telemetry": on, "record_exception": record}
