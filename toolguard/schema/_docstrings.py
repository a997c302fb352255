"""Docstrings: descriptions for the model, and checks that they match the signature.

Google, NumPy and Sphinx styles, parsed with ``docstring_parser``.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from typing import Any, Final

import docstring_parser

from toolguard._suggest import did_you_mean
from toolguard.errors import ToolDefinitionError

__all__ = ["check_docstring", "describe"]

# What marks a docstring as one style. docstring_parser's AUTO style silently drops a
# section it cannot parse (it falls back to another style), so the style a docstring
# declares is detected here and parsed strictly: a broken section is reported.
_STYLE_MARKERS: Final = (
    (  # a NumPy section title underlined with dashes
        docstring_parser.DocstringStyle.NUMPYDOC,
        re.compile(r"^[ \t]*[A-Za-z][A-Za-z ]*[ \t]*\n[ \t]*-{3,}[ \t]*$", re.MULTILINE),
    ),
    (  # a Google section title alone on its line
        docstring_parser.DocstringStyle.GOOGLE,
        re.compile(
            r"^[ \t]*(?:Arguments|Args|Parameters|Params|Raises|Exceptions|Except|Attributes"
            r"|Examples?|Returns|Yields)[ \t]*:[ \t]*$",
            re.MULTILINE,
        ),
    ),
    (  # a Sphinx (reST) field list
        docstring_parser.DocstringStyle.REST,
        re.compile(
            r"^:(?:param|parameter|arg|argument|key|keyword|type|raises?|except|exception"
            r"|returns?|rtype|yields?|ytype)\b",
            re.MULTILINE,
        ),
    ),
)
_STYLE_NAMES: Final = {
    docstring_parser.DocstringStyle.NUMPYDOC: "NumPy",
    docstring_parser.DocstringStyle.GOOGLE: "Google",
    docstring_parser.DocstringStyle.REST: "Sphinx",
}
_NOT_ARGUMENTS: Final = frozenset({"attribute", "var", "ivar", "cvar"})
_OPT_OUT: Final = " Fix the docstring, or decorate with @tool(check_docstring=False)."


@functools.lru_cache(maxsize=512)
def _parse_docstring(doc: str) -> tuple[docstring_parser.Docstring | None, str | None]:
    """``(parsed, problem)``: the docstring in the style it declares, and what is broken.

    When the declared style fails, ``parsed`` is docstring_parser's best effort (or
    ``None``) and ``problem`` says why, for :func:`build_arguments` to report.
    """
    problem: str | None = None
    for style, marker in _STYLE_MARKERS:
        if marker.search(doc):
            try:
                return docstring_parser.parse(doc, style), None
            except docstring_parser.ParseError as error:
                name = _STYLE_NAMES[style]
                problem = f"its {name}-style docstring has a malformed section: {error}"
            break
    try:
        return docstring_parser.parse(doc), problem
    except docstring_parser.ParseError as error:
        return None, problem or f"its docstring cannot be parsed: {error}"


def describe(function: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The docstring's first paragraph, and each documented argument's description.

    Google, NumPy and Sphinx styles are understood. Never raises: a malformed
    docstring is reported by :func:`build_arguments` (unless it was told not to check).
    """
    doc = inspect.getdoc(function) or ""
    if not doc:
        return "", {}
    parsed, _ = _parse_docstring(doc)
    if parsed is None:
        return " ".join(doc.split("\n\n", 1)[0].split()), {}
    text = "\n\n".join(p for p in (parsed.short_description, parsed.long_description) if p)
    first = " ".join(text.split("\n\n", 1)[0].split())
    params = {p.arg_name: " ".join(p.description.split()) for p in parsed.params if p.description}
    return first, params


def check_docstring(function: Callable[..., Any], tool: str, names: list[str]) -> None:
    """A malformed section, or a documented argument the signature lacks, is an error."""
    doc = inspect.getdoc(function) or ""
    if not doc:
        return
    parsed, problem = _parse_docstring(doc)
    if problem is not None or parsed is None:
        reason = (problem or "its docstring cannot be parsed").rstrip(".")
        raise ToolDefinitionError(f"tool {tool!r}: {reason}.{_OPT_OUT}")
    for param in parsed.params:
        if param.args and param.args[0] in _NOT_ARGUMENTS:
            continue
        for documented in param.arg_name.split(","):
            name = documented.strip().lstrip("*")
            if name not in names:
                raise ToolDefinitionError(
                    f"tool {tool!r}: the docstring documents argument {documented.strip()!r}, "
                    f"which is not in the signature{did_you_mean(name, names)}; parameters: "
                    f"{', '.join(names) or 'none'}.{_OPT_OUT}"
                )
