"""Hidden causes never reach an exported span either (property-based, real SDK).

The scenarios of ``tests/test_leaks.py`` (random exceptions carrying a fresh secret
in their message, cause chain, notes, attributes, class name or traceback locals,
under random handler stacks over the six levels, through every sync, async, round,
session, invoke and in-place path), played with ``configure(telemetry=True)`` and
the default ``record_exception="type"``. Properties:

* the secret is in no exported span: not its name, attributes, events, event
  attributes, status or links (each span rendered whole, ``ReadableSpan.to_json()``),
  except where the secret *is* the exception's class name, which ``"type"`` records
  by definition (and the conventions' ``error.type`` names);
* one span per call, each call's span carries the error id its result (or the
  ``ToolCallFailed``) carries, which is the one the log event holds, and that event
  names the span's trace and span ids;
* everything the model could be sent stays free of the secret with telemetry on.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from structlog.testing import capture_logs

import toolguard

from ._hypothesis import PROFILE
from ._otel import install, tool_spans
from .test_leaks import (
    Scenario,
    assert_not_sent,
    clean_globals,
    events_mentioning,
    fresh_secret,
    hiding_handlers,
    play,
    scenarios,
)


def _span_text(span: Any) -> str:
    return str(span.to_json())


@PROFILE
@given(scenario=scenarios(hiding_handlers))
def test_a_hidden_cause_is_in_no_exported_span_and_the_span_has_the_logged_error_id(
    scenario: Scenario,
) -> None:
    exporter, _ = install()
    with clean_globals(), capture_logs() as events:
        toolguard.configure(telemetry=True)
        exporter.clear()
        outcome = play(scenario, fresh_secret)
    spans = tool_spans()

    # one span per call (a round's calls each have theirs; the in-place path one)
    by_call: dict[str, Any] = {}
    for span in spans:
        call_id = dict(span.attributes or {}).get("gen_ai.tool.call.id")
        assert call_id not in by_call, f"two spans for {call_id}"
        by_call[str(call_id)] = span
    assert sorted(by_call) == sorted(str(c.id) for c in outcome.calls)

    for call_id, secret in outcome.secrets.items():
        assert_not_sent(outcome.results, secret)
        raised = outcome.raised.get(call_id)
        for span in spans:
            text = _span_text(span)
            if secret in text:
                # only a class named after the secret may carry it: "type" records types
                assert raised is not None and secret in type(raised).__qualname__, text[:800]
                without = text.replace(json.dumps(type(raised).__qualname__)[1:-1], "")
                without = without.replace(type(raised).__qualname__, "")
                assert secret not in without, text[:800]

        mentions = events_mentioning(events, secret)
        if len(mentions) != 1:
            continue  # test_leaks pins exactly one; here only what the span holds matters
        [event] = mentions
        span = by_call[call_id]
        found = dict(span.attributes or {})
        assert found.get("toolguard.error_id") == event["error_id"]
        assert event["trace_id"] == format(span.context.trace_id, "032x")
        assert event["span_id"] == format(span.context.span_id, "016x")
        answer = next((r for r in outcome.results if r.call_id == call_id), None)
        if answer is not None and answer.error_id is not None:
            assert answer.error_id == found["toolguard.error_id"]
        elif outcome.failed is not None and outcome.failed.call_id == call_id:
            assert outcome.failed.error_id == found["toolguard.error_id"]
