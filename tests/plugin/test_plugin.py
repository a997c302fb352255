"""The pytest plugin (``toolguard.pytest_plugin``), tested in a separate pytest run.

The plugin is registered by the ``pytest11`` entry point once toolguard is installed
with it; these runs load it explicitly (``-p toolguard.pytest_plugin``), so they
pass whether or not the entry point is installed.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

PLUGIN = ("-p", "toolguard.pytest_plugin", "-p", "no:cacheprovider")


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester directory whose runs load only toolguard's plugin.

    Other installed plugins are not auto-loaded (faster, and it shows the plugin needs
    nothing else); warnings are errors, as in this repository, but one: these runs are
    in this process, which has imported the plugin already. Where the installer's
    record does not list the plugin's file (uv's editable install, in ``.ci/lowest``),
    pytest could not rewrite its asserts then and warns that it cannot now.
    """
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeini(
        """
        [pytest]
        filterwarnings =
            error
            ignore:Module already imported so cannot be rewritten.*toolguard
        """
    )
    return pytester


def test_toolguard_events_captures_the_hidden_failure(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import structlog
        from toolguard import Dispatcher, ToolCall, tool
        from toolguard.testing import assert_logged_once, assert_not_leaked

        @tool
        def lookup(order: int) -> str:
            raise ConnectionError("password=hunter2")

        def test_hidden(toolguard_events):
            structlog.get_logger("other").info("not ours")
            result = Dispatcher([lookup]).dispatch(
                ToolCall(name="lookup", arguments={"order": 1}, id="c1")
            )
            assert_not_leaked(result, "hunter2")
            event = assert_logged_once(toolguard_events, result)
            assert event["event"] == "tool_error_hidden"
            assert event["log_level"] == "warning"
            assert [e["event"] for e in toolguard_events] == ["tool_error_hidden"]

        def test_each_test_starts_empty(toolguard_events):
            assert toolguard_events == []
        """
    )
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(passed=2)


def test_toolguard_events_sees_a_logger_the_application_cached_before_it(
    pytester: pytest.Pytester,
) -> None:
    """structlog's production set-up caches a logger on its first use: toolguard's own,
    once it logged in an earlier test, kept the application's pipeline and the fixture
    saw nothing ("logged 0 times", only when run after another test). Run in a process
    of its own: the cache would otherwise stay in this one."""
    pytester.makeconftest(
        """
        import structlog

        def pytest_configure(config):
            structlog.configure(
                processors=[structlog.processors.JSONRenderer()],
                cache_logger_on_first_use=True,
            )
        """
    )
    pytester.makepyfile(
        """
        from toolguard import Dispatcher, ToolCall, tool
        from toolguard.testing import assert_logged_once

        @tool
        def lookup(order: int) -> str:
            raise ConnectionError("down")

        AGENT = Dispatcher([lookup])

        def test_first_logs_outside_any_capture():
            AGENT.dispatch(ToolCall(name="lookup", arguments={"order": 1}))

        def test_then_the_fixture_captures(toolguard_events):
            result = AGENT.dispatch(ToolCall(name="lookup", arguments={"order": 2}))
            assert_logged_once(toolguard_events, result)
        """
    )
    pytester.runpytest_subprocess(*PLUGIN).assert_outcomes(passed=2)


def test_toolguard_defaults_resets_configure_around_each_test(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        import toolguard
        from toolguard import Dispatcher, ToolCall, tool

        @tool
        def boom() -> str:
            raise RuntimeError("no")

        def test_sets_a_global_message(toolguard_defaults):
            toolguard_defaults(on_error="global says no ({error_id})")
            result = Dispatcher([boom]).dispatch(ToolCall(name="boom"))
            assert result.content.startswith("global says no")

        def test_the_next_test_sees_the_built_in_again(toolguard_defaults):
            assert toolguard.get_config() == toolguard.ToolPolicy()
            result = Dispatcher([boom]).dispatch(ToolCall(name="boom"))
            assert "internal error" in result.content

        def test_configure_leaking_from_before_is_reset(toolguard_defaults):
            assert toolguard.get_config() == toolguard.ToolPolicy()
        """
    )
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(passed=3)


def test_a_leak_fails_the_users_test_with_a_masked_message(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from toolguard import Dispatcher, ToolCall, tool
        from toolguard.handlers import send_exception_message
        from toolguard.testing import assert_not_leaked

        @tool(on_error=send_exception_message)
        def lookup(order: int) -> str:
            raise ConnectionError("password=hunter2")

        def test_leaks(toolguard_events):
            result = Dispatcher([lookup]).dispatch(ToolCall(name="lookup", arguments={"order": 1}))
            assert_not_leaked(result, "hunter2")
        """
    )
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the secret leaked at .content*<SECRET>*"])


def test_the_fixtures_are_listed_with_their_documentation(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*PLUGIN, "--fixtures")
    result.stdout.fnmatch_lines(
        [
            "*toolguard_events*",
            "*toolguard's structlog events during the test*",
            "*toolguard_defaults*",
            "*Reset ``toolguard.configure()`` around the test*",
        ]
    )


def test_a_scripted_model_drives_an_agent_loop_in_a_users_suite(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        from toolguard import Dispatcher, tool
        from toolguard.formats import openai as tg_openai
        from toolguard.testing import ScriptedModel, assert_logged_once, assert_not_leaked

        @tool
        def lookup(order: int) -> str:
            if order == 13:
                raise KeyError("api_key=sk-123")
            return f"order {order} shipped"

        def test_loop(toolguard_events):
            model = ScriptedModel([[("lookup", {"order": 42}), ("lookup", {"order": 13})], "ok"])
            agent = Dispatcher([lookup])
            history = []
            while True:
                reply = model.chat.completions.create(messages=history)
                calls = tg_openai.parse_calls(reply)
                if not calls:
                    break
                round_ = agent.run(calls)
                history += tg_openai.messages(round_)
            model.assert_finished()
            assert_not_leaked(history, "sk-123")
            assert_logged_once(toolguard_events, round_.results[1])
        """
    )
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(passed=1)


def test_without_the_plugin_the_fixtures_do_not_exist(pytester: pytest.Pytester) -> None:
    """What provides the fixtures is the plugin, nothing else in toolguard."""
    pytester.makepyfile(
        """
        import toolguard.testing

        def test_needs_it(toolguard_events):
            pass
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fixture 'toolguard_events' not found*"])


def test_an_installed_entry_point_names_the_plugin_module() -> None:
    """Once pyproject declares it, ``pytest11`` maps ``toolguard`` to this module."""
    from importlib.metadata import entry_points

    import toolguard.pytest_plugin

    ours = [e for e in entry_points(group="pytest11") if e.value.startswith("toolguard")]
    for entry in ours:
        assert entry.name == "toolguard"
        assert entry.load() is toolguard.pytest_plugin
