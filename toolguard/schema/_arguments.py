"""Signature + docstring -> JSON Schema; argument validation; injected arguments.

Everything here runs once, when a tool is decorated: the validator that checks
the model's arguments is a pydantic-core validator over a ``TypedDict`` built
from the signature, so a call only pays for one ``validate_python`` (dict
arguments) or ``validate_json`` (the string the model sent).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Final, Literal, NotRequired

import attrs
import pydantic
import pydantic.json_schema
import pydantic_core
from typing_extensions import TypedDict

from toolguard._logging import model_message
from toolguard._text import bounded, excerpt, utf8
from toolguard._values import ToolCall
from toolguard.errors import InjectionError, InvalidArguments, ToolDefinitionError
from toolguard.schema._docstrings import check_docstring as check_docs
from toolguard.schema._docstrings import describe
from toolguard.schema._frameworks import FrameworkParameter, framework_of
from toolguard.schema._types import accepts_none, null_means_default, pydantic_ready

__all__ = [
    "Arguments",
    "Injected",
    "InjectedCallId",
    "any_validator",
    "build_arguments",
    "describe",
    "missing_framework_value",
]


class InjectedCallId:
    """Marker: ``call_id: Annotated[str, InjectedCallId]`` receives the call's id.

    Never in the schema; a model that sends it is refused.
    """


class Injected:
    """Marker: ``user: Annotated[User, Injected]`` receives ``dispatch(..., context=...)``.

    Never in the schema; a model that sends it is refused, so it cannot spoof it.
    """


_ANY: Final = pydantic_core.SchemaValidator(pydantic_core.core_schema.any_schema())


def any_validator() -> pydantic_core.SchemaValidator:
    """A validator that accepts anything: for the arguments of a tool another framework
    validates (toolguard only words that framework's verdict)."""
    return _ANY


_MAX_PROBLEMS: Final = 10
_LINE_LIMIT: Final = 200  # characters of one problem's own description
_LIST_LIMIT: Final = 300  # characters of a list of names or choices
_REJECTED: Final = "the value was rejected by the tool's own checks"
# pydantic's codes for an exception a validator of the tool's own types raised
# (a ValueError, an AssertionError): its text is the author's, not pydantic's
_RAISED_BY_VALIDATORS: Final = frozenset({"value_error", "assertion_error"})


def _kind(schema: Mapping[str, Any]) -> str:
    """A short human name for what a property schema expects."""
    if "enum" in schema:
        return "one of " + bounded(", ".join(json.dumps(v) for v in schema["enum"]), _LIST_LIMIT)
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
    framework: tuple[FrameworkParameter, ...] = ()

    @property
    def injected(self) -> tuple[str, ...]:
        """Every parameter the model may not send: the application's and the framework's."""
        return self.call_id_params + self.context_params + tuple(p.name for p in self.framework)

    @property
    def plain_validate(self) -> Callable[[Any], dict[str, Any]] | None:
        """The validator alone, when a dict the model sent is all the function takes
        (no injected or positional-only parameters); ``None`` otherwise."""
        if self.positional or self.injected:
            return None  # framework parameters are among the injected
        return self.validator.validate_python

    def bind(
        self,
        call: ToolCall,
        context: Any,
        framework_values: Mapping[str, Any] | None = None,
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Validate the model's arguments; return ``(args, kwargs)`` for the function.

        ``framework_values`` are the values of the framework's parameters, by name
        (what its integration supplies). Raises :class:`InvalidArguments`
        (model-visible) when the model's arguments do not fit, and
        :class:`InjectionError` (hidden: the application's bug) when an injected
        value is missing.
        """
        raw = call.arguments
        try:
            if type(raw) is dict:
                kwargs = self.validator.validate_python(raw)
            elif raw is None or raw == "":
                kwargs = self.validator.validate_python({})
            elif type(raw) is str:
                kwargs = self.validator.validate_json(raw)
            else:
                kwargs = self.validator.validate_python(raw)
        except pydantic_core.ValidationError as error:
            raise self.invalid(error)  # noqa: B904 - invalid() sets the cause it may show
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
        if self.framework:
            self._supply(kwargs, framework_values or {})
        if self.positional:
            return tuple(kwargs.pop(name) for name in self.positional), kwargs
        return (), kwargs

    def _supply(self, kwargs: dict[str, Any], values: Mapping[str, Any]) -> None:
        for parameter in self.framework:
            if parameter.name in values:
                kwargs[parameter.name] = values[parameter.name]
            elif not parameter.has_default:
                raise InjectionError(missing_framework_value(self.tool, parameter))

    def invalid(self, error: pydantic_core.ValidationError) -> InvalidArguments:
        """The model-visible error for a failed validation: one bounded line per problem.

        pydantic's own descriptions of the model's mistake (missing, extra, wrong type,
        out of bounds) and a ``PydanticCustomError``'s message are sent; what a custom
        validator of the tool's own types raised is sent only when it is model-visible
        (``message_for_model()``). Otherwise the line says the value was rejected, and
        the validation error becomes the result's hidden cause: logged, never sent.
        """
        properties = self.parameters.get("properties", {})
        allowed = bounded(", ".join(properties) or "no arguments", _LIST_LIMIT)
        problems: list[str] = []
        withheld = False
        raised: BaseException | None = None  # the first withheld validator's exception
        for detail in error.errors(include_url=False)[:_MAX_PROBLEMS]:
            loc = detail["loc"]
            kind = detail["type"]
            if not loc:
                if kind == "json_invalid":
                    reason = bounded(detail["msg"].removeprefix("Invalid JSON: "), _LINE_LIMIT)
                    problems.append(
                        f"the arguments are not valid JSON ({reason}); send one JSON object"
                    )
                else:
                    problems.append(
                        f"the arguments must be a JSON object, got {excerpt(detail['input'])}"
                    )
                continue
            name = str(loc[0])
            shown, path = excerpt(name), excerpt(".".join(str(part) for part in loc))
            if kind == "extra_forbidden" and len(loc) == 1:
                if name in self.injected:
                    problems.append(f"{shown}: set by the application; it cannot be sent")
                else:
                    problems.append(f"{shown}: unexpected argument; this tool accepts: {allowed}")
            elif kind == "missing" and len(loc) == 1:
                expected = _kind(properties.get(name, {}))
                problems.append(f"{shown}: missing required argument ({expected})")
            else:
                said = self._said(kind, detail)
                if said is None and not withheld:
                    withheld = True
                    cause = detail.get("ctx", {}).get("error")
                    raised = cause if isinstance(cause, BaseException) else None
                problems.append(f"{path}: {said or _REJECTED}, got {excerpt(detail['input'])}")
        hidden = error.error_count() - len(problems)
        if hidden > 0:
            problems.append(f"... and {hidden} more")
        message = f"Invalid arguments for tool '{self.tool}':\n" + "\n".join(
            f"- {problem}" for problem in problems
        )
        invalid = InvalidArguments(message, tool=self.tool, problems=tuple(problems))
        invalid.__suppress_context__ = True
        if withheld:  # the validators' own words: logged with the result, never sent
            invalid.__cause__ = error
            if raised is not None and error.__cause__ is None:
                # pydantic keeps only the validator exception's text; chaining the
                # exception itself logs its own causes too
                error.__cause__ = raised
        return invalid

    def _said(self, kind: str, detail: Any) -> str | None:
        """What a problem's line may say about it, or ``None`` when that is withheld."""
        if kind in _RAISED_BY_VALIDATORS:
            cause = detail.get("ctx", {}).get("error")
            if not isinstance(cause, BaseException):
                return None
            visible = model_message(cause, self.tool)
            return None if visible is None else bounded(utf8(visible), _LINE_LIMIT)
        return bounded(utf8(detail["msg"]).rstrip("."), _LINE_LIMIT)


# --- the arguments ------------------------------------------------------------------


def missing_framework_value(tool: str, parameter: FrameworkParameter) -> str:
    """What to do about a framework's parameter that nothing supplied."""
    return (
        f"tool {tool!r} takes {parameter.framework}'s {parameter.kind} (parameter "
        f"{parameter.name!r}), "
        f"which only {parameter.framework} supplies, when it runs the tool: run it through "
        f"toolguard.integrations for {parameter.framework}, or give the parameter a default"
    )


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
        check_docs(function, tool, [param.name for param in params])
    if skip_first and params:
        params = params[1:]

    fields: dict[str, Any] = {}
    defaults: dict[str, Any] = {}
    positional: list[str] = []
    call_id_params: list[str] = []
    context_params: list[str] = []
    framework_params: list[FrameworkParameter] = []
    extra: Literal["forbid", "allow"] = "forbid"
    for index, param in enumerate(params):
        if param.kind is param.VAR_POSITIONAL:
            raise ToolDefinitionError(
                f"tool {tool!r}: *{param.name} is not supported; a model sends named arguments"
            )
        if param.kind is param.VAR_KEYWORD:
            extra = "allow"
            continue
        annotation = hints.get(param.name, Any)
        metadata = getattr(annotation, "__metadata__", ())
        if param.kind is param.POSITIONAL_ONLY:
            positional.append(param.name)
        if any(_is_marker(m, InjectedCallId) for m in metadata):
            call_id_params.append(param.name)
            continue
        if any(_is_marker(m, Injected) for m in metadata):
            context_params.append(param.name)
            continue
        marked = framework_of(annotation)
        if marked is not None:
            framework_params.append(
                FrameworkParameter(
                    name=param.name,
                    framework=marked[0],
                    marker=marked[1],
                    kind=marked[2],
                    annotation=annotation,
                    index=index,
                    has_default=param.default is not param.empty,
                )
            )
            continue
        try:
            annotation = pydantic_ready(annotation)
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
            if param.default is not None and not accepts_none(annotation):
                annotation = Annotated[annotation, null_means_default(param.default)]
            fields[param.name] = NotRequired[annotation]
            defaults[param.name] = param.default

    make_typed_dict: Any = TypedDict  # built from the signature: a runtime-only TypedDict
    arguments_type = make_typed_dict(f"{tool}_arguments", fields)
    arguments_type.__pydantic_config__ = pydantic.ConfigDict(extra=extra, allow_inf_nan=False)
    try:
        adapter = pydantic.TypeAdapter(arguments_type)
        schema = adapter.json_schema(schema_generator=_ArgumentsSchema)
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
        validator=adapter.validator,  # type: ignore[arg-type]  # pydantic types it as Any-like
        positional=tuple(positional),
        call_id_params=tuple(call_id_params),
        context_params=tuple(context_params),
        framework=tuple(framework_params),
    )


class _ArgumentsSchema(pydantic.json_schema.GenerateJsonSchema):
    """pydantic's JSON Schema, the same on every supported pydantic: a nested stdlib
    dataclass (an attrs class's stand-in too) is closed, since it rejects other keys
    when validated, and described by its own docstring. pydantic 2.14 does both itself;
    before it, neither."""

    def dataclass_schema(self, schema: Any) -> Any:
        json_schema = super().dataclass_schema(schema)
        cls = schema["cls"]
        if hasattr(cls, "__pydantic_config__") or json_schema.get("type") != "object":
            return json_schema  # a pydantic dataclass says for itself
        json_schema.setdefault("additionalProperties", False)
        doc = cls.__doc__
        # a dataclass without a docstring is given its signature as one: not a description
        if "description" not in json_schema and doc and not doc.startswith(f"{cls.__name__}("):
            json_schema["description"] = inspect.cleandoc(doc)
        return json_schema


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
