"""toolguard for Semantic Kernel (``pip install "toolguard-agents[semantic-kernel]"``).

Two pieces, usable together or apart::

    from toolguard.integrations.semantic_kernel import as_kernel_functions, guard

    dispatcher = Dispatcher([search], external_tools=["orders-lookup_order"])
    guard(kernel, dispatcher)  # the kernel's own functions, guarded in place
    kernel.add_functions("tools", as_kernel_functions(dispatcher))  # toolguard's tools

* :func:`guard` puts a kernel's functions under a dispatcher's policy, in place, for
  every function the model calls through the kernel's auto function calling (a chat
  service's ``FunctionChoiceBehavior.Auto()``, a ``ChatCompletionAgent``). For a function
  that raises, Semantic Kernel tells the model ``An error occurred while invoking the
  function {plugin-function}: {exc}``: the exception's text, secrets and all. Guarded,
  the dispatcher's handler chain answers instead, as the ``FunctionResult`` Semantic
  Kernel's own answer is (a ``ToolError``'s message as it is, a hidden cause as
  toolguard's generic message with its error id, the cause logged once). It is two of
  the kernel's own filters (:class:`ToolguardFilters`): ``AUTO_FUNCTION_INVOCATION``
  and ``FUNCTION_INVOCATION``.
* :func:`as_kernel_function` turns a toolguard ``@tool`` into a Semantic Kernel
  ``KernelFunction``: toolguard's schema, toolguard's validation, every call answered
  by toolguard.

Names. A function is known by its fully qualified name, as the model calls it and as
Semantic Kernel's own answer names it: ``{plugin}-{function}`` (``orders-lookup_order``;
overrides may name a plugin's functions with a glob, ``orders-*``).

Conversations. The ``ChatHistory`` the model's calls are added to is one toolguard
session (the same history reused turn after turn is one conversation; a
``ChatCompletionAgent`` builds a new history from its thread for each invocation, so
each invocation is one), and each model message is one model step, so breakers and
model-retry budgets work across a conversation.

``return_direct`` is Semantic Kernel's own ``terminate`` of auto function calling: the
round ends and the function results are the answer, as a filter setting
``context.terminate`` ends it; by default on success only, across a round of parallel
calls by the dispatcher's ``return_direct_mode``. It needs toolguard's filters, so a
toolguard tool that may stop joins a kernel through ``guard(kernel, dispatcher,
plugin=...)``; :func:`as_kernel_function` refuses it (``ToolDefinitionError``), never
ignores it.

Semantic Kernel answers every exception of a function itself; what must reach the
application (a handler's ``ToolCallFailed``, control flow) is raised again by
toolguard's auto filter, above Semantic Kernel's handler.

What Semantic Kernel answers itself stays Semantic Kernel's: a function name the model
invented, and missing or unexpected arguments, are answered before any filter runs. An
argument Semantic Kernel cannot parse to the parameter's type is the model's mistake:
guarded, toolguard's message names it. The application's own ``kernel.invoke(...)`` of
a function is not a model's call: it passes as it is (its exceptions reach the caller).
"""

from __future__ import annotations

from typing import Any

try:
    from semantic_kernel import Kernel
    from semantic_kernel.filters import FilterTypes
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolguard.integrations.semantic_kernel needs semantic-kernel: "
        'pip install "toolguard-agents[semantic-kernel]"'
    ) from error

from toolguard import BoundTool, Dispatcher, Tool, ToolDefinitionError
from toolguard.integrations._common import guarded, refuse_return_direct, the_dispatcher
from toolguard.integrations.semantic_kernel._filters import ToolguardFilters, refuse_sync_timeout
from toolguard.integrations.semantic_kernel._functions import ToolguardKernelFunction

__all__ = [
    "ToolguardFilters",
    "ToolguardKernelFunction",
    "as_kernel_function",
    "as_kernel_functions",
    "guard",
]


