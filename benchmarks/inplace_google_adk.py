"""Google ADK's own tool call, unguarded and guarded by ``plugins=[ToolguardPlugin(...)]``.

ADK has no public way to run one tool call on its own: its tool calls happen inside
a runner's turn (``_caller`` runs the plugins' and the agent's tool callbacks around
``tool.run_async``). The path timed is therefore one whole turn of ADK's own
``InMemoryRunner`` on a scripted ``BaseLlm`` (one function call, then the model asked
again), each in a new session: the guard's cost is the difference, diluted by the
turn around it (event building, session appends, the session's creation). The
failure's unguarded side is ADK's own: the tool's exception fails the run (caught
here); guarded, one hidden failure of the core, answered as ``{"error": text}``, and
the model asked again. ADK installs only in its own environment: run
``.venv-google-adk/bin/python benchmarks/compare.py --only inplace_google_adk_ok_unguarded,...``.
"""

from __future__ import annotations

import itertools
from typing import Any

from _peers import ARGS, Bench, Namespace, RunAsync, Suite, does


def _setup(run: RunAsync) -> Namespace:
    from google.adk.agents import LlmAgent
    from google.adk.apps import App
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from toolguard import Dispatcher
    from toolguard.integrations.google_adk import ToolguardPlugin

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def crash(a: int, b: int) -> int:
        """Add two integers (fails)."""
        raise ConnectionError("orders-db at postgres://admin:s3cret@db refused")

    class Calls(BaseLlm):
        """Calls ``tool`` when the last content is the user's, else answers."""

        model: str = "scripted"
        tool: str = "add"

        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
            if llm_request.contents[-1].role == "user" and not any(
                p.function_response for p in llm_request.contents[-1].parts or ()
            ):
                asked = types.FunctionCall(name=self.tool, args=ARGS)
                parts = [types.Part(function_call=asked)]
            else:
                parts = [types.Part(text="done")]
            yield LlmResponse(content=types.Content(role="model", parts=parts))

    def runner(tool: Any, guarded: bool) -> Any:
        plugins = [ToolguardPlugin(Dispatcher([], external_tools=["add", "crash"]))]
        agent = LlmAgent(name="a", model=Calls(tool=tool.__name__), tools=[tool])
        made = InMemoryRunner(
            app=App(name="bench", root_agent=agent, plugins=plugins if guarded else [])
        )
        run(made.session_service.create_session(app_name="bench", user_id="u", session_id="s"))
        return made

    message = types.Content(role="user", parts=[types.Part(text="go")])

    sessions = itertools.count()

    async def turn(made: Any) -> str:
        """One turn in a new session (a session's events would pile up across batches);
        what ended it: the last event's text, or the exception's type."""
        session = f"s{next(sessions)}"
        await made.session_service.create_session(app_name="bench", user_id="u", session_id=session)
        last = None
        try:
            async for event in made.run_async(user_id="u", session_id=session, new_message=message):
                last = event
        except Exception as error:
            return type(error).__name__
        return "".join(p.text or "" for p in last.content.parts) if last and last.content else ""

    return {
        "adk_turn": turn,
        "adk_ok": runner(add, False),
        "adk_ok_g": runner(add, True),
        "adk_crash": runner(crash, False),
        "adk_crash_g": runner(crash, True),
    }


ADK_VALIDATES = "ADK's FunctionTool (missing arguments)"

SUITE = Suite(
    group="inplace-google-adk",
    module="google.adk",
    versions=("google-adk",),
    description="one InMemoryRunner turn (a function call, then the model again) per call",
    benches=(
        Bench(
            key="inplace_google_adk_ok_unguarded",
            label="google-adk: turn with a tool call, success (unguarded)",
            stmt="await adk_turn(adk_ok)",
            is_async=True,
            check="(await adk_turn(adk_ok)) == 'done'",
            does=does(ADK_VALIDATES, "fails the run", "nothing", "the function response"),
        ),
        Bench(
            key="inplace_google_adk_ok_guarded",
            label="google-adk: turn with a tool call, success (guarded)",
            stmt="await adk_turn(adk_ok_g)",
            is_async=True,
            vs="inplace_google_adk_ok_unguarded",
            check="(await adk_turn(adk_ok_g)) == 'done'",
            does=does(ADK_VALIDATES, "the handler chain armed", "nothing", "the function response"),
        ),
        Bench(
            key="inplace_google_adk_failure_unguarded",
            label="google-adk: turn with a tool call, failure (unguarded: the run fails)",
            stmt="await adk_turn(adk_crash)",
            is_async=True,
            check="(await adk_turn(adk_crash)) == 'ConnectionError'",
            does=does(ADK_VALIDATES, "the exception ends the run", "ADK's own", "-"),
        ),
        Bench(
            key="inplace_google_adk_failure_guarded",
            label="google-adk: turn with a tool call, failure (guarded: hidden)",
            stmt="await adk_turn(adk_crash_g)",
            is_async=True,
            vs="inplace_google_adk_failure_unguarded",
            check="(await adk_turn(adk_crash_g)) == 'done'",
            does=does(
                ADK_VALIDATES,
                "hidden: {'error': toolguard's message with an error id}",
                "once (tool_error_hidden)",
                "the function response; the model asked again",
            ),
        ),
    ),
    setup=_setup,
)
