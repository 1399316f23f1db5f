"""The OpenAPI 3.1 document of the HTTP API. Request schemas here also validate request bodies
(:func:`validate_body`), so the document cannot drift from what the server accepts.

Bodies are closed (``additionalProperties: false``): a field the API does not know, such as
``user``, ``tenant`` or ``groups``, is rejected with 400 rather than ignored, so no body can
look as if it chose the principal.
"""

from __future__ import annotations

import re
from typing import Any

from beleg.errors import ConfigError
from beleg.strategies import STRATEGIES

_FILTERS = {"type": "object", "description": "metadata equality filters: key → value (or list of values)",
            "additionalProperties": {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"},
                                               {"type": "array", "items": {"type": "string"}, "maxItems": 50}]},
            "maxProperties": 20}
_RETRIEVAL = {
    "mode": {"enum": ["dense", "bm25", "hybrid"], "default": "hybrid"},
    "k": {"type": "integer", "minimum": 1, "maximum": 100},
    "filters": _FILTERS,
    "where": {"type": "string", "maxLength": 2000, "description": "filter expression, e.g. \"version >= 2.4\""},
    "strategy": {"enum": list(STRATEGIES), "default": "hybrid", "description": "see docs/strategies.md"},
    "self_query": {"enum": [True, False, "auto", "rules", "llm", "off"], "default": "auto",
                   "description": "constraints read from the question: auto (llm when the server has an LLM, "
                                  "else rules), rules, llm, off; true = rules, false = off (docs/strategies.md)"},
}
_QUESTION = {"type": "string", "minLength": 1, "maxLength": 4000, "pattern": "\\S"}

#: Fusion and diversity: the same fields for a search and for every search an answer makes.
_FUSION = {"fusion": {"enum": ["rrf", "weighted"], "default": "rrf"},
           "rrf_k": {"type": "integer", "minimum": 1, "maximum": 1000},
           "weights": {"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 100},
                       "minItems": 2, "maxItems": 2},
           "mmr": {"type": ["number", "null"], "minimum": 0, "maximum": 1}}
SEARCH_REQUEST: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["query"],
    "properties": {"query": _QUESTION, **_RETRIEVAL, **_FUSION,
                   "context": {"type": "array", "items": {"type": "string", "maxLength": 4000}, "maxItems": 20}},
}
_ANSWER = {"order": {"enum": ["rank", "edges"]},
           "budget": {"type": "integer", "minimum": 200, "maximum": 20000},
           "min_confidence": {"type": "number", "minimum": 0, "maximum": 1}}
ASK_REQUEST: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["question"],
    "properties": {"question": _QUESTION, **_RETRIEVAL, **_FUSION, **_ANSWER,
                   "context": {"type": "array", "items": {"type": "string", "maxLength": 4000}, "maxItems": 20},
                   "stream": {"type": "boolean", "default": False,
                              "description": "answer as server-sent events: token events, then one answer event"}},
}
CHAT_REQUEST: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["question"],
    "properties": {"question": _QUESTION, **_RETRIEVAL, **_FUSION, **_ANSWER,
                   "conversation_id": {"type": "string", "maxLength": 64,
                                       "description": "from an earlier /v1/chat answer; omit to start one"},
                   "stream": {"type": "boolean", "default": False}},
}

_OBJECT = {"type": "object"}
ERROR: dict[str, Any] = {
    "type": "object", "required": ["error"],
    "properties": {"error": {"type": "object", "required": ["type", "message"],
                             "properties": {"type": {"type": "string"}, "message": {"type": "string"}}}},
}
SEARCH_RESPONSE: dict[str, Any] = {
    "type": "object", "required": ["hits", "trace"],
    "properties": {"hits": {"type": "array", "items": {
        "type": "object", "required": ["chunk_id", "doc_id", "source", "start", "end", "score", "text"],
        "properties": {"chunk_id": {"type": "string"}, "doc_id": {"type": "string"}, "source": {"type": "string"},
                       "title": {"type": ["string", "null"]}, "start": {"type": "integer"},
                       "end": {"type": "integer"}, "score": {"type": "number"}, "text": {"type": "string"},
                       "metadata": _OBJECT, "scores": _OBJECT}}},
        "trace": _OBJECT, "self_query": {"type": ["object", "null"]}},
}
ANSWER_RESPONSE: dict[str, Any] = {
    "type": "object", "required": ["answer", "refused", "citations", "conflicts", "sources"],
    "properties": {"answer": {"type": "string"}, "refused": {"type": "boolean"},
                   # refused although a candidate was found (low confidence, failed checks)
                   "withheld": {"type": "boolean"},
                   "citations": {"type": "array", "items": _OBJECT}, "conflicts": {"type": "array", "items": _OBJECT},
                   "sources": {"type": "array", "items": _OBJECT}, "trace": _OBJECT,
                   "conversation_id": {"type": "string"}},
}
#: One server-sent event of a streamed answer: ``token`` ({"text"}), then ``answer`` (the
#: answer object) or ``error`` ({"error": {"type", "message"}}); ``data`` is JSON text.
SSE_EVENT: dict[str, Any] = {
    "type": "object", "required": ["event", "data"],
    "properties": {"event": {"enum": ["token", "answer", "error"]}, "data": {"type": "string"}},
}
DOCUMENT_RESPONSE: dict[str, Any] = {
    "type": "object", "required": ["doc_id", "source", "text", "metadata", "quotes"],
    "properties": {"doc_id": {"type": "string"}, "source": {"type": "string"}, "title": {},
                   "text": {"type": "string"}, "metadata": _OBJECT,
                   "quotes": {"type": "array", "items": {
                       "type": "object", "required": ["start", "end", "text"],
                       "properties": {"start": {"type": "integer"}, "end": {"type": "integer"},
                                      "text": {"type": "string"}}}}},
}