def guard(
    kernel: Kernel, dispatcher: Dispatcher | None = None, *, plugin: str | None = None
) -> Kernel:
    """``kernel``'s functions under ``dispatcher``'s policy, in place; ``kernel`` itself.

    ``guard(kernel, dispatcher)``: the one line to add to an existing app, before the
    kernel runs. Each function the model calls keeps its name, schema, arguments and
    behaviour (its state, its ``FunctionResult``, Semantic Kernel's other filters); what
    changes is the answer to a failure: the dispatcher's handler chain for the
    function's fully qualified name (overrides by name or glob, agent defaults and
    policy files; name the functions in ``external_tools=`` so overrides may name them
    exactly), hidden causes logged once with the error id the model sees. A function's
    ``retries`` and ``timeout`` apply to its invocation (a ``timeout`` for a sync
    function is refused, ``ToolDefinitionError``: Semantic Kernel runs it on the event
    loop), and ``return_direct`` ends the round (Semantic Kernel's ``terminate``). With
    ``plugin=``, the dispatcher's own tools join the kernel as that plugin
    (:func:`as_kernel_function`, ``return_direct`` included). Without a dispatcher, an
    empty one under the global defaults. A kernel is guarded once
    (``ToolDefinitionError`` for a second guard).
    """
    if not isinstance(kernel, Kernel):
        raise TypeError(
            f"guard(kernel, dispatcher) takes a semantic_kernel Kernel, got "
            f"{type(kernel).__name__}: pass the kernel the chat service or agent runs with"
        )
    dispatcher = the_dispatcher(dispatcher, entry="guard(kernel, dispatcher)", optional=True)
    if plugin is not None and (not isinstance(plugin, str) or not plugin):
        raise TypeError(
            f"guard(kernel, dispatcher, plugin=...) takes a plugin name, got {plugin!r}"
        )
    if any(
        isinstance(getattr(each, "__self__", None), ToolguardFilters)
        for _, each in kernel.function_invocation_filters
    ):
        raise ToolDefinitionError(
            "this kernel is already guarded: call guard(kernel, dispatcher) once, with the "
            "one dispatcher for its functions"
        )
    for functions in kernel.plugins.values():
        for function in functions:
            refuse_sync_timeout(dispatcher, function)
    if plugin is not None:
        kernel.add_functions(
            plugin, [ToolguardKernelFunction(dispatcher, name) for name in dispatcher.tools]
        )
    filters = ToolguardFilters(dispatcher)
    kernel.add_filter(FilterTypes.AUTO_FUNCTION_INVOCATION, filters.auto_function_invocation)
    kernel.add_filter(FilterTypes.FUNCTION_INVOCATION, filters.function_invocation)
    return kernel


def as_kernel_function(
    tool: Tool[..., Any] | BoundTool[..., Any] | Any | str,
    *,
    dispatcher: Dispatcher | None = None,
) -> ToolguardKernelFunction:
    """A Semantic Kernel ``KernelFunction`` that runs ``tool`` under toolguard.

    Guarantees, for every call the model makes through a kernel:

    * the model sees toolguard's JSON Schema (each parameter's ``schema_data``);
      toolguard validates the arguments, so a bad call gets toolguard's message naming
      the argument, and the tool does not run;
    * failures are answered by the dispatcher's handler chain, toolguard's text as the
      ``FunctionResult``'s value; only control flow and ``ToolCallFailed`` escape;
    * a success's value is what the tool returned (its text, where the content was cut);
    * a parameter annotated ``InjectedCallId`` gets the model's call id;
    * on a kernel guarded by :func:`guard`, the call belongs to its conversation;
    * ``return_direct`` is refused here: see the module docstring.

    Add it with ``kernel.add_function("plugin", function)`` or
    ``kernel.add_functions("plugin", as_kernel_functions(dispatcher))``. Without
    ``dispatcher``, the tool runs in a one-tool dispatcher under the global defaults
    and its own policy; with one, ``tool`` (or its name) must be one of that
    dispatcher's tools.
    """
    dispatcher, name = guarded(tool, dispatcher, adapter="as_kernel_function")
    refuse_return_direct(
        dispatcher,
        name,
        why="needs toolguard's filters on the kernel (Semantic Kernel's terminate): add "
        "the dispatcher's tools with guard(kernel, dispatcher, plugin='...') instead",
    )
    return ToolguardKernelFunction(dispatcher, name)


def as_kernel_functions(dispatcher: Dispatcher) -> list[ToolguardKernelFunction]:
    """Every tool of ``dispatcher`` as a Semantic Kernel function, in declaration order."""
    dispatcher = the_dispatcher(dispatcher, entry="as_kernel_functions(dispatcher)")
    return [as_kernel_function(name, dispatcher=dispatcher) for name in dispatcher.tools]
