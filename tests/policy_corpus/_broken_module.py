"""A module that fails while it is imported (named by a corpus file's import path)."""

raise RuntimeError("this module fails on import")
