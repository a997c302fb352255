"""Global defaults (the "global" precedence level), read at call time.

Like ``structlog.configure()``: tools decorated at import time honour a later
``configure()``. Each change bumps ``_version``; dispatchers cache a tool's resolved
chain with the version it was resolved under and compare it on each call, so a
change takes effect on the next call without per-call work.
"""

from __future__ import annotations

import threading

import attrs
from typing_extensions import Unpack

from toolguard.policy._values import PolicyOptions, ToolPolicy, policy_from_options
from toolguard.telemetry import _switch as _telemetry
from toolguard.telemetry._switch import RecordException

__all__ = ["configure", "get_config", "reset_defaults"]

_lock = threading.Lock()
_policy = ToolPolicy()
_version = 0


def configure(
    *,
    telemetry: bool | None = None,
    record_exception: RecordException | None = None,
    **options: Unpack[PolicyOptions],
) -> None:
    """Set global defaults; only the options given change.

    Accepts the :class:`~toolguard.ToolPolicy` fields
    (``on_error``, ``on_invalid_call``, ``return_direct``, ``log_level``, ``redact``,
    ``max_result_chars``, ``timeout``, ``retries``, ``breaker``, ``max_model_retries``,
    ``model_retries_exhausted``, ``log_frames``, ``max_logged_arguments``). Pass
    ``UNSET`` to clear one. A bad option raises :class:`~toolguard.InvalidOption`.

    ``telemetry=True`` puts every guarded call in an OpenTelemetry span, with metrics
    (extra ``otel``; see docs/telemetry.md); ``record_exception`` says what of a
    failure's exception the span records: ``"type"`` (the default: its type and error
    id), ``"full"`` (message and traceback too) or ``"none"``.
    """
    global _policy, _version
    changes = policy_from_options(options, where="configure()")  # unknown keys refused
    if telemetry is not None or record_exception is not None:
        _telemetry.configure(telemetry, record_exception)
    with _lock:
        _policy = attrs.evolve(_policy, **{name: getattr(changes, name) for name in options})
        _version += 1


def get_config() -> ToolPolicy:
    """The global level as a frozen :class:`~toolguard.ToolPolicy`."""
    return _policy


def reset_defaults() -> None:
    """Forget every ``configure()`` call."""
    global _policy, _version
    _telemetry.reset()
    with _lock:
        _policy = ToolPolicy()
        _version += 1


def snapshot() -> tuple[int, ToolPolicy]:
    """The version and the global policy, read together."""
    with _lock:
        return _version, _policy
