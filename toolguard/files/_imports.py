"""Import paths, ``package.module:attribute.attribute``: parsed and resolved once.

Policy files name handlers, predicates and exceptions this way, and the command line
names an agent (``MODULE:ATTR``). Both read a path with :func:`resolve`, which raises
:class:`ImportPathError` saying what went wrong, in data; each caller words it for
its own reader.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from typing import Any, Final, Literal

__all__ = ["IMPORT_PATH", "ImportPathError", "import_module", "resolve"]

IMPORT_PATH: Final = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
"""``package.module:attribute.attribute``: a dotted module, a colon, dotted attributes."""


class ImportPathError(Exception):
    """Why an import path names nothing.

    ``kind`` is ``"syntax"`` (not an import path), ``"missing"`` (no such module:
    ``missing`` is the name Python could not find), ``"failed"`` (importing the module
    raised ``error``), or ``"attribute"`` (``owner`` has no ``attributes[index]``;
    ``public`` lists what it does have).
    """

    def __init__(
        self,
        kind: Literal["syntax", "missing", "failed", "attribute"],
        *,
        module: str = "",
        attributes: Sequence[str] = (),
        index: int = 0,
        missing: str = "",
        error: BaseException | None = None,
        public: Sequence[str] = (),
    ) -> None:
        super().__init__(kind)
        self.kind = kind
        self.module = module
        self.attributes = tuple(attributes)
        self.index = index
        self.missing = missing
        self.error = error
        self.public = tuple(public)

    @property
    def attribute(self) -> str:
        """The attribute that is missing (``kind == "attribute"``)."""
        return self.attributes[self.index]


def import_module(name: str) -> Any:
    """``importlib.import_module(name)``, failures as :class:`ImportPathError`."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        missing = error.name or ""
        if missing and (name == missing or name.startswith(missing + ".")):
            raise ImportPathError("missing", module=name, missing=missing) from None
        raise ImportPathError("failed", module=name, error=error) from error
    except (Exception, SystemExit) as error:  # the module's own bug, reported
        raise ImportPathError("failed", module=name, error=error) from error


def resolve(path: str) -> Any:
    """The object ``path`` (``"package.module:attr.attr"``) names."""
    if not IMPORT_PATH.fullmatch(path):
        raise ImportPathError("syntax")
    module_name, _, dotted = path.partition(":")
    attributes = dotted.split(".")
    value = import_module(module_name)
    for index, attribute in enumerate(attributes):
        if not hasattr(value, attribute):
            public = [name for name in dir(value) if not name.startswith("_")]
            raise ImportPathError(
                "attribute", module=module_name, attributes=attributes, index=index, public=public
            )
        value = getattr(value, attribute)
    return value
