"""The guard half of the core: given a tool's name, its call and an exception or a
value, decide what the model is told.

It resolves the precedence chain (``_guard``), asks the handlers, logs a hidden cause
exactly once and builds the ``ToolResult`` (``_failure``), with the arguments it may
show redacted and bounded (``_redaction``) and the traceback's locals masked
(``_locals``), and turns values and answers into content (``_content``). It runs
nothing: the runner runs tools and hands their outcomes here.

May import: ``policy``, ``telemetry``, ``toolguard._values``, ``_text``, ``_suggest``,
``_marks``, ``_logging``, ``errors``. Never the runner, sessions or stores. Private.
"""
