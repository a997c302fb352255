"""``@tool`` and :class:`Tool`, built on ``wrapt``: the public face of one tool.

The decorated function stays a normal function: calling it runs it unchanged
(same signature, result and exceptions). What ``@tool`` adds lives beside it: a
:class:`~toolguard.schema._spec.ToolSpec` (name, description, schema, validator,
policy), built once, at decoration, by ``toolguard.schema``; and ``invoke``/``ainvoke``
for one guarded call, through a one-tool runner (``toolguard.runner``). Like the
``Dispatcher``, it composes the halves; what a tool declares knows nothing of them.

``@tool`` must be the outermost decorator, above ``@staticmethod`` and
``@classmethod``. On an instance method, the schema leaves ``self`` out and the
dispatcher needs the tool bound to an instance (``Dispatcher([obj.method])``).
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable, Iterable, Mapping
from typing import (
    TYPE_CHECKING,
    Any,
    Concatenate,
    ParamSpec,
    Protocol,
    TypeAlias,
    TypeVar,
    overload,
)

import wrapt
from typing_extensions import Unpack

from toolguard._values import ToolCall, ToolResult
from toolguard.errors import ToolDefinitionError
from toolguard.guard._guard import Guard
from toolguard.policy._agent import AGENT_DEFAULTS
from toolguard.policy._values import PolicyOptions, ToolPolicy
from toolguard.runner._pipeline import Runner
from toolguard.runner._pools import Pools
from toolguard.schema._spec import ToolSpec, as_method, build_spec

__all__ = ["AnyTool", "BoundTool", "Tool", "ToolSpec", "runner_for", "tool", "tool_table"]

P = ParamSpec("P")
P2 = ParamSpec("P2")
R = TypeVar("R")
R2 = TypeVar("R2")
T = TypeVar("T")


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

    def injected_by(
        self, framework: str, *, call_id: bool = False, context: bool = False
    ) -> dict[str, str]:
        """The parameters ``framework`` fills when it runs this tool, by name, each with
        the kind of its injection type (``ToolContext``, ``Agent``), for an integration
        that hands ``framework``'s values over (``framework_values=``).

        Every other injected parameter is refused here, in one wording, with
        :class:`~toolguard.errors.ToolDefinitionError` naming it: another framework's
        injection type (only that framework supplies it), and the call id
        (``InjectedCallId``) or application context (``Injected``) unless ``call_id``
        / ``context`` say ``framework`` hands them over.
        """
        arguments = self.spec.arguments
        for parameter in arguments.framework:
            if parameter.framework != framework:
                raise ToolDefinitionError(
                    f"tool {self.name!r} takes {parameter.framework}'s {parameter.kind} "
                    f"(parameter {parameter.name!r}), which {framework} cannot supply: run "
                    f"the tool through toolguard.integrations for {parameter.framework}, or "
                    "drop the parameter"
                )
        for kind, params, supplied in (
            ("the call id", arguments.call_id_params, call_id),
            ("application context", arguments.context_params, context),
        ):
            if params and not supplied:
                raise ToolDefinitionError(
                    f"tool {self.name!r} takes {kind} (parameter {params[0]!r}), which "
                    f"{framework} does not hand a tool: drop the parameter"
                )
        return {p.name: p.kind for p in arguments.framework}

    def _runner(self) -> Runner:
        """A one-tool runner: the tool's policy over the global defaults."""
        guard = Guard((), {self.name: self.policy})
        workers, abandoned = AGENT_DEFAULTS["max_workers"], AGENT_DEFAULTS["max_abandoned"]
        return runner_for(tool_table([self]), guard, workers, abandoned)  # type: ignore[list-item]  # _ToolAPI is a Tool or BoundTool

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

    __bound_function_wrapper__ = BoundTool  # type: ignore[assignment]  # wrapt's hook, typed narrower

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
        if self._self_binding == "function" and not self._self_spec.is_method:
            self._self_spec = as_method(self._self_spec, self.__wrapped__)


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
    spec = functools.partial(
        build_spec,
        name=name,
        description=description,
        check_docstring=check_docstring,
        strict=strict,
        options=options,
    )
    if function is not None:
        return Tool(function, spec(function))

    def decorate(fn: Callable[P2, R2]) -> Tool[P2, R2]:
        return Tool(fn, spec(fn))

    return decorate


AnyTool: TypeAlias = "Tool[..., Any] | BoundTool[..., Any]"


def tool_table(candidates: Iterable[Callable[..., Any]]) -> dict[str, AnyTool]:
    """An agent's tools by name: ``@tool`` functions, bound tools, plain functions
    (decorated here). An unbound instance method or a repeated name is refused."""
    table: dict[str, AnyTool] = {}
    for candidate in candidates:
        if isinstance(candidate, types.MethodType) and isinstance(candidate.__func__, Tool):
            # @classmethod above @tool, read on Python 3.13+: a method of the Tool
            raise _below("classmethod", candidate.__func__)
        if not isinstance(candidate, Tool | BoundTool):
            if not callable(candidate):
                raise ToolDefinitionError(_not_a_tool(candidate))
            candidate = tool(candidate)
        spec = candidate.spec
        if spec.is_method and candidate._self_binding == "function":
            instance = candidate._self_instance if isinstance(candidate, BoundTool) else None
            if isinstance(instance, type):  # bound to a class: @classmethod above @tool
                raise _below("classmethod", candidate)
            if instance is None:
                if _is_static(candidate):
                    raise _below("staticmethod", candidate)
                raise ToolDefinitionError(
                    f"tool {spec.name!r} is an instance method; pass it bound to an instance "
                    f"(Dispatcher([obj.{candidate.__name__}])). For a static or class method, "
                    "put @tool above @staticmethod or @classmethod"
                )
        if spec.name in table:
            raise ToolDefinitionError(
                f"two tools are named {spec.name!r}; tool names must be unique"
            )
        table[spec.name] = candidate
    return table


def _below(decorator: str, candidate: Any) -> ToolDefinitionError:
    return ToolDefinitionError(
        f"tool {candidate.spec.name!r} is under @{decorator}: put @tool above @{decorator} "
        "(@tool is the outermost decorator)"
    )


def _is_static(candidate: AnyTool) -> bool:
    """Whether the class ``candidate`` was defined in holds it as a ``staticmethod``
    (``@staticmethod`` above ``@tool``); the class is found by the function's qualified
    name, when that leads to it."""
    function = candidate.__wrapped__
    owner: Any = inspect.getmodule(function)
    *path, name = getattr(function, "__qualname__", "").split(".")
    for part in path:
        owner = getattr(owner, part, None) if part != "<locals>" else None
        if owner is None:
            return False
    held = vars(owner).get(name) if isinstance(owner, type) else None
    return isinstance(held, staticmethod) and held.__func__ is candidate


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


def _not_a_tool(candidate: object) -> str:
    """What to write instead of ``candidate`` among a Dispatcher's tools."""
    given = type(candidate).__name__
    name = getattr(candidate, "name", None)
    if isinstance(name, str):  # a framework's own tool: LangChain's, the Agents SDK's...
        return (
            f"Dispatcher takes tools or functions, got a {given} ({name!r}), a framework's "
            "own tool: guard it in place with that framework's integration "
            f"(docs/integrations/), and name it with Dispatcher(external_tools=[{name!r}]) "
            "for its policy"
        )
    return f"Dispatcher takes tools or functions, got {given}"
