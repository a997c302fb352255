""" "Did you mean" suggestions for misspelt names, at a cost independent of how many.

:func:`did_you_mean` is difflib's closest match. For an agent's tool names, which a
model may miss on every call, :class:`Names` keeps an index of their three-letter
pieces. From each of the word's :data:`_SEEDS` rarest pieces, the names holding it
are narrowed by each further piece in turn (rarest first; a piece that would leave
none, the typo's own, is passed over), by set intersection in C, and the first
:data:`CANDIDATES` left are compared with difflib. A piece held by more than
:data:`_SEED_LIMIT` names tells too little to start from. So a miss costs about the
same with ten tools or ten thousand, and a slip among thousands of alike names still
finds its own.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Final

from toolguard._text import NAME_LIMIT

__all__ = ["CANDIDATES", "Names", "did_you_mean"]

CANDIDATES: Final = 2  # names compared with difflib from each seed, once narrowed down
_SEEDS: Final = 2  # the word's rarest pieces each narrowing starts from
_SEED_LIMIT: Final = 256  # a piece in more names than this is no place to start
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
        self._index: dict[str, frozenset[int]] | None = None

    def did_you_mean(self, word: str) -> str:
        """As :func:`did_you_mean`, over these names."""
        return did_you_mean(word, self._candidates(word))

    def _candidates(self, word: str) -> list[str]:
        index = self._index
        if index is None:
            positions: dict[str, list[int]] = {}
            for position, name in enumerate(self.names):
                for piece in _pieces(name):
                    positions.setdefault(piece, []).append(position)
            index = self._index = {piece: frozenset(p) for piece, p in positions.items()}
        found = [holders for holders in map(index.get, _pieces(word[:NAME_LIMIT])) if holders]
        found.sort(key=len)  # the rarest pieces tell names apart best
        picked: set[int] = set()
        for seed in found[:_SEEDS]:
            if len(seed) > _SEED_LIMIT:
                break
            left = seed
            for holders in found:
                narrower = left & holders  # in C, over the smaller set
                if narrower:  # else a piece of the typo's own: passed over
                    left = narrower
                    if len(left) <= CANDIDATES:
                        break
            picked.update(sorted(left)[:CANDIDATES])
        return [self.names[position] for position in sorted(picked)]
