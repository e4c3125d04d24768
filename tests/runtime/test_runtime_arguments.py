"""ArgumentValidator: schema errors name their argument; values JSON Schema misses are refused."""

from __future__ import annotations

from dataclasses import replace

import pytest

from mcpmint.runtime.arguments import MAX_DEPTH, MAX_ERRORS, MAX_STRING, ArgumentValidator
from mcpmint.runtime.catalog import Catalog


@pytest.fixture
def validator(catalog: Catalog) -> ArgumentValidator:
    tool = catalog.tool("pets_get_pet")
    assert tool is not None
    return ArgumentValidator(tool)


def test_valid_arguments_have_no_errors(validator: ArgumentValidator) -> None:
    assert validator.errors({"petId": "1", "limit": 3, "tags": ["a"], "theme": "dark"}) == []


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"petId": "1", "limit": "ten"}, "limit: 'ten' is not of type 'integer'"),
        ({"petId": "1", "limit": True}, "limit: True is not of type 'integer'"),
        ({"petId": "1", "limit": "1"}, "limit: '1' is not of type 'integer'"),
        ({"petId": "1", "limit": 1.0}, "limit: 1.0 is not of type 'integer'"),
        ({"petId": None}, "petId: None is not of type 'string'"),
        ({}, "petId: required argument is missing"),
        ({"petId": "1", "tags": ["a", 2]}, "tags[1]: 2 is not of type 'string'"),
        ({"petId": "1", "admin": True}, "admin: unknown argument (allowed: "),
        ({"petId": "1", "limit": float("inf")}, "limit: inf is not a finite number"),
        ({"petId": "1", "limit": float("nan")}, "limit: nan is not a finite number"),
        ({"petId": "1", "limit": 10**100}, "limit: integer outside the signed 64-bit range"),
        ({"petId": "1", "limit": -(2**63) - 1}, "limit: integer outside the signed 64-bit range"),
    ],
)
def test_errors_name_the_argument(
    validator: ArgumentValidator, arguments: dict[str, object], expected: str
) -> None:
    errors = validator.errors(arguments)
    assert any(e.startswith(expected) for e in errors), errors


def test_int64_bounds_are_inclusive(validator: ArgumentValidator) -> None:
    assert validator.errors({"petId": "1", "limit": 2**63 - 1}) == []
    assert validator.errors({"petId": "1", "limit": -(2**63)}) == []


@pytest.mark.parametrize("arguments", [[], "x", 5, None])
def test_arguments_that_are_not_an_object_are_refused(
    validator: ArgumentValidator, arguments: object
) -> None:
    [error] = validator.errors(arguments)
    assert error.startswith("arguments: must be an object, not ")


def test_huge_strings_and_deep_nesting_are_refused_before_schema_validation(
    validator: ArgumentValidator,
) -> None:
    assert validator.errors({"petId": "x" * (MAX_STRING + 1)}) == [
        f"petId: string longer than {MAX_STRING} characters"
    ]
    deep: object = "leaf"
    for _ in range(10_000):
        deep = [deep]
    errors = validator.errors({"petId": "1", "tags": deep})
    assert errors == [f"tags{'[0]' * MAX_DEPTH}: nested deeper than {MAX_DEPTH} levels"]


def test_errors_are_sorted_and_capped(validator: ArgumentValidator) -> None:
    arguments: dict[str, object] = {f"extra{i:02}": i for i in range(MAX_ERRORS + 5)}
    arguments["petId"] = "1"
    errors = validator.errors(arguments)
    assert len(errors) == MAX_ERRORS + 1
    assert errors[0].startswith("extra00: unknown argument")
    assert errors[-1] == "... and 5 more"


def test_past_the_cap_an_unknown_argument_comes_before_missing_ones(catalog: Catalog) -> None:
    """Azure's `enforce` takes ten required arguments: called with none but a misspelt one,
    the one problem that names what was sent was sorted past the cap, and cut."""
    tool = catalog.tool("pets_get_pet")
    assert tool is not None
    names = [f"a{i:02}" for i in range(MAX_ERRORS + 1)]
    schema = {
        "type": "object",
        "properties": {name: {"type": "string"} for name in names},
        "required": names,
        "additionalProperties": False,
    }
    errors = ArgumentValidator(replace(tool, input_schema=schema)).errors({"zz_typo": 1})
    assert errors[0].startswith("zz_typo: unknown argument"), errors
    assert errors[-1] == "... and 2 more"


def test_extra_arguments_are_refused_even_when_the_schema_allows_them(catalog: Catalog) -> None:
    tool = catalog.tool("pets_get_pet")
    assert tool is not None
    lax = ArgumentValidator(replace(tool, input_schema={"type": "object"}))
    assert lax.errors({"admin": True})[0].startswith("admin: unknown argument")
