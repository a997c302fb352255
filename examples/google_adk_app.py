"""An existing Google ADK app, guarded by toolguard with one added line.

The app is written the ADK way: plain functions as tools (one using ADK's
``ToolContext`` and session state), an ``LlmAgent``, an ``App`` and a runner. The
line marked ``# toolguard`` is all that changes: without it, the database error
below fails the whole run (and ADK's ``ReflectAndRetryToolPlugin`` would send its
text, password included, to the model). With it, the model is told a generic
message with an error id, the cause is logged once with that id, and the
``ToolError`` the author wrote for the model arrives as written.

Offline: a scripted ``BaseLlm`` stands in for Gemini (ADK's own extension point
for models). Google ADK needs an environment of its own (it pins ``google-genai<3``,
which the test extra excludes); from the root of a clone::

    python3 -m venv .venv-google-adk && .venv-google-adk/bin/pip install -e ".[google-adk]"
    .venv-google-adk/bin/python examples/google_adk_app.py
"""

# example-environment: google.adk

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from pydantic import Field
from structlog.testing import capture_logs

from toolguard import ToolError
from toolguard.integrations.google_adk import ToolguardPlugin

# --- the app's tools, as they were ---------------------------------------------------


def order_status(order_id: int, tool_context: ToolContext) -> dict[str, Any]:
    """Look an order up.

    Args:
        order_id: The order number.
    """
    if order_id == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    if order_id == 7:
        raise ConnectionError("pg://shop:hunter2@db.internal refused the connection")
    tool_context.state["last_order"] = order_id
    return {"order": order_id, "status": "shipped"}


# --- a scripted model standing in for Gemini --------------------------------------------


class ScriptedGemini(BaseLlm):
    model: str = "scripted"
    script: list[list[types.Part]] = Field(default_factory=list)
    seen: list[str] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        for content in llm_request.contents[-1:]:
            for part in content.parts or ():
                if part.function_response is not None:
                    self.seen.append(
                        f"{part.function_response.name}: {part.function_response.response}"
                    )
        yield LlmResponse(
            content=types.Content(role="model", parts=self.script.pop(0)),
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=1, candidates_token_count=1, total_token_count=2
            ),
        )


def lookup(order_id: int) -> types.Part:
    return types.Part(
        function_call=types.FunctionCall(name="order_status", args={"order_id": order_id})
    )


model = ScriptedGemini(
    script=[
        [lookup(7), lookup(42), lookup(3)],
        [types.Part(text="Order 3 has shipped; I could not check the others.")],
    ]
)
agent = LlmAgent(name="shop_assistant", model=model, tools=[order_status])
app = App(
    name="shop",
    root_agent=agent,
    plugins=[ToolguardPlugin()],  # toolguard: the one added line
)


async def main() -> None:
    runner = InMemoryRunner(app=app)
    session = await runner.session_service.create_session(app_name="shop", user_id="ann")
    message = types.Content(role="user", parts=[types.Part(text="Where are my orders?")])
    with capture_logs() as logs:
        events = [
            event
            async for event in runner.run_async(
                user_id="ann", session_id=session.id, new_message=message
            )
        ]
    print("The model was told:")
    for line in model.seen:
        print("  ", line)
    [hidden] = [e for e in logs if e["event"] == "tool_error_hidden"]
    print(f"Logged once, for the operator: error id {hidden['error_id']}: {hidden['exc_info']!r}")
    final = events[-1].content
    assert final is not None and final.parts is not None
    print("Final answer:", final.parts[0].text)
    assert not any("hunter2" in line for line in model.seen)
    assert any(hidden["error_id"] in line for line in model.seen)
    assert any("There is no order 42" in line for line in model.seen)


if __name__ == "__main__":
    asyncio.run(main())
