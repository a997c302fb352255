"""The frame locals of a logged traceback, with what toolguard redacts masked.

A renderer that shows locals (structlog's ``ConsoleRenderer`` with rich, its
``dict_tracebacks``, rich's own ``Traceback``, Sentry) reads ``frame.f_locals`` of
every frame of the exception's traceback, of its ``__cause__``/``__context__`` chain
and of an exception group's members. A tool's frame holds its arguments, so an
argument redacted in the event's ``arguments`` field would be printed in clear there.

:func:`mask_locals` gives each frame that holds a secret a *stand-in*: a frame of a
generated function whose code has the original's file, name and line (and the columns
of the expression that failed), and whose locals are the original's with the secret
ones replaced by ``[redacted]``. The exception keeps its identity (``exc_info`` is the
exception itself) and its traceback's shape; only the frames that hold a secret are
stand-ins. Real frames are never written to: a frame's locals cannot be rewritten
portably (3.11 and 3.12 copy them, 3.13 writes through), and a closure may share them.

A local is secret when its name is a key toolguard redacts (``api_key``, ``X-Api-Key``)
or its value holds, searched through containers, objects' fields and an exception's
``args``: a key or attribute so named, or text or a number held under such a name (in
the call's arguments, or in any frame's locals). Work is bounded: a value too large to
search is masked.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import keyword
import types
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Final

from toolguard.guard._redaction import REDACTED, Secrets

__all__ = ["mask_locals"]

_NODES: Final = 2_000  # parts of one local's value searched before it is masked unsearched
_TOTAL: Final = 200_000  # parts of one traceback's locals searched; past it all are masked
_DEPTH: Final = 50

# read through the descriptors: an exception class may override attribute access
_TRACEBACK: Final = BaseException.__dict__["__traceback__"]
_CAUSE: Final = BaseException.__dict__["__cause__"]
_CONTEXT: Final = BaseException.__dict__["__context__"]
_ARGS: Final = BaseException.__dict__["args"]
_MEMBERS: Final = BaseExceptionGroup.__dict__["exceptions"]

# values whose repr shows no data of theirs: not searched
_NAMES_ONLY: Final = (
    types.ModuleType,
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.CodeType,
    types.FrameType,
    types.TracebackType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
)


class _Budget:
    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left


class _Search:
    """What is secret among a traceback's locals: names by the redaction rule, and the
    texts and numbers held under such names (collected first, then looked for)."""

    def __init__(self, secrets: Secrets) -> None:
        self.secret_key: Callable[[str], bool] = secrets.is_secret_key
        self.texts: set[str] = set(secrets.texts) if secrets.found else set()
        self.numbers: set[int | float] = set(secrets.numbers) if secrets.found else set()
        self.total = _Budget(_TOTAL)

    # --- the parts of a value -------------------------------------------------------

    def _parts(self, value: Any) -> Iterator[tuple[str | None, Any]] | None:
        """``(name or None, part)`` of a container or an object; ``None`` for a leaf."""
        if isinstance(value, _LEAVES):
            return None
        if isinstance(value, dict):
            return (
                (key if type(key) is str else None, item)
                for pair in dict.items(value)
                for key, item in ((None, pair[0]), pair)
            )
        if isinstance(value, list | tuple | set | frozenset | deque):
            return ((None, item) for item in value)
        if isinstance(value, _NAMES_ONLY):
            return None
        if isinstance(value, types.MethodType):
            return iter(((None, value.__self__),))
        if isinstance(value, functools.partial):
            return iter(((None, value.args), (None, value.keywords), (None, value.func)))
        return _fields(value)

    def _spend(self, budget: _Budget) -> bool:
        budget.left -= 1
        self.total.left -= 1
        return budget.left < 0 or self.total.left < 0

    # --- first pass: what is held under secret names ----------------------------------

    def collect(self, name: str, value: Any) -> None:
        """Remember the texts and numbers ``value`` holds under secret names (``name``
        itself, or a key or attribute inside it)."""
        budget = _Budget(_NODES)
        stack: list[tuple[Any, int, bool]] = [(value, 0, self.secret_key(name))]
        while stack and not self._spend(budget):
            item, depth, secret = stack.pop()
            if secret:
                self._remember(item)
            if depth >= _DEPTH:
                continue
            parts = self._parts(item)
            if parts is None:
                continue
            for part_name, part in itertools.islice(parts, _NODES):
                hidden = secret or (part_name is not None and self.secret_key(part_name))
                stack.append((part, depth + 1, hidden))

    def _remember(self, value: Any) -> None:
        kind = type(value)
        if kind is str and value:
            self.texts.add(value)
        elif kind is bytes and value:
            self.texts.add(value.decode("utf-8", "replace"))
        elif (kind is int and value.bit_length() <= 64) or kind is float:
            self.numbers.add(value)
            self.texts.add(repr(value))

    # --- second pass: does a value show one? ------------------------------------------

    def holds(self, name: str, value: Any) -> bool:
        """Whether a renderer showing ``name = value`` could show a secret."""
        if self.secret_key(name):
            return True
        budget = _Budget(_NODES)
        stack: list[tuple[Any, int]] = [(value, 0)]
        while stack:
            if self._spend(budget):
                return True  # too large to search: masked
            item, depth = stack.pop()
            if self._leaf_shows(item):
                return True
            if depth >= _DEPTH:
                return True
            parts = self._parts(item)
            if parts is None:
                continue
            searched = False
            for part_name, part in itertools.islice(parts, _NODES):
                if part_name is not None and self.secret_key(part_name):
                    return True
                stack.append((part, depth + 1))
                searched = True
            if not searched and not isinstance(item, _CONTAINERS) and self._repr_shows(item):
                return True
        return False

    def _leaf_shows(self, item: Any) -> bool:
        kind = type(item)
        if kind is str:
            return any(text in item for text in self.texts)
        if kind is int or kind is float:
            return item in self.numbers or (
                (kind is float or item.bit_length() <= 64) and repr(item) in self.texts
            )
        if kind is bytes or kind is bytearray:
            return any(text.encode("utf-8", "replace") in item for text in self.texts)
        return False

    def _repr_shows(self, item: Any) -> bool:
        """An object with no fields to search (a C type's): its ``repr``, as a renderer
        would show it; one that cannot be rendered shows nothing."""
        if item is None or type(item) is bool or not self.texts:
            return False
        try:
            text = repr(item)
        except Exception:  # noqa: BLE001 - a renderer shows no data of it either
            return False
        return type(text) is str and any(
            form in text for secret in self.texts for form in (secret, repr(secret)[1:-1])
        )


_LEAVES: Final = (str, bytes, bytearray, int, float, complex, type(None))
_CONTAINERS: Final = (*_LEAVES, dict, list, tuple, set, frozenset, deque)


def _fields(value: Any) -> Iterator[tuple[str | None, Any]]:
    """An object's attributes (its ``__dict__`` and slots) and an exception's ``args``,
    read without calling the object's own attribute hooks."""
    try:
        own = object.__getattribute__(value, "__dict__")
    except Exception:  # noqa: BLE001 - no __dict__, or a hostile one
        own = None
    if isinstance(own, dict):
        for key, item in list(dict.items(own)):
            yield (key if type(key) is str else None), item
    for cls in type(value).__mro__:
        for slot, descriptor in list(vars(cls).items()):
            if type(descriptor) is types.MemberDescriptorType:
                try:
                    yield slot, descriptor.__get__(value, cls)
                except Exception:  # noqa: BLE001 - an unset slot
                    continue
    if isinstance(value, BaseException):
        yield None, _ARGS.__get__(value)


# --- the exceptions and frames a renderer shows ----------------------------------------------


def _exceptions(error: BaseException) -> list[BaseException]:
    """``error``, its causes and contexts, and a group's members, at any depth (iteratively:
    a group nested a thousand deep is walked without recursion), each once."""
    found: list[BaseException] = []
    seen: set[int] = set()
    stack = [error]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        found.append(current)
        for linked in (_CAUSE.__get__(current), _CONTEXT.__get__(current)):
            if isinstance(linked, BaseException):
                stack.append(linked)
        if isinstance(current, BaseExceptionGroup):
            stack.extend(m for m in _MEMBERS.__get__(current) if isinstance(m, BaseException))
    return found


def _entries(error: BaseException) -> list[types.TracebackType]:
    entries = []
    tb = _TRACEBACK.__get__(error)
    while isinstance(tb, types.TracebackType):
        entries.append(tb)
        tb = tb.tb_next
    return entries


def _locals_of(frame: types.FrameType) -> dict[str, Any]:
    try:
        return dict(frame.f_locals)
    except Exception:  # noqa: BLE001 - a frame whose locals cannot be read shows none
        return {}


def mask_locals(error: BaseException, secrets: Secrets) -> None:
    """Give every frame of ``error``'s traceback (and its chain's, and its members') that
    holds a secret local a stand-in with those locals ``[redacted]``.

    Never raises: should masking itself fail, the chain's tracebacks are dropped (the
    event then says what failed, not where) rather than logged with a secret.
    """
    try:
        _mask(error, secrets)
    except Exception:  # noqa: BLE001 - a secret stays hidden whatever went wrong
        with contextlib.suppress(Exception):
            for exception in _exceptions(error):
                _TRACEBACK.__set__(exception, None)


def _mask(error: BaseException, secrets: Secrets) -> None:
    search = _Search(secrets)
    chain = [(exception, _entries(exception)) for exception in _exceptions(error)]
    frames: dict[int, tuple[types.FrameType, dict[str, Any]]] = {}
    for _, entries in chain:
        for tb in entries:
            frames.setdefault(id(tb.tb_frame), (tb.tb_frame, _locals_of(tb.tb_frame)))
    for _, values in frames.values():
        for name, value in values.items():
            search.collect(name, value)
    masked: dict[int, dict[str, Any]] = {}
    for key, (_, values) in frames.items():
        secret = [name for name, value in values.items() if search.holds(name, value)]
        if secret:
            masked[key] = {**values, **dict.fromkeys(secret, REDACTED)}
    if not masked:
        return
    stand_ins: dict[tuple[int, int], tuple[types.FrameType, int]] = {}
    for exception, entries in chain:
        if not any(id(tb.tb_frame) in masked for tb in entries):
            continue
        rebuilt: types.TracebackType | None = None
        for tb in reversed(entries):
            frame, lasti = tb.tb_frame, tb.tb_lasti
            shown = masked.get(id(frame))
            if shown is not None:
                place = (id(frame), lasti)
                if place not in stand_ins:
                    stand_ins[place] = _stand_in(frame, lasti, tb.tb_lineno, shown)
                frame, lasti = stand_ins[place]
            rebuilt = types.TracebackType(rebuilt, frame, lasti, tb.tb_lineno)
        _TRACEBACK.__set__(exception, rebuilt)


# --- stand-in frames ---------------------------------------------------------------------------

_WIDTH: Final = 3  # "0/0", the narrowest expression that raises


def _position(code: types.CodeType, lasti: int) -> tuple[int, int, int, int] | None:
    """``(line, end line, column, end column)`` of the instruction at ``lasti``."""
    if lasti < 0:
        return None
    found = next(itertools.islice(code.co_positions(), lasti // 2, None), None)
    if found is None or None in found:
        return None
    return found  # type: ignore[return-value]  # no None in it


@functools.lru_cache(maxsize=256)
def _stand_in_code(names: tuple[str, ...], column: int, lines: int, end: int) -> types.CodeType:
    """A function of ``names`` that raises ``ZeroDivisionError`` on its second line, at
    ``column`` to ``end`` on the line ``lines`` further (a line number is set per use)."""
    if lines == 0:
        expression = " " * column + "0/" + " " * (max(end - column, _WIDTH) - _WIDTH) + "0"
    else:
        expression = " " * column + "0/" + "\n" * lines + " " * max(end - 1, 0) + "0"
    source = f"def stand_in({', '.join(names)}): (\n{expression})\n"
    module = compile(source, "<toolguard stand-in>", "exec", dont_inherit=True)
    return next(c for c in module.co_consts if isinstance(c, types.CodeType))


def _stand_in(
    frame: types.FrameType, lasti: int, lineno: int | None, values: dict[str, Any]
) -> tuple[types.FrameType, int]:
    """A frame at ``frame``'s place (file, function, line, columns) whose locals are
    ``values``, and the instruction index a traceback entry for it gives."""
    code = frame.f_code
    position = _position(code, lasti)
    line = lineno if lineno is not None else frame.f_lineno
    if position is not None and position[0] == line:
        shape = (position[2], position[1] - position[0], position[3])
    else:
        shape = (0, 0, _WIDTH)
    names = tuple(n for n in values if n.isidentifier() and not keyword.iskeyword(n))
    try:
        stand_in = _stand_in_code(names, *shape)
    except (SyntaxError, ValueError, RecursionError):  # a name compile() refuses: no locals
        stand_in, names = _stand_in_code((), *shape), ()
    stand_in = stand_in.replace(
        co_filename=code.co_filename,
        co_name=code.co_name,
        co_qualname=code.co_qualname,
        co_firstlineno=max((line or 1) - 1, 0),
    )
    return _raised_in(types.FunctionType(stand_in, frame.f_globals), [values[n] for n in names])


def _raised_in(function: types.FunctionType, arguments: list[Any]) -> tuple[types.FrameType, int]:
    """The frame ``function`` raised in, and its instruction index."""
    try:
        function(*arguments)
    except ZeroDivisionError as raised:
        entry = raised.__traceback__.tb_next  # type: ignore[union-attr]  # it raised here
        assert entry is not None
        return entry.tb_frame, entry.tb_lasti
    raise AssertionError("a stand-in always raises")  # pragma: no cover
