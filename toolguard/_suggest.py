""" "Did you mean" suggestions for misspelt names, at a cost independent of how many.

:func:`did_you_mean` is difflib's closest match. For an agent's tool names, which a
model may miss on every call, :class:`Names` keeps an index of their three-letter
pieces: only the :data:`CANDIDATES` names sharing the most pieces with the word are
compared with difflib, and pieces shared by too many names to tell them apart are not
looked at. So a miss costs about the same with ten tools or ten thousand.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Final

__all__ = ["CANDIDATES", "Names", "did_you_mean"]

CANDIDATES: Final = 2  # names compared with difflib, once the index narrowed them down
_COMMON: Final = 256  # a piece in more names than this tells nothing
_PIECES: Final = 6  # the word's rarest pieces looked up
_LISTED: Final = 20  # names a message lists before saying how many more there are


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` for the closest choice, or ``""`` when none is close."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _pieces(word: str) -> set[str]:
    padded = f"  {word.lower()} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


class Names:
    """A fixed list of names: suggestions and a bounded listing, computed cheaply."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)
        shown = ", ".join(self.names[:_LISTED]) or "none"
        more = len(self.names) - _LISTED
        self.listing = f"{shown} (and {more} more)" if more > 0 else shown
        self._index: dict[str, list[int]] | None = None

    def did_you_mean(self, word: str) -> str:
        """As :func:`did_you_mean`, over these names."""
        return did_you_mean(word, self._candidates(word))

    def _candidates(self, word: str) -> list[str]:
        index = self._index
        if index is None:
            index = {}
            for position, name in enumerate(self.names):
                for piece in _pieces(name):
                    index.setdefault(piece, []).append(position)
            self._index = index
        found = [index.get(piece) for piece in _pieces(word[:64])]
        # the rarest pieces tell names apart best; the commonest are not looked at
        rare = sorted((p for p in found if p is not None and len(p) <= _COMMON), key=len)
        hits: list[int] = []
        for postings in rare[:_PIECES]:
            hits += postings
        shared = Counter(hits)  # counted in one go, in C
        return [self.names[position] for position, _ in shared.most_common(CANDIDATES)]
