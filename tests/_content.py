"""Typed access to a result's content for the tests that compare it as text."""

from __future__ import annotations

from toolguard import ToolResult


def str_content(result: ToolResult) -> str:
    """``result.content``, asserted to be a plain string (not a tuple of content blocks)."""
    assert isinstance(result.content, str), f"expected str content, got {result.content!r}"
    return result.content
