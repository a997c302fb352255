"""What a tool declares, read once at decoration: its signature and docstring as
JSON Schema and a pydantic-core validator (``_arguments``), the types it accepts
(``_types``), its docstring (``_docstrings``), the strict-mode schema (``_strict``),
and the parameters an agent framework injects (``_frameworks``).

May import: ``toolguard._values``, ``_text``, ``_suggest``, ``_marks``, ``_logging`` (a
custom validator's model message is read with its warnings), ``errors``.
Private: ``@tool`` (``toolguard._tool``) builds on it.
"""
