"""OpenTelemetry spans and metrics for guarded calls (extra ``otel``), off by
default: one hook for the runner's call and one for the guard's answer
(``_spans``). ``opentelemetry`` is imported only when turned on.

May import: ``toolguard._values``, ``_text``, ``_marks``, ``errors``. Private:
``configure(telemetry=...)`` and ``Dispatcher(telemetry=...)`` are its public face.
"""
