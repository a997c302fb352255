"""Tool declarations: signature + docstring -> JSON Schema, and its strict form.

Pins: docstring descriptions in the Google, NumPy and Sphinx styles; a malformed
section or a documented argument missing from the signature is an error naming the
tool and the argument, unless ``check_docstring=False``; defaults, enums,
``Literal``, optional values and nested dataclasses, attrs classes, pydantic models
and TypedDicts are rendered and validated into the declared types; ``null`` for an
argument with a default means the default; and the strict (OpenAI) derivation.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, Any, Literal, NotRequired, Optional

import attrs
import pydantic
import pytest
from typing_extensions import TypedDict

from toolguard import Dispatcher, Injected, ToolCall, ToolDefinitionError, tool
from toolguard.formats import strict_schema

# --- docstrings -----------------------------------------------------------------------

DOCUMENTED = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to look for."},
        "limit": {"type": "integer", "description": "At most this many hits.", "default": 5},
    },
    "required": ["query"],
    "additionalProperties": False,
}


def google(query: str, limit: int = 5) -> list[str]:
    """Search the catalogue.

    Args:
        query (str): What to look for.
        limit: At most this
            many hits.

    Returns:
        The titles found.
    """
    return []


def numpy(query: str, limit: int = 5) -> list[str]:
    """Search the catalogue.

    Parameters
    ----------
    query : str
        What to look for.
    limit : int, optional
        At most this many hits.

    Returns
    -------
    list of str
        The titles found.
    """
    return []


def sphinx(query: str, limit: int = 5) -> list[str]:
    """Search the catalogue.

    :param query: What to look for.
    :param int limit: At most this many hits.
    :returns: The titles found.
    """
    return []


@pytest.mark.parametrize("function", [google, numpy, sphinx], ids=lambda f: f.__name__)
def test_each_docstring_style_gives_the_argument_descriptions(function: Any) -> None:
    declared = tool(function)
    assert declared.description == "Search the catalogue."
    assert declared.parameters == DOCUMENTED


def test_annotated_text_and_field_descriptions_win_over_the_docstring() -> None:
    @tool
    def find(
        query: Annotated[str, "Text from Annotated."],
        limit: Annotated[int, pydantic.Field(description="Text from Field.", ge=1)] = 5,
    ) -> str:
        """Find.

        Args:
            query: Text from the docstring.
        """
        return query

    assert find.parameters["properties"] == {
        "query": {"type": "string", "description": "Text from Annotated."},
        "limit": {"type": "integer", "description": "Text from Field.", "minimum": 1, "default": 5},
    }


OPT_OUT = " Fix the docstring, or decorate with @tool(check_docstring=False)."

MALFORMED = [
    pytest.param(
        """Search.

        Args:
            query the text to look for
        """,
        "tool 'search': its Google-style docstring has a malformed section: "
        "Expected a colon in 'query the text to look for'." + OPT_OUT,
        id="google-args-without-colon",
    ),
    pytest.param(
        """Search.

        :param query the text to look for
        """,
        "tool 'search': its Sphinx-style docstring has a malformed section: "
        'Error parsing meta information near ":param query the text to look for".' + OPT_OUT,
        id="sphinx-field-without-colon",
    ),
    pytest.param(
        """Search.

        Args:
            qurey: The text.
        """,
        "tool 'search': the docstring documents argument 'qurey', which is not in the "
        "signature (did you mean 'query'?); parameters: query, limit." + OPT_OUT,
        id="google-misspelt-argument",
    ),
    pytest.param(
        """Search.

        Parameters
        ----------
        query : str
            The text.
        page : int
            Which page.
        """,
        "tool 'search': the docstring documents argument 'page', which is not in the "
        "signature; parameters: query, limit." + OPT_OUT,
        id="numpy-stale-argument",
    ),
    pytest.param(
        """Search.

        :param query: The text.
        :param offset: Where to start.
        """,
        "tool 'search': the docstring documents argument 'offset', which is not in the "
        "signature; parameters: query, limit." + OPT_OUT,
        id="sphinx-stale-argument",
    ),
]


def _search(doc: str) -> Any:
    def search(query: str, limit: int = 5) -> str:
        return query

    search.__doc__ = doc
    return search


@pytest.mark.parametrize(("doc", "message"), MALFORMED)
def test_a_bad_docstring_is_an_error_at_decoration_naming_tool_and_argument(
    doc: str, message: str
) -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        tool(_search(doc))
    assert str(caught.value) == message


@pytest.mark.parametrize(("doc", "message"), MALFORMED)
def test_check_docstring_false_accepts_the_docstring(doc: str, message: str) -> None:
    declared = tool(check_docstring=False)(_search(doc))
    assert declared.description == "Search."
    assert set(declared.parameters["properties"]) == {"query", "limit"}


def test_check_docstring_applies_to_methods_defined_in_a_class_body() -> None:
    with pytest.raises(ToolDefinitionError, match="documents argument 'qurey'"):

        class Strict:
            @tool
            def search(self, query: str) -> str:
                """Search.

                Args:
                    qurey: The text.
                """
                return query

    class Lenient:
        @tool(check_docstring=False)
        def search(self, query: str) -> str:
            """Search.

            Args:
                qurey: The text.
            """
            return query

    assert Lenient().search.parameters["properties"] == {"query": {"type": "string"}}


def test_a_dispatcher_given_a_plain_function_checks_its_docstring_too() -> None:
    with pytest.raises(ToolDefinitionError, match="documents argument 'qurey'"):
        Dispatcher([_search("Search.\n\nArgs:\n    qurey: The text.\n")])


def test_documenting_self_cls_var_args_and_injected_arguments_is_fine() -> None:
    class Shelf:
        @tool
        def search(self, query: str, **filters: Any) -> str:
            """Search.

            Args:
                self: The shelf.
                query: The text.
                **filters: Extra filters.
            """
            return query

        @tool
        @classmethod
        def count(cls, kind: str) -> int:
            """Count.

            :param cls: The class.
            :param kind: What to count.
            """
            return 0

    assert Shelf().search.parameters["properties"] == {
        "query": {"type": "string", "description": "The text."}
    }
    assert Shelf.count.parameters["properties"] == {
        "kind": {"type": "string", "description": "What to count."}
    }


# --- what is rendered ----------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@dataclasses.dataclass
class Point:
    """A point on the map."""

    x: float
    y: float = 0.0


def _positive(instance: Any, attribute: Any, value: int) -> None:
    if value <= 0:
        raise ValueError(f"{attribute.name} must be positive")


@attrs.define
class Box:
    """A parcel."""

    width: int = attrs.field(validator=_positive)
    _label: str = "box"
    tags: list[str] = attrs.field(factory=list)


class Address(pydantic.BaseModel):
    """A postal address."""

    street: str
    city: str = pydantic.Field(description="Town or city.")
    zip: str | None = None


class Options(TypedDict):
    """How to search."""

    fuzzy: bool
    depth: NotRequired[int]


@tool
def wrap(
    color: Color = Color.RED,
    speed: Literal["slow", "fast"] = "slow",
    note: Optional[str] = None,  # noqa: UP045 (the spelling is what is tested)
    copies: int = 1,
    ribbon: str | None = "red",
) -> dict[str, Any]:
    """Wrap a present.

    Args:
        color: Paper colour.
        speed: How fast.
        note: A note for the courier.
        copies: How many labels.
        ribbon: Ribbon colour, or null for none.
    """
    return {"color": color, "speed": speed, "note": note, "copies": copies, "ribbon": ribbon}


def test_defaults_enums_literals_and_optionals_are_rendered() -> None:
    assert wrap.parameters == {
        "$defs": {"Color": {"enum": ["red", "green"], "title": "Color", "type": "string"}},
        "type": "object",
        "properties": {
            "color": {"$ref": "#/$defs/Color", "description": "Paper colour.", "default": "red"},
            "speed": {
                "type": "string",
                "enum": ["slow", "fast"],
                "description": "How fast.",
                "default": "slow",
            },
            "note": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "description": "A note for the courier.",
                "default": None,
            },
            "copies": {"type": "integer", "description": "How many labels.", "default": 1},
            "ribbon": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "description": "Ribbon colour, or null for none.",
                "default": "red",
            },
        },
        "additionalProperties": False,
    }


def test_null_for_an_argument_with_a_default_means_the_default() -> None:
    dispatcher = Dispatcher([wrap])
    sent = '{"color": null, "speed": null, "note": null, "copies": null, "ribbon": null}'
    result = dispatcher.dispatch(ToolCall(name="wrap", arguments=sent))
    # ribbon accepts None, so null stays null; the others fall back to their defaults
    assert result.content == '{"color":"red","speed":"slow","note":null,"copies":1,"ribbon":null}'


def _run(declared: Any, arguments: Any) -> Any:
    seen: list[Any] = []
    result = Dispatcher([declared]).dispatch(
        ToolCall(name=declared.name, arguments=arguments), context=seen
    )
    assert not result.is_error, result.content
    return seen[0]


def _take(kind: Any) -> Any:
    def take(value: Any, seen: Annotated[list[Any], Injected]) -> str:
        seen.append(value)
        return "ok"

    take.__annotations__["value"] = kind
    return tool(take)


def test_a_nested_dataclass_is_rendered_and_validated_into_the_dataclass() -> None:
    declared = _take(Point)
    assert declared.parameters["$defs"] == {
        "Point": {
            "title": "Point",
            "description": "A point on the map.",
            "type": "object",
            "properties": {"x": {"type": "number"}, "y": {"type": "number", "default": 0.0}},
            "required": ["x"],
            "additionalProperties": False,
        }
    }
    assert declared.parameters["properties"] == {"value": {"$ref": "#/$defs/Point"}}
    assert _run(declared, {"value": {"x": 1.5}}) == Point(x=1.5, y=0.0)


def test_a_nested_attrs_class_is_rendered_and_validated_into_the_attrs_class() -> None:
    declared = _take(Box)
    assert declared.parameters["$defs"] == {
        "Box": {
            "title": "Box",
            "description": "A parcel.",
            "type": "object",
            "properties": {
                "width": {"type": "integer"},
                "label": {"type": "string", "default": "box"},  # the __init__ name
                "tags": {"type": "array", "items": {"type": "string"}},  # a factory: not shown
            },
            "required": ["width"],
            "additionalProperties": False,
        }
    }
    value = _run(declared, '{"value": {"width": 3, "tags": ["fragile"]}}')
    assert type(value) is Box
    assert value == Box(width=3, tags=["fragile"])
    assert value._label == "box"


def test_an_attrs_class_runs_its_own_validators_and_accepts_an_instance() -> None:
    """Its validator's own words are the tool author's: withheld from the model (logged)."""
    declared = _take(Box)
    result = Dispatcher([declared]).dispatch(
        ToolCall(name="take", arguments={"value": {"width": 0}}), context=[]
    )
    assert result.is_error
    assert result.content == (
        "Invalid arguments for tool 'take':\n"
        "- 'value': the value was rejected by the tool's own checks, got {'width': 0}"
    )
    box = Box(width=2, label="crate")
    assert _run(declared, {"value": box}) == box


def test_attrs_classes_inside_containers_and_unions_are_handled() -> None:
    declared = _take(list[Box] | None)
    assert declared.parameters["properties"]["value"] == {
        "anyOf": [{"type": "array", "items": {"$ref": "#/$defs/Box"}}, {"type": "null"}]
    }
    assert _run(declared, {"value": [{"width": 1}, {"width": 2}]}) == [
        Box(width=1),
        Box(width=2),
    ]
    assert _run(declared, {"value": None}) is None
    described = _take(Annotated[Box, "The parcel."])
    assert described.parameters["properties"]["value"] == {
        "$ref": "#/$defs/Box",
        "description": "The parcel.",
    }
    assert _run(described, {"value": {"width": 4}}) == Box(width=4)


@attrs.define
class Node:
    children: list[Node]


def test_a_recursive_attrs_class_is_a_clear_error() -> None:
    def walk(node: Node) -> str:
        return ""

    walk.__annotations__["node"] = Node
    with pytest.raises(ToolDefinitionError) as caught:
        tool(walk)
    assert str(caught.value).startswith(
        "tool 'walk', argument 'node': attrs class Node refers to itself; recursive attrs "
        "classes are not supported in tool arguments"
    )


def test_a_nested_pydantic_model_is_rendered_and_validated_into_the_model() -> None:
    declared = _take(Address)
    assert declared.parameters["$defs"] == {
        "Address": {
            "title": "Address",
            "description": "A postal address.",
            "type": "object",
            "properties": {
                "street": {"type": "string"},
                "city": {"type": "string", "description": "Town or city."},
                "zip": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            },
            "required": ["street", "city"],
        }
    }
    value = _run(declared, {"value": {"street": "1 Main St", "city": "Springfield"}})
    assert value == Address(street="1 Main St", city="Springfield")


def test_a_nested_typeddict_is_rendered_and_validated() -> None:
    declared = _take(Options)
    assert declared.parameters["$defs"] == {
        "Options": {
            "title": "Options",
            "description": "How to search.",
            "type": "object",
            "properties": {"fuzzy": {"type": "boolean"}, "depth": {"type": "integer"}},
            "required": ["fuzzy"],
            "additionalProperties": False,
        }
    }
    assert _run(declared, {"value": {"fuzzy": True}}) == {"fuzzy": True}


# --- strict (OpenAI strict: true) ------------------------------------------------------


@tool
def ship(to: Address, where: Point, note: str | None = None, copies: int = 1) -> str:
    """Ship a parcel.

    Args:
        to: Where it goes.
        where: Pick-up point.
        note: A note for the courier.
        copies: How many labels.
    """
    return f"{to.city} {where.x} {note} {copies}"


def test_strict_schema_requires_every_key_closes_objects_and_makes_defaults_nullable() -> None:
    before = ship.parameters
    snapshot = repr(before)
    assert strict_schema(before, tool="ship") == {
        "type": "object",
        "properties": {
            "to": {  # a $ref with a sibling description is inlined
                "title": "Address",
                "description": "Where it goes.",
                "type": "object",
                "properties": {
                    "street": {"type": "string"},
                    "city": {"type": "string", "description": "Town or city."},
                    "zip": {"anyOf": [{"type": "string"}, {"type": "null"}]},  # null default
                },
                "required": ["street", "city", "zip"],
                "additionalProperties": False,
            },
            "where": {
                "title": "Point",
                "description": "Pick-up point.",
                "type": "object",
                # a nested default stays its own type: the model sends a value
                "properties": {"x": {"type": "number"}, "y": {"type": "number", "default": 0.0}},
                "required": ["x", "y"],
                "additionalProperties": False,
            },
            "note": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "description": "A note for the courier.",
            },
            "copies": {  # a top-level default: nullable, null means the default
                "anyOf": [{"type": "integer"}, {"type": "null"}],
                "description": "How many labels.",
                "default": 1,
            },
        },
        "required": ["to", "where", "note", "copies"],
        "additionalProperties": False,
    }
    assert repr(before) == snapshot  # the tool's own schema is untouched


def test_a_strict_call_with_nulls_runs_with_the_defaults() -> None:
    sent = (
        '{"to": {"street": "1 Main St", "city": "Springfield", "zip": null},'
        ' "where": {"x": 1.0, "y": 2.0}, "note": null, "copies": null}'
    )
    result = Dispatcher([ship]).dispatch(ToolCall(name="ship", arguments=sent))
    assert result.content == "Springfield 1.0 None 1"


def test_strict_schema_keeps_plain_refs_in_defs_and_prunes_unused_defs() -> None:
    @tool
    def route(stops: list[Point], avoid: Color | None = None) -> str:
        return ""

    assert strict_schema(route.parameters, tool="route") == {
        "$defs": {
            "Point": {
                "title": "Point",
                "description": "A point on the map.",
                "type": "object",
                "properties": {"x": {"type": "number"}, "y": {"type": "number", "default": 0.0}},
                "required": ["x", "y"],
                "additionalProperties": False,
            },
            "Color": {"enum": ["red", "green"], "title": "Color", "type": "string"},
        },
        "type": "object",
        "properties": {
            "stops": {"type": "array", "items": {"$ref": "#/$defs/Point"}},
            "avoid": {"anyOf": [{"$ref": "#/$defs/Color"}, {"type": "null"}]},
        },
        "required": ["stops", "avoid"],
        "additionalProperties": False,
    }


def test_strict_schema_turns_one_of_into_any_of() -> None:
    class Cat(pydantic.BaseModel):
        kind: Literal["cat"]

    class Dog(pydantic.BaseModel):
        kind: Literal["dog"]

    def adopt(pet: Annotated[Cat | Dog, pydantic.Field(discriminator="kind")]) -> str:
        return ""

    adopt.__annotations__["pet"] = Annotated[Cat | Dog, pydantic.Field(discriminator="kind")]
    declared = tool(adopt)
    assert "oneOf" in declared.parameters["properties"]["pet"]
    strict = strict_schema(declared.parameters, tool="adopt")
    assert strict["properties"]["pet"] == {
        "anyOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}]
    }


NOT_STRICT = " Give it a type whose keys are all known (a TypedDict, dataclass or model), "
NOT_STRICT += "or declare the tool with strict=False."


def _kwargs(query: str, **filters: str) -> str:
    return query


def _mapping(scores: dict[str, int]) -> str:
    return ""


def _anything(payload: Any) -> str:
    return ""


def _bare(payload: dict) -> str:  # type: ignore[type-arg]
    return ""


class Loose(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")
    name: str


def _loose(item: Loose) -> str:
    return ""


def _nested_any(points: list[Any]) -> str:
    return ""


def test_an_object_schema_without_listed_keys_cannot_be_strict() -> None:
    schema = {"type": "object", "properties": {"meta": {"type": "object"}}, "required": ["meta"]}
    with pytest.raises(ToolDefinitionError) as caught:
        strict_schema(schema, tool="tag")
    assert str(caught.value) == (
        "tool 'tag' cannot be declared with strict=True: argument 'meta' is an object whose "
        f"keys are not listed.{NOT_STRICT}"
    )


@pytest.mark.parametrize(
    ("function", "where"),
    [
        (_kwargs, "its **kwargs takes arguments that are not listed."),
        (_mapping, "argument 'scores' is a mapping with open-ended keys."),
        (_anything, "argument 'payload' accepts any value (it has no type)."),
        (_bare, "argument 'payload' is a mapping with open-ended keys."),
        (_loose, "Loose is a mapping with open-ended keys."),
        (_nested_any, "argument 'points'[] accepts any value (it has no type)."),
    ],
    ids=lambda v: getattr(v, "__name__", "")[1:],
)
def test_what_cannot_be_strict_is_an_error_naming_the_tool_and_argument(
    function: Any, where: str
) -> None:
    declared = tool(function)
    with pytest.raises(ToolDefinitionError) as caught:
        strict_schema(declared.parameters, tool=declared.name)
    assert str(caught.value) == (
        f"tool {declared.name!r} cannot be declared with strict=True: {where}{NOT_STRICT}"
    )


# --- strict mode asked at decoration --------------------------------------------------


def test_strict_is_checked_at_decoration_and_declared_by_default() -> None:
    from toolguard.formats import openai

    @tool(strict=True)
    def search(query: str, limit: int = 5) -> str:
        return query

    assert search.spec.strict_parameters is not None
    assert search.spec.strict_parameters["required"] == ["query", "limit"]
    [declared] = openai.tools([search])
    assert declared["function"]["strict"] is True
    assert declared["function"]["parameters"] == search.spec.strict_parameters
    [loose] = openai.tools([search], strict=False)
    assert "strict" not in loose["function"]
    with pytest.raises(ToolDefinitionError, match="cannot be declared with strict=True"):

        @tool(strict=True)
        def free_form(**options: str) -> str:
            return ""


def test_strict_methods_leave_self_out_of_the_strict_schema() -> None:
    class Catalogue:
        @tool(strict=True)
        def find(self, sku: str) -> str:
            return sku

    assert Catalogue().find.spec.strict_parameters == {
        "type": "object",
        "properties": {"sku": {"type": "string"}},
        "required": ["sku"],
        "additionalProperties": False,
    }
