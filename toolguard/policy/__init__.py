"""The policy: what may be declared, and the one order it is read in.

Owns ``ToolPolicy``/``AgentPolicy`` and the unset marker (``_values``), the handlers
and their composition (``_handlers``), the ``Retry`` and ``Breaker`` values
(``_resilience``), the precedence chain, stated once as data (``_precedence``), and the
global level (``_config``). Values and rules only: nothing here runs a tool or logs.

May import: ``toolguard._values``, ``_text``, ``_suggest``, ``_marks``, ``errors``, and
``telemetry`` (``configure(telemetry=...)`` is the global level's). Private: the
public names are re-exported by ``toolguard`` and ``toolguard.handlers``.
"""
