"""Signature + docstring -> JSON Schema; argument validation; injected arguments.

Everything here runs once, when a tool is decorated: the validator that checks
the model's arguments is a pydantic-core validator over a ``TypedDict`` built
from the signature, so a call only pays for one ``validate_python`` (dict
arguments) or ``validate_json`` (the string the model sent).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import json
import re
import types
import typing
import weakref
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Final, Literal, NotRequired

import attrs
import docstring_parser
import pydantic
import pydantic_core
from typing_extensions import TypedDict

from toolguard._suggest import did_you_mean
from toolguard.errors import InjectionError, InvalidArguments, ToolDefinitionError
from toolguard.results import ToolCall

__all__ = ["Arguments", "Injected", "InjectedCallId", "build_arguments", "describe"]


class InjectedCallId:
    """Marker: ``call_id: Annotated[str, InjectedCallId]`` receives the call's id.

    Never in the schema; a model that sends it is refused.
    """


class Injected:
    """Marker: ``user: Annotated[User, Injected]`` receives ``dispatch(..., context=...)``.

    Never in the schema; a model that sends it is refused, so it cannot spoof it.
    """


_MAX_PROBLEMS: Final = 10
_EXCERPT: Final = 40


def _excerpt(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _EXCERPT else text[: _EXCERPT - 3] + "..."


def _kind(schema: Mapping[str, Any]) -> str:
    """A short human name for what a property schema expects."""
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    if "anyOf" in schema:
        return " or ".join(_kind(option) for option in schema["anyOf"])
    if "$ref" in schema:
        return "an object"
    kind = schema.get("type")
    names = {
        "integer": "an integer",
        "number": "a number",
        "string": "a string",
        "boolean": "true or false",
        "array": "an array",
        "object": "an object",
        "null": "null",
    }
    return names.get(kind, "any value") if isinstance(kind, str) else "any value"


@attrs.frozen
class Arguments:
    """How one tool takes its arguments: schema for the model, validator, injection."""

    tool: str
    parameters: dict[str, Any]
    validator: pydantic_core.SchemaValidator = attrs.field(repr=False)
    positional: tuple[str, ...]
    call_id_params: tuple[str, ...]
    context_params: tuple[str, ...]

    @property
    def injected(self) -> tuple[str, ...]:
        return self.call_id_params + self.context_params

    def bind(self, call: ToolCall, context: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Validate the model's arguments; return ``(args, kwargs)`` for the function.

        Raises :class:`InvalidArguments` (model-visible) when they do not fit, and
        :class:`InjectionError` (hidden: the application's bug) when an injected
        value is missing.
        """
        raw = call.arguments
        try:
            if raw is None or raw == "":
                kwargs = self.validator.validate_python({})
            elif type(raw) is str:
                kwargs = self.validator.validate_json(raw)
            else:
                kwargs = self.validator.validate_python(raw)
        except pydantic_core.ValidationError as error:
            raise self._invalid(error) from None
        if self.call_id_params:
            if call.id is None:
                raise InjectionError(
                    f"tool {self.tool!r} needs the call id (parameter "
                    f"{self.call_id_params[0]!r}) but the ToolCall has no id"
                )
            for name in self.call_id_params:
                kwargs[name] = call.id
        if self.context_params:
            if context is None:
                raise InjectionError(
                    f"tool {self.tool!r} needs application context (parameter "
                    f"{self.context_params[0]!r}); pass dispatch(..., context=...)"
                )
            for name in self.context_params:
                kwargs[name] = context
        if self.positional:
            return tuple(kwargs.pop(name) for name in self.positional), kwargs
        return (), kwargs

    def _invalid(self, error: pydantic_core.ValidationError) -> InvalidArguments:
        properties = self.parameters.get("properties", {})
        allowed = ", ".join(properties) or "no arguments"
        problems: list[str] = []
        for detail in error.errors(include_url=False, include_context=False)[:_MAX_PROBLEMS]:
            loc = detail["loc"]
            kind = detail["type"]
            if not loc:
                if kind == "json_invalid":
                    problems.append(
                        "the arguments are not valid JSON "
                        f"({detail['msg'].removeprefix('Invalid JSON: ')}); send one JSON object"
                    )
                else:
                    problems.append(
                        f"the arguments must be a JSON object, got {_excerpt(detail['input'])}"
                    )
                continue
            name = str(loc[0])
            path = ".".join(str(part) for part in loc)
            if kind == "extra_forbidden" and len(loc) == 1:
                if name in self.injected:
                    problems.append(f"{name!r}: set by the application; it cannot be sent")
                else:
                    problems.append(f"{name!r}: unexpected argument; this tool accepts: {allowed}")
            elif kind == "missing" and len(loc) == 1:
                expected = _kind(properties.get(name, {}))
                problems.append(f"{name!r}: missing required argument ({expected})")
            else:
                problems.append(
                    f"{path!r}: {detail['msg'].rstrip('.')}, got {_excerpt(detail['input'])}"
                )
        hidden = error.error_count() - len(problems)
        if hidden > 0:
            problems.append(f"... and {hidden} more")
        message = f"Invalid arguments for tool '{self.tool}':\n" + "\n".join(
            f"- {problem}" for problem in problems
        )
        return InvalidArguments(message, tool=self.tool, problems=tuple(problems))