STATUS_RESPONSE: dict[str, Any] = {
    "type": "object", "required": ["principal", "documents", "documents_by"],
    "description": "the caller and the counts of the documents it may read; an operator's key (admin, no "
                   "tenant) gets the whole 'status --json' object (index path, generation, every count) too",
    "properties": {"principal": {"type": "object", "required": ["user", "tenant", "groups", "scopes"],
                                 "properties": {"user": {"type": ["string", "null"]},
                                                "tenant": {"type": ["string", "null"]},
                                                "groups": {"type": "array", "items": {"type": "string"}},
                                                "scopes": {"type": "array", "items": {"type": "string"}}}},
                   "documents": {"type": "integer"}, "index_version": {"type": "string"},
                   "documents_by": {"type": "object", "additionalProperties": {
                       "type": "object", "additionalProperties": {"type": "integer"}}}},
}


#: id(schema) → (schema, its compiled validator): compiling took ~1 ms of every request, validating ~0.04 ms.
_VALIDATORS: dict[int, tuple[dict[str, Any], Any]] = {}


def _validator(schema: dict[str, Any]) -> Any:
    """The compiled validator of ``schema`` (the request schemas are module constants, compiled once)."""
    cached = _VALIDATORS.get(id(schema))
    if cached is None or cached[0] is not schema:  # the schema is kept in the entry, so its id stays its own
        import jsonschema_rs

        cached = _VALIDATORS[id(schema)] = (schema, jsonschema_rs.Draft202012Validator(schema))
    return cached[1]


#: How many characters of a value an error message quotes back (a 15 MB query is not echoed).
SHOWN_CHARS = 100
_QUOTED = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|\'[^\']*\'')


