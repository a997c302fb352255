"""toolguard.formats imports no provider SDK: it works with every SDK unimportable."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import sys
    SDKS = ("openai", "anthropic", "google", "google.genai", "mcp", "mcp_types")
    for name in SDKS:
        sys.modules[name] = None  # any import of it now fails

    from toolguard import Dispatcher, ToolCall, tool
    from toolguard.formats import anthropic, gemini, mcp, openai

    @tool
    def add(a: int, b: int) -> int:
        return a + b

    d = Dispatcher([add])
    function = {"name": "add", "arguments": '{"a": 1, "b": 2}'}
    message = {"role": "assistant", "tool_calls": [{"id": "c1", "function": function}]}
    round_ = d.run(openai.parse_calls(message))
    assert openai.messages(round_) == [{"role": "tool", "tool_call_id": "c1", "content": "3"}]
    for module in (openai, anthropic, gemini, mcp):
        assert module.tools(d)
    assert anthropic.message(round_)["content"][0]["content"] == "3"
    assert gemini.parts(round_)[0]["function_response"]["response"] == {"output": "3"}
    assert mcp.call_result(round_.results[0])["content"] == [{"type": "text", "text": "3"}]
    loaded = [name for name in SDKS if sys.modules.get(name) is not None]
    assert loaded == [], loaded
    print("ok")
    """
)


def test_formats_work_with_every_provider_sdk_unimportable() -> None:
    completed = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "ok"


def test_the_core_does_not_import_formats() -> None:
    code = "import sys, toolguard; print('toolguard.formats' in sys.modules)"
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert completed.stdout.strip() == "False", completed.stderr