# --- docstrings ---------------------------------------------------------------------

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


def _check_docstring(function: Callable[..., Any], tool: str, names: list[str]) -> None:
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


# --- types pydantic needs help with ----------------------------------------------------

_OMITTED: Final = object()  # an attrs default left for attrs itself to compute
_FACTORY: Final[type] = type(attrs.Factory(list))
_ATTRS_TYPES: weakref.WeakKeyDictionary[type, Any] = weakref.WeakKeyDictionary()


def _omitted() -> Any:
    return _OMITTED


def _pydantic_ready(annotation: Any, building: frozenset[type] = frozenset()) -> Any:
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
        inner = _pydantic_ready(args[0], building)
        if inner is args[0]:
            return annotation
        return Annotated[(inner, *annotation.__metadata__)]
    ready = tuple(
        _pydantic_ready(arg, building) if not isinstance(arg, list) else arg for arg in args
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
        kind = _pydantic_ready(hints.get(field.name, field.type or Any), building | {cls})
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


def _accepts_none(annotation: Any) -> bool:
    """Whether ``None`` is a valid value of ``annotation`` (as far as a hint tells)."""
    while typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    if annotation is Any or annotation is object or annotation is None:
        return True
    if annotation is type(None):
        return True
    origin = typing.get_origin(annotation)
    if origin is types.UnionType or origin is typing.Union:
        return any(_accepts_none(arg) for arg in typing.get_args(annotation))
    if origin is Literal:
        return None in typing.get_args(annotation)
    return False


def _null_means(default: Any) -> pydantic.BeforeValidator:
    """``null`` for an argument with a default means "use the default".

    Strict schemas (OpenAI ``strict: true``) make every argument required, so a model
    sends ``null`` for an argument it would have left out.
    """

    def use_default(value: Any) -> Any:
        return default if value is None else value

    return pydantic.BeforeValidator(use_default)


# --- the arguments ------------------------------------------------------------------


def _is_marker(meta: Any, marker: type) -> bool:
    return meta is marker or isinstance(meta, marker)


def build_arguments(
    function: Callable[..., Any],
    *,
    tool: str,
    skip_first: bool,
    docs: Mapping[str, str],
    check_docstring: bool = True,
) -> Arguments:
    """Build the schema and the validator for ``function`` (once, at decoration).

    With ``check_docstring`` (the default), a malformed docstring section or a
    documented argument that is not in the signature is a :class:`ToolDefinitionError`.
    """
    try:
        signature = inspect.signature(function)
        hints = typing.get_type_hints(function, include_extras=True)
    except (NameError, TypeError, ValueError) as error:
        raise ToolDefinitionError(f"tool {tool!r}: cannot read its signature: {error}") from None
    params = list(signature.parameters.values())
    if check_docstring:
        _check_docstring(function, tool, [param.name for param in params])
    if skip_first and params:
        params = params[1:]

    fields: dict[str, Any] = {}
    defaults: dict[str, Any] = {}
    positional: list[str] = []
    call_id_params: list[str] = []
    context_params: list[str] = []
    extra: Literal["forbid", "allow"] = "forbid"
    for param in params:
        if param.kind is param.VAR_POSITIONAL:
            raise ToolDefinitionError(
                f"tool {tool!r}: *{param.name} is not supported; a model sends named arguments"
            )
        if param.kind is param.VAR_KEYWORD:
            extra = "allow"
            continue
        annotation = hints.get(param.name, Any)
        metadata = getattr(annotation, "__metadata__", ())
        if any(_is_marker(m, InjectedCallId) for m in metadata):
            call_id_params.append(param.name)
            continue
        if any(_is_marker(m, Injected) for m in metadata):
            context_params.append(param.name)
            continue
        if param.kind is param.POSITIONAL_ONLY:
            positional.append(param.name)
        try:
            annotation = _pydantic_ready(annotation)
        except ToolDefinitionError as error:
            raise ToolDefinitionError(f"tool {tool!r}, argument {param.name!r}: {error}") from None
        except (NameError, TypeError) as error:
            raise ToolDefinitionError(
                f"tool {tool!r}, argument {param.name!r}: cannot read its type: {error}"
            ) from None
        text = next((m for m in metadata if isinstance(m, str)), None) or docs.get(param.name)
        if text is not None:
            annotation = Annotated[annotation, pydantic.Field(description=text)]
        if param.default is param.empty:
            fields[param.name] = annotation
        else:
            if param.default is not None and not _accepts_none(annotation):
                annotation = Annotated[annotation, _null_means(param.default)]
            fields[param.name] = NotRequired[annotation]
            defaults[param.name] = param.default

    make_typed_dict: Any = TypedDict  # built from the signature: a runtime-only TypedDict
    arguments_type = make_typed_dict(f"{tool}_arguments", fields)
    arguments_type.__pydantic_config__ = pydantic.ConfigDict(extra=extra)
    try:
        adapter = pydantic.TypeAdapter(arguments_type)
        schema = adapter.json_schema()
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError) as error:
        raise ToolDefinitionError(
            f"tool {tool!r}: cannot build a schema for its arguments: {error}"
        ) from None
    except TypeError as error:
        raise ToolDefinitionError(f"tool {tool!r}: cannot build a schema: {error}") from None
    properties = schema.setdefault("properties", {})
    for name, default in defaults.items():
        # a default the model cannot see as JSON is simply not advertised
        with contextlib.suppress(pydantic_core.PydanticSerializationError):
            properties[name]["default"] = pydantic_core.to_jsonable_python(default)
    _strip_titles(schema)
    schema.pop("title", None)
    return Arguments(
        tool=tool,
        parameters=schema,
        validator=adapter.validator,  # type: ignore[arg-type]
        positional=tuple(positional),
        call_id_params=tuple(call_id_params),
        context_params=tuple(context_params),
    )


def _strip_titles(schema: Any) -> None:
    """Drop pydantic's generated ``title`` keys of properties (noise to a model)."""
    if isinstance(schema, dict):
        props = schema.get("properties")
        if isinstance(props, dict):
            for prop in props.values():
                if isinstance(prop, dict):
                    prop.pop("title", None)
        for value in schema.values():
            _strip_titles(value)
    elif isinstance(schema, list):
        for value in schema:
            _strip_titles(value)
