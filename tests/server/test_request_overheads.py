"""Per-request work that does not depend on the request is done once per process."""

from __future__ import annotations

import jsonschema_rs
import pytest

from beleg.errors import ConfigError
from beleg.server import openapi


def test_request_schemas_are_compiled_once(monkeypatch) -> None:
    compiled = []
    real = jsonschema_rs.Draft202012Validator

    def counting(schema):
        compiled.append(schema)
        return real(schema)

    monkeypatch.setattr(jsonschema_rs, "Draft202012Validator", counting)
    monkeypatch.setattr(openapi, "_VALIDATORS", {}, raising=False)
    for query in ("retry window", "E-4012", "Wie lange?"):
        assert openapi.validate_body({"query": query, "k": 5}, openapi.SEARCH_REQUEST, "search")["query"] == query
    with pytest.raises(ConfigError, match="invalid search request"):  # still validated, with the same message
        openapi.validate_body({"query": "x", "k": "ten"}, openapi.SEARCH_REQUEST, "search")
    assert len(compiled) == 1
    other = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
    with pytest.raises(ConfigError):
        openapi.validate_body({}, other, "other")  # another schema gets its own validator
    assert len(compiled) == 2
