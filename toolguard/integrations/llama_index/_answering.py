"""What both kinds of toolguard's LlamaIndex tools share.

Both are ``FunctionTool`` s as far as LlamaIndex's agents can tell, so that the agent
hands them its workflow ``Context`` (``_call_tool`` injects it only into a
``FunctionTool`` that ``requires_context``): toolguard needs it for the
conversation's session and the model step, and a tool that takes ``Context`` itself
gets it as before.

``return_direct``. LlamaIndex reads ``tool.metadata.return_direct`` once per call,
right after awaiting ``tool.acall`` in the same task, and stops the run when that flag
is set and the output is not an error. The flag is static in LlamaIndex; here
``metadata`` answers with toolguard's decision about the call that just ran in the
current task (a context variable set by ``acall``), so a stop is decided per call: on
success only, and as a predicate says.
"""

from __future__ import annotations

import base64
import inspect
from contextvars import ContextVar
from typing import Any, Final

from llama_index.core.base.llms.types import ContentBlock, ImageBlock, TextBlock
from llama_index.core.tools import FunctionTool, ToolMetadata
from llama_index.core.workflow import Context

from toolguard import Image, Text

__all__ = ["CTX", "Answering", "blocks"]

CTX: Final = "_toolguard_ctx"  # the parameter the agent fills with its Context

# (tool, stop?) for the call the current task just ran; see the module docstring.
_DECISION: ContextVar[tuple[object, bool] | None] = ContextVar(
    "toolguard_llama_index_decision", default=None
)


def blocks(content: str | tuple[Text | Image, ...]) -> list[ContentBlock]:
    """toolguard's content as LlamaIndex content blocks."""
    if isinstance(content, str):
        return [TextBlock(text=content)]
    return [
        ImageBlock(image=base64.b64decode(block.data), image_mimetype=block.media_type)
        if isinstance(block, Image)
        else TextBlock(text=block.text)
        for block in content
    ]


class Answering(FunctionTool):
    """A ``FunctionTool`` whose ``acall``/``call`` are toolguard's (not LlamaIndex's
    ``fn`` machinery), taking the agent's ``Context`` as ``ctx_name``."""

    def __init__(self, metadata: ToolMetadata, ctx_name: str) -> None:
        async def enter(**kwargs: Any) -> Any:  # what FunctionTool.fn stands for
            return await self.acall(**kwargs)

        enter.__signature__ = inspect.Signature(  # type: ignore[attr-defined]  # read by inspect
            [inspect.Parameter(ctx_name, inspect.Parameter.KEYWORD_ONLY, annotation=Context)]
        )
        super().__init__(async_fn=enter, metadata=metadata)
        self._declared = metadata
        self._decided = {
            stop: ToolMetadata(
                description=metadata.description,
                name=metadata.name,
                fn_schema=metadata.fn_schema,
                return_direct=stop,
            )
            for stop in (False, True)
        }

    @property
    def metadata(self) -> ToolMetadata:
        """The tool's metadata; inside the task that just called it, with toolguard's
        ``return_direct`` decision about that call."""
        decided = _DECISION.get()
        if decided is not None and decided[0] is self:
            return self._decided[decided[1]]
        return self._declared

    @property
    def tool_name(self) -> str:
        return self._declared.get_name()

    def decide(self, stop: bool) -> None:
        """toolguard's ``return_direct`` decision about the call the current task ran."""
        _DECISION.set((self, stop))
