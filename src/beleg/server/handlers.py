"""The endpoints. Each gets the request and the authenticated :class:`Identity` (None on the
open routes) from :meth:`beleg.server.app.Api.route`, which also maps errors to responses."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import secrets
import shutil
import string
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse

from beleg.errors import ConfigError
from beleg.ingest.discover import rooted_glob
from beleg.server import openapi
from beleg.server.app import QUOTE_RANGE, ApiError, search_request
from beleg.server.auth import Identity, ScopeError
from beleg.server.conversations import UnknownConversation
from beleg.service import AccessDenied, Service, binding_rules, refuse_foreign_claims
from beleg.types import Principal

if TYPE_CHECKING:
    from beleg.answer.evidence import GovernancePolicy
    from beleg.server.app import Api

MAX_FILES = 50
#: Limits of GET /v1/documents/{doc_id} as the OpenAPI document states them.
MAX_DOC_ID = 200
MAX_RANGES = 50
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
#: Characters a tenant's upload folder name keeps as they are (after folding); every other one
#: is percent-encoded, so two tenants never share a folder.
_FOLDER_CHARS = frozenset(string.ascii_lowercase + string.digits + "._-")
#: The folder of uploads through keys without a tenant (no tenant folder name starts with "_").
SHARED_FOLDER = "_shared"
#: Statuses of an ingest report under which an uploaded file has replaced the one before it.
_ACCEPTED = ("added", "updated", "unchanged")


def _api(request: Request) -> Api:
    api: Api = request.app.state.api
    return api


def _who(identity: Identity | None) -> Identity:
    assert identity is not None  # the route requires a scope
    return identity


# ---------------------------------------------------------------------- search
async def search(request: Request, identity: Identity | None) -> Response:
    api, who = _api(request), _who(identity)
    body = await api.json_body(request, openapi.SEARCH_REQUEST, "search")
    req = search_request(body)
    out = await api.index_call(lambda svc: svc.search_json(svc.search(req, who.principal)))
    api.audit(who, "search", req.query, [h["doc_id"] for h in out["hits"]])
    return JSONResponse(out)


# ---------------------------------------------------------------------- answers
def _answer_options(body: dict[str, Any], base: Any) -> Any:
    from beleg.strategies import load_strategy

    strategy = body.get("strategy", base.strategy)
    load_strategy(strategy)  # an unknown name is a 400 before any work
    return replace(base, k=body.get("k", base.k), mode=body.get("mode", base.mode), strategy=strategy,
                   budget_tokens=body.get("budget", base.budget_tokens), order=body.get("order", base.order),
                   self_query=body.get("self_query", "auto"),  # llm when the server has an LLM
                   min_confidence=body.get("min_confidence", base.min_confidence),
                   fusion=body.get("fusion", base.fusion), rrf_k=body.get("rrf_k", base.rrf_k),
                   weights=tuple(body.get("weights", base.weights)), mmr=body.get("mmr", base.mmr))


def _ask_call(body: dict[str, Any], principal: Any, context: list[str], options: Any,
              on_token: Any = None) -> Any:
    def call(svc: Service) -> dict[str, Any]:
        answer = svc.ask(body["question"], principal, filters=body.get("filters"), where=body.get("where"),
                         context=context, options=options, on_token=on_token)
        return svc.answer_json(answer)

    return call


async def _answer(request: Request, who: Identity, body: dict[str, Any], context: list[str],
                  extra: dict[str, Any], endpoint: str) -> Response:
    """Answer ``body`` as JSON, or as server-sent events with ``"stream": true``."""
    from beleg.answer.answerer import AnswerOptions
    from beleg.index.filters import combine

    api = _api(request)
    options = _answer_options(body, api.settings.answer_options or AnswerOptions())
    combine(body.get("filters"), body.get("where"))  # a bad filter is a 400 now, not an event once streaming
    if not body.get("stream"):
        out = await api.index_call(_ask_call(body, who.principal, context, options))
        out.update(extra)
        api.audit(who, endpoint, body["question"], [c["doc_id"] for c in out["sources"]])
        return JSONResponse(out)
    return StreamingResponse(_stream(api, who, body, context, options, extra, endpoint),
                             media_type="text/event-stream", headers={"Cache-Control": "no-store"})


async def _stream(api: Api, who: Identity, body: dict[str, Any], context: list[str], options: Any,
                  extra: dict[str, Any], endpoint: str) -> AsyncIterator[str]:
    """``token`` events as the LLM writes (none for the offline answerer), then one ``answer``
    event with the verified answer object, or one ``error`` event."""
    loop = asyncio.get_running_loop()
    tokens: asyncio.Queue[str] = asyncio.Queue()

    def on_token(text: str) -> None:  # called on the index thread
        loop.call_soon_threadsafe(tokens.put_nowait, text)

    task = asyncio.ensure_future(api.index_call(_ask_call(body, who.principal, context, options, on_token)))
    while not (task.done() and tokens.empty()):
        getter = asyncio.ensure_future(tokens.get())
        await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
        if getter.done():
            yield _event("token", {"text": getter.result()})
        else:
            getter.cancel()
    try:
        out = task.result()
    except Exception as exc:  # the stream has started: the error travels as an event
        err = api.classify(exc, who)
        yield _event("error", {"error": {"type": err.kind, "message": err.message}})
        return
    out.update(extra)
    api.audit(who, endpoint, body["question"], [c["doc_id"] for c in out["sources"]])
    yield _event("answer", out)


def _event(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


async def ask(request: Request, identity: Identity | None) -> Response:
    who = _who(identity)
    body = await _api(request).json_body(request, openapi.ASK_REQUEST, "ask")
    return await _answer(request, who, body, list(body.get("context", [])), {}, "ask")


async def chat(request: Request, identity: Identity | None) -> Response:
    api, who = _api(request), _who(identity)
    body = await api.json_body(request, openapi.CHAT_REQUEST, "chat")
    try:
        conversation_id, context = api.conversations.context(body.get("conversation_id"), who.owner)
    except UnknownConversation:
        raise ApiError(404, "not_found", "no such conversation for this key; omit conversation_id to start one") \
            from None
    # Questions, never answers, carry a conversation (as in 'beleg chat'): add it before answering,
    # so a streamed turn that the client abandons still counts.
    api.conversations.add(conversation_id, body["question"])
    return await _answer(request, who, body, context, {"conversation_id": conversation_id}, "chat")


# ---------------------------------------------------------------------- documents
def _doc_id_param(request: Request) -> str:
    doc_id: str = request.path_params["doc_id"]
    if len(doc_id) > MAX_DOC_ID:  # the schema's limit: no id is this long
        raise ConfigError(f"a document id has at most {MAX_DOC_ID} characters, got {len(doc_id)}")
    return doc_id


async def get_document(request: Request, identity: Identity | None) -> Response:
    api, who = _api(request), _who(identity)
    doc_id = _doc_id_param(request)
    quotes, chunks = request.query_params.getlist("quote"), request.query_params.getlist("chunk")
    for name, values in (("quote", quotes), ("chunk", chunks)):
        if len(values) > MAX_RANGES:
            raise ConfigError(f"{len(values)} {name} parameters; give at most {MAX_RANGES} at a time")
    ranges = []
    for value in quotes:
        m = QUOTE_RANGE.match(value)
        if m is None:
            raise ConfigError("quote must be START:END document offsets like 120:180, "
                              f"got {openapi.shortened(repr(value))}")
        ranges.append((int(m.group(1)), int(m.group(2))))
    out = await api.index_call(lambda svc: svc.document_json(doc_id, who.principal, ranges, chunks))
    if out is None:
        raise ApiError(404, "not_found", f"no document {doc_id!r} visible to this key")
    api.audit(who, "document", None, [doc_id])
    return JSONResponse(out)


async def delete_document(request: Request, identity: Identity | None) -> Response:
    """Erase a document of the admin key's own tenant (:func:`_replaceable`, the rule uploads
    follow): another tenant's document is "not found"; a public one that a tenant's key may
    read is 403, since that key speaks for one tenant, not for everyone who reads it."""
    api, who = _api(request), _who(identity)
    doc_id = _doc_id_param(request)

    def erase(svc: Service) -> dict[str, Any] | None:
        doc = svc.kb.document(doc_id, who.principal)
        if doc is None:
            return None
        if not _replaceable(doc.metadata, who.principal):
            raise AccessDenied(_not_own_tenant(who.principal))
        out = svc.delete([doc_id])
        if not who.operator:
            _drop_index_wide_counts(out)
        # After the erase has committed: an uploaded file left behind would bring the document
        # back with the next ingest of the upload folder.
        out["files_deleted"] = _delete_uploaded_file(svc, Path(doc.source), api.upload_dir)
        return out

    out = await api.writer.call(erase)
    if out is None:
        raise ApiError(404, "not_found", f"no document {doc_id!r} visible to this key")
    api.audit(who, "delete", None, [doc_id])
    return JSONResponse(out)


def _not_own_tenant(principal: Principal) -> str:
    # Only a tenant's key gets here: a key without a tenant reads no tenant's document.
    return (f"this key belongs to tenant {principal.tenant!r} and may change only that tenant's documents; "
            "this one has no tenant (every tenant shares it): delete it with an operator's key "
            "(admin scope, no tenant) or 'beleg delete'")


def _drop_index_wide_counts(out: dict[str, Any]) -> None:
    """Take the vocabulary terms and vectors an erasure dropped out of its reply (and out of
    each version's): a term or vector is dropped when no chunk of *any* tenant uses it any
    more, so the count would tell whether a word or text of a probe document that the key
    uploaded and deleted occurs in a document it may not read (as ``embedded`` would in the
    upload reply)."""
    for counts in (out, *out.get("versions", ())):
        for index_wide in ("vectors", "terms"):
            counts.pop(index_wide, None)


def _delete_uploaded_file(svc: Service, source: Path, upload_dir: Path) -> list[str]:
    """Delete ``source`` when it is a file of the server's upload folder that no stored
    document comes from any more; its path inside the upload folder, or nothing."""
    try:
        inside = source.resolve().relative_to(upload_dir.resolve())
    except ValueError:
        return []  # a file the operator ingested: not the server's to delete
    if inside.parts[:1] == (".staging",) or not source.is_file() or _documents_at(svc, source):
        return []
    source.unlink(missing_ok=True)
    return [inside.as_posix()]


async def ingest(request: Request, identity: Identity | None) -> Response:
    """Multipart upload (field ``files``): staged, checked against the key's tenant, then ingested."""
    api, who = _api(request), _who(identity)
    if who.tenantless_token and "admin" not in who.scopes:
        raise AccessDenied("this token names no tenant, so its uploads could name any tenant; uploads need a token "
                           "with a tenant claim (or the admin scope)")
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise ConfigError("upload files as multipart/form-data in a field named 'files'")
    form = await request.form(max_files=MAX_FILES, max_fields=MAX_FILES)
    uploads = [f for f in form.getlist("files") if isinstance(f, UploadFile)]
    if not uploads:
        raise ConfigError("no files: send them in a multipart field named 'files'")
    others = sorted(set(form.keys()) - {"files"})
    if others:
        # Ignored, a field named tenant, acl or status would look as if it had set them.
        raise ConfigError(f"the upload has the field(s) {', '.join(map(repr, others))}; only 'files' is read: a "
                          "document's tenant comes from the key, its other metadata from the file itself")
    staging = api.upload_dir / ".staging" / secrets.token_hex(8)
    staging.mkdir(parents=True, exist_ok=True)
    try:
        staged = [await _stage(upload, staging) for upload in uploads]
        # One writer call from the check to the end of the ingest: parsing is kept off the
        # event loop, and no other upload can touch the same files in between.
        policy = getattr(api.settings.answer_options, "policy", None)  # what the server's answers rank by
        out = await api.writer.call(lambda svc: _ingest_uploads(svc, staged, who, api.upload_dir, staging, policy))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    api.audit(who, "ingest", None, [f["doc_id"] for f in out.get("files", []) if f.get("doc_id")])
    return JSONResponse(out)


def _ingest_uploads(svc: Service, staged: list[Path], who: Identity, upload_dir: Path,
                    staging: Path, policy: GovernancePolicy | None = None) -> dict[str, Any]:
    """Check, move into place and ingest staged uploads; a file the ingest does not accept
    leaves the one it would have replaced on disk (or nothing, when there was none)."""
    principal = who.principal
    rules = binding_rules(principal)
    for path in staged:  # before anything is stored: metadata beyond what the key may claim is refused
        refuse_foreign_claims(path, principal, may_rank="admin" in who.scopes, policy=policy)
    targets = [_upload_target(svc, upload_dir, who, path.name) for path in staged]
    for target in targets:
        _refuse_unreadable_replace(svc, target, principal)
    previous = staging / ".previous"
    previous.mkdir()
    moved: list[tuple[Path, Path | None]] = []
    try:
        for path, target in zip(staged, targets, strict=True):
            target.parent.mkdir(parents=True, exist_ok=True)
            backup = None
            if target.exists():
                backup = previous / path.name  # names are unique within one upload (_stage)
                target.replace(backup)
            moved.append((target, backup))
            path.replace(target)
        # Embedded afresh, never from a vector some other document stored: how long the upload
        # took would otherwise tell whether its text is indexed anywhere (another tenant's too).
        # Rooted at the upload folder, so the id derives from TENANT/UPLOADER/NAME: two
        # tenants' users of one name never share an id (a file's earlier upload keeps its id).
        report = svc.kb.ingest([rooted_glob(upload_dir, target) for target, _ in moved], rules=rules,
                               progress=False, reuse_vectors=False)
    except BaseException:
        for target, backup in moved:
            _put_back(target, backup)
        raise
    accepted = {Path(f.source).resolve() for f in report.files if f.status in _ACCEPTED}
    for target, backup in moved:
        if target.resolve() not in accepted:
            _put_back(target, backup)
        elif backup is not None:
            backup.unlink(missing_ok=True)
    _hide_unreadable(svc, report.files, principal)
    out: dict[str, Any] = report.to_json()
    # Vectors are shared by every chunk of the same text, whoever's: how many this upload had
    # to compute would tell the key whether a text it guessed is stored anywhere in the index.
    for index_wide in ("embedded", "sentence_vectors"):
        out.pop(index_wide, None)
    return out


def _put_back(target: Path, backup: Path | None) -> None:
    if backup is not None:
        backup.replace(target)
    else:
        target.unlink(missing_ok=True)


def _hide_unreadable(svc: Service, files: list[Any], principal: Principal) -> None:
    """A failure about a stored document the uploader may not read (an id or a path that
    another tenant's document holds) says so in general terms: its reason would name that
    document's tenant or source, and its doc id would let the caller probe for it."""
    for result in files:
        if result.status != "failed" or not result.doc_id:
            continue
        state = svc.kb.catalog.document_state(result.doc_id)
        if state is not None and not principal.may_read(state[1]):
            result.doc_id = result.previous_id = None
            result.reason = ("this file would replace a document this key may not read; nothing changed. "
                             "Give it another file name or id")


def _upload_target(svc: Service, upload_dir: Path, who: Identity, name: str) -> Path:
    """Where an upload called ``name`` is kept: the uploader's own folder inside its tenant's
    (:func:`uploader_folder`), so an upload only ever meets the same uploader's files and its
    answer cannot tell whether someone else in the tenant stored a file of that name.

    A file at the top of the tenant folder (or of an older Beleg's ``_safe_name`` folder,
    which tenants could share), stored before uploads had folders of their own, is still
    updated in place when its document belongs to the uploader's tenant and the uploader may
    read it; one it may not read is left alone, and the upload goes to its own folder exactly
    as if the name were free."""
    principal = who.principal
    tenant = upload_dir / tenant_folder(principal.tenant)
    for older in dict.fromkeys((tenant / name, upload_dir / _safe_name(principal.tenant or SHARED_FOLDER) / name)):
        documents = _documents_at(svc, older)
        if older.is_file() and documents and all(_replaceable(meta, principal) for meta in documents):
            return older
    return tenant / uploader_folder(who) / name


def _documents_at(svc: Service, path: Path) -> list[dict[str, Any]]:
    """The metadata of each stored document ingested from the file at ``path``."""
    found = []
    for source in dict.fromkeys((str(path), str(path.resolve()))):
        for doc_id in svc.kb.catalog.doc_ids_for_source(source):
            state = svc.kb.catalog.document_state(doc_id)
            if state is not None:
                found.append(state[1])
    return found


def _replaceable(metadata: dict[str, Any], principal: Principal) -> bool:
    """Whether an upload by ``principal`` may replace a stored document: it may read it, and
    it is of the uploader's tenant (an operator's key replaces only documents of no tenant)."""
    tenant = Principal.fold(str(metadata.get("tenant") or ""))
    return principal.may_read(metadata) and tenant == Principal.fold(principal.tenant or "")


def _refuse_unreadable_replace(svc: Service, target: Path, principal: Principal) -> None:
    """An upload may only replace a document its uploader may read. Only the uploader's own
    earlier upload can be in the way here (:func:`_upload_target`), e.g. one given an acl
    this key is not in, so saying so tells the key nothing about anyone else's documents."""
    if not all(_replaceable(meta, principal) for meta in _documents_at(svc, target)):
        raise AccessDenied(f"{target.name} would replace an earlier upload of yours that this key may not read "
                           "(its acl leaves this key out); nothing changed. Give the file another name, or "
                           "upload it with a key that may read it")


def uploader_folder(who: Identity) -> str:
    """The folder of one uploader inside its tenant's folder: ``@`` and its folded user name,
    or for a key without a user ``#`` and the key's id (its subject), percent-encoded as
    tenant folders are. Uploaded file names never contain ``@`` or ``#`` (:func:`_safe_name`),
    so an uploader's folder is never a file of the tenant folder."""
    user = Principal.fold(who.principal.user or "")
    return "@" + _folder_name(user) if user else "#" + _folder_name(who.subject)


def tenant_folder(tenant: str | None) -> str:
    """The upload folder name of a tenant: injective, so two tenants never share a folder.

    The folded tenant (:meth:`Principal.fold`, the form access compares) with every character
    outside ``a-z 0-9 . _ -`` and a leading ``.`` or ``_`` percent-encoded (``müller-gmbh`` →
    ``m%C3%BCller-gmbh``, ``_shared`` → ``%5Fshared``), so ``acme`` stays ``acme`` and no
    tenant's folder is :data:`SHARED_FOLDER`, ``.staging``, ``.`` or ``..``. Names that
    would encode to over 100 characters are cut and end in ``~`` and a hash of the whole name
    (``~`` is never kept as it is, so a cut name cannot equal an uncut one).
    """
    folded = Principal.fold(tenant) if tenant else ""
    return _folder_name(folded) if folded else SHARED_FOLDER


def _folder_name(name: str) -> str:
    """``name`` (already folded) as one injective folder name (see :func:`tenant_folder`)."""
    encoded = "".join(c if c in _FOLDER_CHARS and not (i == 0 and c in "._") else
                      "".join(f"%{b:02X}" for b in c.encode("utf-8")) for i, c in enumerate(name))
    if len(encoded) > 100:
        encoded = f"{encoded[:64]}~{hashlib.sha256(name.encode('utf-8')).hexdigest()[:16]}"
    return encoded


async def _stage(upload: UploadFile, folder: Path) -> Path:
    name = _safe_name(Path(upload.filename or "").name)
    if not name or "." not in name.strip("."):
        raise ConfigError(f"file name {openapi.shortened(repr(upload.filename))} needs an extension such as .md, "
                          ".txt, .html, .pdf, .docx")
    target = folder / name
    if target.exists():
        raise ConfigError(f"the upload names {name!r} twice; send each file once")
    target.write_bytes(await upload.read())
    return target


def _safe_name(name: str) -> str:
    return _SAFE_NAME.sub("_", name).lstrip(".")[:120]


# ---------------------------------------------------------------------- service
async def status(request: Request, identity: Identity | None) -> Response:
    """The caller's identity and the status of what it may read; the whole index's status
    (paths, generation, every count) only for an operator: an admin key without a tenant."""
    from beleg.server.worker import shown_location

    who = _who(identity)
    operator = who.operator
    out = await _api(request).index_call(lambda svc: svc.status(None if operator else who.principal))
    for key in ("index", "version_path"):  # a database URL may carry the password: no key gets it
        if isinstance(out.get(key), str):
            out[key] = shown_location(out[key])
    p = who.principal
    out["principal"] = {"user": p.user, "tenant": p.tenant, "groups": list(p.groups), "scopes": sorted(who.scopes)}
    return JSONResponse(out)


async def healthz(request: Request, identity: Identity | None) -> Response:
    return JSONResponse({"status": "ok"})


async def readyz(request: Request, identity: Identity | None) -> Response:
    if not _api(request).ready:
        raise ApiError(503, "not_ready", "the index is still opening and the model loading")
    return JSONResponse({"status": "ready"})


async def metrics(request: Request, identity: Identity | None) -> Response:
    """The counters count every tenant's requests (a commit's cache misses, a tenant's upload
    errors): only an operator's key reads them, unless the server made them public
    (``ServerSettings.metrics_public``, then ``identity`` is None)."""
    if identity is not None and not identity.operator:
        raise ScopeError("metrics count the requests of every tenant: read them with an operator's key (admin "
                         "scope, no tenant), or start the server with --metrics-public")
    return PlainTextResponse(_api(request).metrics.render(), media_type="text/plain; version=0.0.4")


async def openapi_json(request: Request, identity: Identity | None) -> Response:
    from beleg import __version__

    return JSONResponse(openapi.openapi_document(__version__))


ROUTES = [
    ("POST", "/v1/search", "read", search),
    ("POST", "/v1/ask", "read", ask),
    ("POST", "/v1/chat", "read", chat),
    ("GET", "/v1/documents/{doc_id}", "read", get_document),
    ("DELETE", "/v1/documents/{doc_id}", "admin", delete_document),
    ("POST", "/v1/ingest", "ingest", ingest),
    ("GET", "/v1/status", "read", status),
    ("GET", "/healthz", None, healthz),
    ("GET", "/readyz", None, readyz),
    ("GET", "/metrics", "admin", metrics),  # or none: ServerSettings.metrics_public
    ("GET", "/openapi.json", None, openapi_json),
]
