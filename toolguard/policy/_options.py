"""The one error for a bad option: an unknown name, or a value it does not take.

Every class and function that takes options (``ToolPolicy``, ``AgentPolicy``,
``Retry``, ``Breaker``, ``@tool``, ``Dispatcher``, ``configure``) raises
:class:`~toolguard.InvalidOption`, which names the option, suggests the closest
allowed name or value, and lists what is allowed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import attrs

from toolguard._suggest import did_you_mean
from toolguard.errors import InvalidOption

__all__ = ["named_options", "refused", "unknown_option"]

C = TypeVar("C", bound=type)


def refused(field: str, value: Any, allowed: str, choices: Iterable[str] = ()) -> InvalidOption:
    """A value an option does not take: did-you-mean, then what is allowed."""
    hint = did_you_mean(value, tuple(choices)) if isinstance(value, str) and choices else ""
    return InvalidOption(f"{field}={value!r} is not allowed{hint}; allowed: {allowed}")


def unknown_option(where: str, key: str, allowed: Iterable[str]) -> InvalidOption:
    """An option name ``where`` does not take."""
    names = tuple(allowed)
    return InvalidOption(
        f"{where}: unknown option {key!r}{did_you_mean(key, names)}; allowed: {', '.join(names)}"
    )


def named_options(cls: C) -> C:
    """Make an attrs class's keyword-only ``__init__`` refuse an unknown option name
    with :class:`InvalidOption` (Python's own would be a bare ``TypeError``). The
    signature type checkers see is attrs' own."""
    init: Callable[..., None] = cls.__init__  # type: ignore[misc]  # attrs' generated one
    names = tuple(field.name for field in attrs.fields(cls))

    @functools.wraps(init)
    def __init__(self: Any, **options: Any) -> None:
        for key in options:
            if key not in names:
                raise unknown_option(f"{cls.__name__}()", key, names)
        init(self, **options)

    cls.__init__ = __init__  # type: ignore[misc]  # the same signature, checked names
    return cls
