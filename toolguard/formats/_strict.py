"""Moved to :mod:`toolguard._strict` (strict mode is checked at decoration)."""

from toolguard._strict import strict_schema

__all__ = ["strict_schema"]
