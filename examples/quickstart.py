"""The README's quickstart: decorate tools, dispatch a model's calls, read results.

Run from the root of a clone::

    python3 -m venv .venv && .venv/bin/pip install -e .
    .venv/bin/python examples/quickstart.py

(offline; no LLM is called)
"""

from __future__ import annotations

from toolguard import Dispatcher, ToolCall, ToolError, tool
from toolguard.handlers import on


class WeatherServiceDown(Exception):
    pass


@tool(on_error=on(TimeoutError, "The weather service is slow; try again in a minute."))
def weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: The city name, e.g. "Paris".
    """
    if city == "Atlantis":
        raise ToolError("Atlantis is not a real city. Ask the user for another one.")
    if city == "Oslo":
        raise WeatherServiceDown("HTTP 503 from http://10.0.0.7:8080/?key=abc123")
    return f"Sunny in {city}"


@tool(return_direct=True)
def final_answer(text: str) -> str:
    """Give the user the final answer and stop."""
    return text


agent = Dispatcher([weather, final_answer])

round_ = agent.run(
    [
        ToolCall(name="weather", arguments='{"city": "Paris"}', id="call_1"),
        ToolCall(name="weather", arguments={"city": "Atlantis"}, id="call_2"),
        ToolCall(name="weather", arguments={"city": "Oslo"}, id="call_3"),
        ToolCall(name="wether", arguments={"city": "Rome"}, id="call_4"),
    ]
)
for result in round_.results:
    print(f"{result.call_id} error={result.is_error}: {result.content}")

assert round_.results[0].content == "Sunny in Paris"
assert round_.results[1].content.startswith("Atlantis is not a real city")
assert "abc123" not in round_.results[2].content  # hidden, logged with an error id
assert round_.results[2].error_id in round_.results[2].content
assert "did you mean 'weather'" in round_.results[3].content
assert not round_.stop

last = agent.run([ToolCall(name="final_answer", arguments={"text": "Paris is sunny."}, id="c5")])
assert last.stop and last.final is not None
print("final:", last.final.content)
agent.close()
