"""Names: tools, arguments, namespaces, environment variables."""

from __future__ import annotations

import keyword

import pytest

from mcpmint.build import naming


def request(
    key: str, operation_id: str, method: str = "get", path: str = "/x"
) -> naming.NameRequest:
    return naming.NameRequest(
        source=f"spec.yaml#{key}",
        key=key,
        words=tuple(naming.operation_words(operation_id, method, path)),
    )


def test_operation_id_becomes_namespaced_snake_case() -> None:
    names, collisions = naming.assign_tool_names("petstore", [request("GET /pets", "listPets")])
    assert names == {"GET /pets": "petstore_list_pets"} and not collisions


def test_operation_without_id_gets_an_action_and_its_path_resources() -> None:
    assert naming.operation_words("", "get", "/pets") == ["list", "pets"]
    assert naming.operation_words("", "get", "/pets/{id}") == ["get", "pets"]
    assert naming.operation_words("", "delete", "/pets/{id}") == ["delete", "pets"]
    assert naming.operation_words("", "post", "/stores/{s}/inventory/by-category/{c}") == [
        "create",
        "stores",
        "inventory",
        "by",
        "category",
    ]


def test_long_names_lose_filler_words_then_whole_words_never_letters() -> None:
    words = naming.operation_words(
        "listAllPetsOwnedByASpecificUserIncludingArchivedOnesWithPaginationSupport", "get", "/"
    )
    name, shortened = naming.fit("petstore", words, 64)
    assert shortened and len(name) <= 64
    assert name == "petstore_list_all_pets_owned_specific_user_including_archived"
    assert all(part in words or part == "petstore" for part in name.split("_"))


def test_names_that_collide_only_after_shortening_get_stable_hash_suffixes() -> None:
    long_a = request("GET /a", "list" + "VeryLongResourceName" * 4 + "Alpha")
    long_b = request("GET /b", "list" + "VeryLongResourceName" * 4 + "Beta")
    names, collisions = naming.assign_tool_names("ns", [long_a, long_b], 40)
    assert not collisions
    assert names["GET /a"] != names["GET /b"]
    assert all(len(n) <= 40 and naming.TOOL_NAME_PATTERN.match(n) for n in names.values())
    again, _ = naming.assign_tool_names("ns", [long_b, long_a], 40)
    assert again == names


def test_G9_names_equal_once_sanitised_are_an_error_naming_every_source() -> None:
    sources = [
        request("GET /1", "get-user"),
        request("GET /2", "get_user"),
        request("GET /3", "getUser"),
        request("GET /4", "GET USER"),
    ]
    _, collisions = naming.assign_tool_names("api", sources)
    assert len(collisions) == 1
    assert collisions[0].name == "api_get_user"
    assert collisions[0].sources == tuple(sorted(s.source for s in sources))


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        ("class", "class_"),
        ("None", "none"),
        ("match", "match_"),
        ("_", "arg"),
        ("__init__", "init"),
        ("self", "self_"),
        ("1st", "n1st"),
        ("naïve", "naive"),
        ("X-Request-Id", "x_request_id"),
        ("completed_at.after", "completed_at_after"),
        ("actor_ids[]", "actor_ids"),
        ("petId", "petId"),
    ],
)
def test_G10_argument_names_are_safe_identifiers(wire: str, expected: str) -> None:
    name = naming.argument_name(wire)
    assert name == expected
    assert name.isidentifier() and name.isascii() and not keyword.iskeyword(name)
    assert not name.startswith("_")


def test_G10_an_empty_parameter_name_names_nothing() -> None:
    assert naming.argument_name("") == ""


@pytest.mark.parametrize(
    ("title", "namespace"),
    [
        ("Swagger Petstore", "petstore"),
        ("GitHub v3 REST API", "github"),
        ("Slack Web API", "slack"),
        ("Docker Engine API", "docker"),
        ("", "api"),
        ("123 API", "api"),
    ],
)
def test_namespace_is_the_first_telling_word_of_the_title(title: str, namespace: str) -> None:
    assert naming.namespace_from_title(title) == namespace


@pytest.mark.parametrize(
    ("scheme", "variable"),
    [
        ("bearerAuth", "BEARER_AUTH"),
        ("OAuth2", "OAUTH2"),
        ("api_key", "API_KEY"),
        ("ApiKeyAuth", "API_KEY_AUTH"),
    ],
)
def test_environment_variable_words_follow_the_scheme_name(scheme: str, variable: str) -> None:
    assert naming.env_name(scheme) == variable