def shortened(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis when it was longer."""
    return text if len(text) <= limit else text[:limit] + "…"


def _shown_message(message: str) -> str:
    """A validator message with every quoted value in it cut to :data:`SHOWN_CHARS`, and the
    message itself kept to a few times that (a long array of short strings), its start (the
    value) and its end (the rule it broke) kept."""
    message = _QUOTED.sub(lambda m: m.group(0) if len(m.group(0)) <= SHOWN_CHARS + 2 else
                          m.group(0)[:SHOWN_CHARS + 1] + "…" + m.group(0)[-1], message)
    if len(message) > 4 * SHOWN_CHARS:
        message = message[:2 * SHOWN_CHARS] + " … " + message[-2 * SHOWN_CHARS:]
    return message


def validate_body(body: Any, schema: dict[str, Any], what: str) -> dict[str, Any]:
    """``body`` if it matches ``schema``; else a :class:`ConfigError` naming the first problem
    (values quoted in it cut to :data:`SHOWN_CHARS` characters)."""
    if not isinstance(body, dict):
        raise ConfigError(f"the {what} body must be a JSON object, got {type(body).__name__}")
    for error in _validator(schema).iter_errors(body):
        where = shortened("/".join(str(p) for p in error.instance_path) or "body")
        raise ConfigError(f"invalid {what} request at {where}: {_shown_message(error.message)}")
    # JSON Schema counts 23.0 as an integer; Python code downstream slices and counts with it.
    for name, prop in schema.get("properties", {}).items():
        if prop.get("type") == "integer" and isinstance(body.get(name), float):
            body[name] = int(body[name])
    return body


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def _responses(ok: dict[str, Any], *codes: int, ok_code: str = "200", media: str = "application/json") -> dict[str, Any]:
    out: dict[str, Any] = {ok_code: {"description": "success", "content": {media: {"schema": ok}}}}
    reasons = {400: "invalid request", 401: "missing or invalid credentials", 403: "scope missing",
               404: "not found (or not visible to this caller)", 409: "index busy", 413: "request too large",
               415: "the body is not JSON (Content-Type)",
               429: "rate limit exceeded", 502: "the LLM backend failed"}
    for code in (400, 401, 413, 429, *codes):
        out[str(code)] = {"description": reasons[code], "content": _json({"$ref": "#/components/schemas/Error"})}
    return out


def openapi_document(version: str) -> dict[str, Any]:
    """The OpenAPI 3.1 description of every endpoint and body."""
    ask_ok = {"description": "the answer; with stream=true, text/event-stream of `token` events "
                             "({text}) then one `answer` event (the answer object) or one `error` event",
              "content": {"application/json": {"schema": ANSWER_RESPONSE},
                          "text/event-stream": {"schema": SSE_EVENT}}}
    ask_responses = _responses(ANSWER_RESPONSE, 415, 502)
    ask_responses["200"] = ask_ok
    chat_responses = _responses(ANSWER_RESPONSE, 404, 415, 502)
    chat_responses["200"] = ask_ok
    plain = {"type": "string"}
    status_ok = {"description": "ok", "content": _json(_OBJECT)}
    return {
        "openapi": "3.1.0",
        "info": {"title": "Beleg", "version": version,
                 "description": "Search and answers with verified citations, as the authenticated caller."},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "an API key from 'beleg keys add', or a JWT"}},
            "schemas": {"Error": ERROR},
        },
        "security": [{"bearer": []}],
        "paths": {
            "/v1/search": {"post": {"summary": "search (scope read)", "operationId": "search",
                                    "requestBody": {"required": True, "content": _json(SEARCH_REQUEST)},
                                    "responses": _responses(SEARCH_RESPONSE, 415, 502)}},
            "/v1/ask": {"post": {"summary": "answer a question with verified citations (scope read)",
                                 "operationId": "ask", "requestBody": {"required": True, "content": _json(ASK_REQUEST)},
                                 "responses": ask_responses}},
            "/v1/chat": {"post": {"summary": "one turn of a conversation (scope read)", "operationId": "chat",
                                  "requestBody": {"required": True, "content": _json(CHAT_REQUEST)},
                                  "responses": chat_responses}},
            "/v1/documents/{doc_id}": {
                "parameters": [{"name": "doc_id", "in": "path", "required": True,
                                "schema": {"type": "string", "maxLength": 200}}],
                "get": {"summary": "a document's text and quoted ranges (scope read)", "operationId": "getDocument",
                        "parameters": [{"name": "quote", "in": "query", "required": False, "explode": True,
                                        "description": "START:END document offsets (repeatable)",
                                        "schema": {"type": "array", "maxItems": 50,
                                                   "items": {"type": "string", "pattern": "^[0-9]+:[0-9]+$"}}},
                                       {"name": "chunk", "in": "query", "required": False, "explode": True,
                                        "description": "a chunk_id of a hit or citation: its span (repeatable)",
                                        "schema": {"type": "array", "maxItems": 50,
                                                   "items": {"type": "string", "maxLength": 64}}}],
                        "responses": _responses(DOCUMENT_RESPONSE, 404)},
                "delete": {"summary": "erase a document (scope admin)", "operationId": "deleteDocument",
                           "responses": _responses(_OBJECT, 403, 404, 409)}},
            "/v1/ingest": {"post": {
                "summary": "upload files to ingest (scope ingest)", "operationId": "ingest",
                "requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
                    "type": "object", "required": ["files"],
                    "properties": {"files": {"type": "array",
                                             "items": {"type": "string", "contentMediaType": "application/octet-stream"}}}}}}},
                "responses": _responses(_OBJECT, 403, 409)}},
            "/v1/status": {"get": {"summary": "who the caller is and what it may read (scope read)",
                                   "operationId": "status", "responses": _responses(STATUS_RESPONSE)}},
            "/healthz": {"get": {"summary": "the process is up", "operationId": "healthz", "security": [],
                                 "responses": {"200": status_ok}}},
            "/readyz": {"get": {"summary": "the index is open and the model loaded", "operationId": "readyz",
                                "security": [], "responses": {"200": status_ok,
                                                              "503": {"description": "not ready",
                                                                      "content": _json(ERROR)}}}},
            "/metrics": {"get": {"summary": "Prometheus metrics (an operator's key: admin scope, no tenant; no "
                                            "key when the server runs with --metrics-public)",
                                 "operationId": "metrics",
                                 "responses": {"200": {"description": "text exposition format",
                                                       "content": {"text/plain": {"schema": plain}}},
                                               **{str(code): {"description": reason,
                                                              "content": _json({"$ref": "#/components/schemas/Error"})}
                                                  for code, reason in ((401, "missing or invalid credentials"),
                                                                       (403, "not an operator's key"),
                                                                       (429, "rate limit exceeded"))}}}},
            "/openapi.json": {"get": {"summary": "this document", "operationId": "openapi", "security": [],
                                      "responses": {"200": {"description": "OpenAPI 3.1",
                                                            "content": _json(_OBJECT)}}}},
        },
    }
