"""Check produced dicts against the provider SDKs' own types."""

from __future__ import annotations

import json
from typing import Any, Literal

import pydantic


def conforms(sdk_type: Any, value: Any, *, mode: Literal["json", "python"] = "json") -> None:
    """``value`` is a valid ``sdk_type`` (a TypedDict, model or union), with no key the
    type does not know, at any depth.

    ``TypeAdapter`` validates ``Iterable`` fields lazily and ignores unknown keys of
    TypedDicts, so the value is also dumped (in JSON mode, which consumes and
    validates every item) and compared with the original: an unknown key or a
    coerced value would make them differ. ``mode="python"`` keeps bytes as bytes.
    """
    adapter = pydantic.TypeAdapter(sdk_type)
    validated = adapter.validate_python(value)
    dumped = adapter.dump_python(validated, mode=mode, by_alias=True, warnings="error")
    expected = json.loads(json.dumps(value)) if mode == "json" else value
    assert dumped == expected, (dumped, value)


def model_round_trip(
    model: type[pydantic.BaseModel], value: dict[str, Any], *, by_alias: bool
) -> Any:
    """``value`` parses as the SDK model and dumps back exactly (keys spelt as
    ``by_alias`` says): no field was unknown, dropped, renamed or coerced."""
    parsed = model.model_validate(value)
    dumped = parsed.model_dump(mode="python", by_alias=by_alias, exclude_unset=True)
    assert dumped == value, (dumped, value)
    return parsed
