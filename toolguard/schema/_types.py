"""Types pydantic needs help with, for tool arguments.

attrs classes get a stand-in pydantic can validate (their own validators still
run), and an argument with a default reads ``null`` as "use the default".
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
import weakref
from typing import Annotated, Any, Final, Literal

import attrs
import pydantic

from toolguard.errors import ToolDefinitionError

__all__ = ["accepts_none", "null_means_default", "pydantic_ready"]

_OMITTED: Final = object()  # an attrs default left for attrs itself to compute
_FACTORY: Final[type] = type(attrs.Factory(list))
_ATTRS_TYPES: weakref.WeakKeyDictionary[type, Any] = weakref.WeakKeyDictionary()


def _omitted() -> Any:
    return _OMITTED


def pydantic_ready(annotation: Any, building: frozenset[type] = frozenset()) -> Any:
    """``annotation`` with every attrs class in it replaced by a type pydantic validates.

    Returns ``annotation`` itself when there is nothing to replace.
    """
    if isinstance(annotation, type):
        return _attrs_type(annotation, building) if attrs.has(annotation) else annotation
    args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if not args or origin is None or origin is Literal:
        return annotation
    if origin is Annotated:
        inner = pydantic_ready(args[0], building)
        if inner is args[0]:
            return annotation
        return Annotated[(inner, *annotation.__metadata__)]
    ready = tuple(
        pydantic_ready(arg, building) if not isinstance(arg, list) else arg for arg in args
    )
    if all(new is old for new, old in zip(ready, args, strict=True)):
        return annotation
    if origin is types.UnionType or origin is typing.Union:
        return typing.Union[ready]  # noqa: UP007 (built from a tuple)
    try:
        return origin[ready]
    except TypeError:
        return annotation


def _attrs_type(cls: type, building: frozenset[type]) -> Any:
    """A stand-in for an attrs class: a dataclass of its ``__init__`` arguments whose
    validated value is turned into an instance of ``cls`` (so its validators run)."""
    cached = _ATTRS_TYPES.get(cls)
    if cached is not None:
        return cached
    if cls in building:
        raise ToolDefinitionError(
            f"attrs class {cls.__qualname__} refers to itself; recursive attrs classes are "
            "not supported in tool arguments (use a pydantic model or a dataclass)"
        )
    hints = typing.get_type_hints(cls, include_extras=True)
    fields: list[tuple[str, Any, Any]] = []
    attributes: dict[str, str] = {}  # __init__ argument -> attribute
    for field in attrs.fields(cls):
        if not field.init:
            continue
        alias = getattr(field, "alias", None) or field.name.lstrip("_")
        kind = pydantic_ready(hints.get(field.name, field.type or Any), building | {cls})
        default = field.default
        if default is attrs.NOTHING:
            spec = dataclasses.field()
        elif type(default) is _FACTORY or type(default).__hash__ is None:
            spec = dataclasses.field(default_factory=_omitted)  # attrs computes it
        else:
            spec = dataclasses.field(default=default)
        fields.append((alias, kind, spec))
        attributes[alias] = field.name
    stand_in: Any = dataclasses.make_dataclass(cls.__name__, fields, kw_only=True)
    stand_in.__doc__ = inspect.cleandoc(cls.__doc__) if cls.__doc__ else None
    stand_in.__module__ = cls.__module__
    stand_in.__qualname__ = cls.__qualname__

    def from_instance(value: Any) -> Any:
        if isinstance(value, cls):
            return stand_in(**{alias: getattr(value, a) for alias, a in attributes.items()})
        return value

    def to_instance(value: Any) -> Any:
        kwargs = {alias: getattr(value, alias) for alias in attributes}
        return cls(**{k: v for k, v in kwargs.items() if v is not _OMITTED})

    ready: Any = Annotated[
        stand_in, pydantic.BeforeValidator(from_instance), pydantic.AfterValidator(to_instance)
    ]
    _ATTRS_TYPES[cls] = ready
    return ready


def accepts_none(annotation: Any) -> bool:
    """Whether ``None`` is a valid value of ``annotation`` (as far as a hint tells)."""
    while typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    if annotation is Any or annotation is object or annotation is None:
        return True
    if annotation is type(None):
        return True
    origin = typing.get_origin(annotation)
    if origin is types.UnionType or origin is typing.Union:
        return any(accepts_none(arg) for arg in typing.get_args(annotation))
    if origin is Literal:
        return None in typing.get_args(annotation)
    return False


def null_means_default(default: Any) -> pydantic.BeforeValidator:
    """``null`` for an argument with a default means "use the default".

    Strict schemas (OpenAI ``strict: true``) make every argument required, so a model
    sends ``null`` for an argument it would have left out.
    """

    def use_default(value: Any) -> Any:
        return default if value is None else value

    return pydantic.BeforeValidator(use_default)
