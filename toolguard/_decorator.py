"""``@tool`` and :class:`Tool`, built on ``wrapt``.

The decorated function stays a normal function: calling it runs it unchanged
(same signature, result and exceptions). What ``@tool`` adds lives beside it: a
:class:`ToolSpec` (name, description, schema, validator, policy) built once, at
decoration, and ``invoke``/``ainvoke`` for one guarded call.

``@tool`` must be the outermost decorator, above ``@staticmethod`` and
``@classmethod``. On an instance method, the schema leaves ``self`` out and the
dispatcher needs the tool bound to an instance (``Dispatcher([obj.method])``).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Mapping
from typing import (
    TYPE_CHECKING,
    Any,
    Concatenate,
    Final,
    ParamSpec,
    Protocol,
    TypeAlias,
    TypeVar,
    overload,
)

import attrs
import wrapt
from typing_extensions import Unpack

from toolguard._guard import Guard
from toolguard._policy import AGENT_DEFAULTS, PolicyOptions, ToolPolicy, policy_from_options
from toolguard._pools import Pools
from toolguard._runner import Runner
from toolguard._schema import Arguments, build_arguments, describe
from toolguard._values import ToolCall, ToolResult
from toolguard.errors import ToolDefinitionError

__all__ = ["AnyTool", "BoundTool", "Tool", "ToolSpec", "runner_for", "tool", "tool_table"]

P = ParamSpec("P")
P2 = ParamSpec("P2")
R = TypeVar("R")
R2 = TypeVar("R2")
T = TypeVar("T")

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@attrs.frozen(kw_only=True)
class ToolSpec:
    """Everything ``@tool`` learnt about a function, computed once."""

    name: str
    description: str
    policy: ToolPolicy
    arguments: Arguments
    is_async: bool
    is_method: bool = False
    docs: dict[str, str] = attrs.field(factory=dict, repr=False)
    strict: bool = False
    strict_parameters: dict[str, Any] | None = attrs.field(default=None, repr=False)


def _passthrough(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    return wrapped(*args, **kwargs)


class _ToolAPI:
    """The tool-facing API shared by :class:`Tool` and its bound form.

    It declares no class-level annotation: one would shadow the wrapped function's
    ``__annotations__`` (frameworks read a tool's annotations to build their schema).
    """

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def description(self) -> str:
        return self.spec.description

    @property
    def policy(self) -> ToolPolicy:
        return self.spec.policy

    @property
    def parameters(self) -> dict[str, Any]:
        """JSON Schema of the arguments the model may send."""
        return self.spec.arguments.parameters

    @property
    def spec(self) -> ToolSpec:
        spec: ToolSpec = self._self_spec  # type: ignore[attr-defined]  # set by Tool
        return spec

    def _runner(self) -> Runner:
        """A one-tool runner: the tool's policy over the global defaults."""
        guard = Guard((), {self.name: self.policy})
        workers, abandoned = AGENT_DEFAULTS["max_workers"], AGENT_DEFAULTS["max_abandoned"]
        return runner_for(tool_table([self]), guard, workers, abandoned)  # type: ignore[list-item]

    def invoke(
        self, arguments: ToolCall | dict[str, Any] | str | None = None, *, context: Any = None
    ) -> ToolResult:
        """One guarded call under the global defaults (no agent level)."""
        return self._runner().dispatch(self._as_call(arguments), None, context, None)

    async def ainvoke(
        self, arguments: ToolCall | dict[str, Any] | str | None = None, *, context: Any = None
    ) -> ToolResult:
        """Async :meth:`invoke`."""
        return await self._runner().adispatch(self._as_call(arguments), None, context, None, False)

    def _as_call(self, arguments: ToolCall | dict[str, Any] | str | None) -> ToolCall:
        if isinstance(arguments, ToolCall):
            return arguments
        return ToolCall(name=self.name, arguments=arguments)


class BoundTool(_ToolAPI, wrapt.BoundFunctionWrapper[P, R]):
    """A :class:`Tool` looked up on an instance or a class (a bound method)."""


class Tool(_ToolAPI, wrapt.FunctionWrapper[P, R]):
    """What ``@tool`` returns: the function, unchanged when called, plus its spec."""

    __bound_function_wrapper__ = BoundTool  # type: ignore[assignment]

    def __init__(self, wrapped: Callable[P, R], spec: ToolSpec) -> None:
        super().__init__(wrapped, _passthrough)
        self._self_spec = spec

    def __reduce_ex__(self, protocol: Any) -> str:
        """Pickle by reference, like a function: ``module.qualname``."""
        return str(self.__qualname__)

    def _runner(self) -> Runner:
        cached: Runner | None = getattr(self, "_self_runner", None)
        if cached is None:
            cached = super()._runner()
            self._self_runner = cached
        return cached

    if TYPE_CHECKING:
        # Bound to an instance (or, for a class method, its class) the first parameter
        # is taken. A static method read on an instance is typed as bound too (mypy
        # cannot tell it apart): a limit of the annotation, not of the runtime.
        @overload
        def __get__(
            self: Tool[Concatenate[T, P2], R2], instance: T, owner: type[Any] | None = None, /
        ) -> BoundTool[P2, R2]: ...
        @overload
        def __get__(self, instance: None, owner: type[Any] | None = None, /) -> BoundTool[P, R]: ...
        def __get__(self, instance: Any, owner: type[Any] | None = None, /) -> Any: ...

    def __set_name__(self, owner: type, name: str) -> None:
        """Set on a class: an instance method's ``self`` leaves the schema (when its
        qualified name did not already tell, at decoration)."""
        set_name = getattr(self.__wrapped__, "__set_name__", None)
        if set_name is not None:
            set_name(owner, name)
        spec = self._self_spec
        if self._self_binding == "function" and not spec.is_method:
            arguments = build_arguments(  # the docstring was checked at decoration
                self.__wrapped__,
                tool=spec.name,
                skip_first=True,
                docs=spec.docs,
                check_docstring=False,
            )
            self._self_spec = attrs.evolve(
                spec,
                arguments=arguments,
                is_method=True,
                strict_parameters=(
                    _strict_parameters(arguments, spec.name) if spec.strict else None
                ),
            )


def _defined_in_class(function: Any) -> bool:
    """A plain function written in a class body (its qualified name says so)."""
    if not inspect.isfunction(function):
        return False
    parts = function.__qualname__.split(".")
    return len(parts) >= 2 and parts[-2] != "<locals>"


def _strict_parameters(arguments: Arguments, tool: str) -> dict[str, Any]:
    from toolguard._strict import strict_schema

    return strict_schema(arguments.parameters, tool=tool)


def _build(
    function: Any,
    *,
    name: str | None,
    description: str | None,
    check_docstring: bool,
    strict: bool,
    options: Mapping[str, Any],
) -> Tool[Any, Any]:
    target = function
    skip_first = False
    if isinstance(function, classmethod):
        target, skip_first = function.__func__, True
    elif isinstance(function, staticmethod):
        target = function.__func__
    elif _defined_in_class(function):
        skip_first = True  # an instance method: `self` is not the model's to send
    if not callable(target):
        raise ToolDefinitionError(f"@tool decorates a function or method, got {function!r}")
    tool_name = name if name is not None else getattr(target, "__name__", "")
    if not isinstance(tool_name, str) or not _NAME.match(tool_name):
        raise ToolDefinitionError(
            f"tool name {tool_name!r} is not allowed; providers accept 1-64 characters "
            "from A-Z, a-z, 0-9, '_' and '-'"
        )
    if inspect.isasyncgenfunction(target) or inspect.isgeneratorfunction(target):
        raise ToolDefinitionError(
            f"tool {tool_name!r}: generators are not supported; return the whole result"
        )
    policy = policy_from_options(options, where=f"tool {tool_name!r}", also=TOOL_OPTIONS)
    summary, docs = describe(target)
    if description is not None and not isinstance(description, str):
        raise ToolDefinitionError(f"tool {tool_name!r}: description must be a str")
    if not isinstance(strict, bool):
        raise ToolDefinitionError(f"tool {tool_name!r}: strict must be True or False")
    arguments = build_arguments(
        target,
        tool=tool_name,
        skip_first=skip_first,
        docs=docs,
        check_docstring=check_docstring,
    )
    spec = ToolSpec(
        name=tool_name,
        description=description if description is not None else summary,
        policy=policy,
        arguments=arguments,
        is_async=inspect.iscoroutinefunction(target),
        is_method=skip_first,
        docs=docs,
        strict=strict,
        strict_parameters=_strict_parameters(arguments, tool_name) if strict else None,
    )
    return Tool(function, spec)


TOOL_OPTIONS: Final = ("name", "description", "check_docstring", "strict")
"""``tool()``'s own options, beside the policy fields (named in a bad option's error)."""


class _Decorate(Protocol):
    """What ``tool(name=..., ...)`` returns: the decorator."""

    def __call__(self, function: Callable[P, R], /) -> Tool[P, R]: ...


@overload
def tool(
    function: Callable[P, R],
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    check_docstring: bool = True,
    strict: bool = False,
    **options: Unpack[PolicyOptions],
) -> Tool[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    check_docstring: bool = True,
    strict: bool = False,
    **options: Unpack[PolicyOptions],
) -> _Decorate: ...


def tool(
    function: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    check_docstring: bool = True,
    strict: bool = False,
    **options: Unpack[PolicyOptions],
) -> Tool[P, R] | _Decorate:
    """Declare a function as a tool: ``@tool`` or ``@tool(name=..., on_error=...)``.

    Options are the :class:`~toolguard.ToolPolicy` fields: ``on_error`` (a handler,
    a handler's name, a fixed message or a callable), ``on_invalid_call`` (the same,
    for the model's invalid arguments and unknown tool names), ``return_direct``
    (``False``, ``True``, ``"always"`` or a predicate on the result), ``log_level``, ``redact``,
    ``max_result_chars``, ``timeout``, ``retries``, ``breaker``, ``max_model_retries``,
    ``model_retries_exhausted`` (see :class:`~toolguard.ToolPolicy`). A bad
    option fails here, at import time, with :class:`~toolguard.InvalidOption` naming the
    tool, the closest allowed name and every allowed one.
    ``check_docstring=False`` accepts a docstring with a malformed section or an
    argument the signature lacks (checked by default). ``strict=True`` asks for a
    strict-mode schema (OpenAI ``strict: true``) and fails here when the signature
    cannot be expressed strictly.
    """
    if function is not None:
        return _build(
            function,
            name=name,
            description=description,
            check_docstring=check_docstring,
            strict=strict,
            options=options,
        )

    def decorate(fn: Callable[P2, R2]) -> Tool[P2, R2]:
        return _build(
            fn,
            name=name,
            description=description,
            check_docstring=check_docstring,
            strict=strict,
            options=options,
        )

    return decorate


AnyTool: TypeAlias = "Tool[..., Any] | BoundTool[..., Any]"


def tool_table(candidates: Iterable[Callable[..., Any]]) -> dict[str, AnyTool]:
    """An agent's tools by name: ``@tool`` functions, bound tools, plain functions
    (decorated here). An unbound instance method or a repeated name is refused."""
    table: dict[str, AnyTool] = {}
    for candidate in candidates:
        if not isinstance(candidate, Tool | BoundTool):
            if not callable(candidate):
                raise ToolDefinitionError(f"Dispatcher takes tools or functions, got {candidate!r}")
            candidate = tool(candidate)
        spec = candidate.spec
        if (
            spec.is_method
            and candidate._self_binding == "function"
            and (not isinstance(candidate, BoundTool) or candidate._self_instance is None)
        ):
            raise ToolDefinitionError(
                f"tool {spec.name!r} is an instance method; pass it bound to an instance "
                f"(Dispatcher([obj.{candidate.__name__}]))"
            )
        if spec.name in table:
            raise ToolDefinitionError(
                f"two tools are named {spec.name!r}; tool names must be unique"
            )
        table[spec.name] = candidate
    return table


def runner_for(
    table: Mapping[str, AnyTool], guard: Guard, max_workers: int, max_abandoned: int
) -> Runner:
    """A runner of these tools, answering through ``guard``, with its own pools."""
    return Runner(
        guard,
        [(name, t.__wrapped__, t.spec.arguments, t.spec.is_async) for name, t in table.items()],
        Pools(max_workers, max_abandoned),
        {name: t.spec.description for name, t in table.items()},
    )
