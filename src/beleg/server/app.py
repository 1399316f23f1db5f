"""The HTTP API (Starlette): ``create_app(index, auth)`` returns an ASGI app for uvicorn.

Every ``/v1`` request is authenticated (:mod:`beleg.server.auth`); the principal comes from
the credentials only. Errors are ``{"error": {"type", "message"}}`` with the matching status
code and never a traceback. Routes and bodies: :mod:`beleg.server.openapi`, docs/server.md.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from beleg.errors import BelegError, ConfigError, LLMError, NeedsLLMError
from beleg.index.postgres.config import is_postgres_url
from beleg.index.versions import IndexBusyError, VersionNotLiveError
from beleg.server import openapi
from beleg.server.auth import AuthConfig, AuthError, Identity, ScopeError
from beleg.server.conversations import Conversations
from beleg.server.limits import RateLimiter
from beleg.server.metrics import Metrics
from beleg.server.worker import (
    IndexThread,
    connection_lost,
    default_upload_dir,
    hold_version,
    service_opener,
)
from beleg.service import AccessDenied, SearchRequest, Service

log = logging.getLogger(__name__)
STATIC = Path(__file__).parent / "static"


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """Limits and options of one server process."""

    #: Largest request body; an upload larger than this is refused with 413.
    max_body_bytes: int = 16 * 2**20
    #: Per-caller token bucket: requests per second on average, and the burst allowed.
    rate_per_second: float = 20.0
    burst: int = 40
    #: Origins allowed to call the API from a browser (empty: CORS off).
    cors_origins: tuple[str, ...] = ()
    #: Append one JSON line per request (who, what, which documents) here; None: off.
    audit_log: Path | None = None
    #: Where uploaded files are kept (default: :func:`~beleg.server.worker.default_upload_dir`).
    upload_dir: Path | None = None
    #: Threads serving reads, each with its own connection and search view (the model is shared);
    #: on 2 cores, 2 overlap one request's query embedding with another's search.
    read_threads: int = 2
    #: PostgreSQL: a thread with no request for this many seconds ends its read view (an open
    #: transaction holds back VACUUM, erasures included); a busy thread keeps reusing it.
    release_idle_s: float = 2.0
    #: Defaults of every answer (governance policy, min_confidence, ...); None: AnswerOptions().
    answer_options: Any = None
    #: Serve /metrics without credentials (a scraper on a trusted network); otherwise it needs
    #: an operator's key, since its counters show every tenant's activity.
    metrics_public: bool = False
    static_dir: Path | None = field(default=STATIC)


class ApiError(Exception):
    def __init__(self, status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.kind, self.message, self.headers = status, kind, message, headers or {}


def error_response(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"type": kind, "message": message}}, status_code=status, headers=headers)


#: What a key other than an operator's is told when the index is locked: the lock's own
#: message names the index path, the holder's pid, host and start time.
BUSY_FOR_TENANTS = ("the index is being rebuilt or maintained (it is locked for writes); "
                    "searches still answer. Try this again later")
#: What every key is told when the live version changed under the server (no path in it).
NOT_LIVE = ("the index's live version changed ('beleg switch') after this server opened it, so an upload made "
            "now would be lost; uploads are refused until the server is restarted on the new version (searches "
            "still answer from the version it opened, and deletions reach every version)")


def _classify(exc: BaseException, *, operator: bool) -> ApiError:
    """The status code and error type of an exception raised while serving a request; details
    of the index's lock only for an ``operator`` (admin key without a tenant)."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, HTTPException) and 400 <= exc.status_code < 500:  # Starlette's, e.g. parsing a form
        return ApiError(exc.status_code, "invalid_request", str(exc.detail))
    if isinstance(exc, AuthError):
        return ApiError(401, "unauthorized", str(exc), {"WWW-Authenticate": "Bearer"})
    if isinstance(exc, (ScopeError, AccessDenied)):
        return ApiError(403, "forbidden", str(exc))
    if isinstance(exc, VersionNotLiveError):
        return ApiError(409, "index_switched", NOT_LIVE)
    if isinstance(exc, IndexBusyError):
        return ApiError(409, "index_busy", str(exc) if operator else BUSY_FOR_TENANTS)
    if isinstance(exc, NeedsLLMError):
        return ApiError(400, "needs_llm", str(exc))
    if isinstance(exc, (ConfigError, ValueError)) and isinstance(exc, BelegError):
        return ApiError(400, "invalid_request", str(exc))
    if isinstance(exc, LLMError):
        return ApiError(502, "llm_error", str(exc))
    if isinstance(exc, BelegError):
        return ApiError(400, "invalid_request", str(exc))
    if connection_lost(exc):
        log.warning("the database connection was lost while serving a request: %s", exc)
        return ApiError(503, "unavailable", "the index database did not answer (connection lost); retry shortly",
                        {"Retry-After": "1"})
    log.exception("internal error while serving a request", exc_info=exc)
    return ApiError(500, "internal", "internal server error; the server log has the details")


class Api:
    """The state one app holds: index threads, auth, limits, metrics, conversations."""

    def __init__(self, source: Any, auth: AuthConfig, settings: ServerSettings) -> None:
        opener, root, held = service_opener(source)
        self.upload_dir = settings.upload_dir or default_upload_dir(root)
        if set("*?[") & set(str(self.upload_dir)):  # uploads are ingested as globs rooted there (handlers)
            raise ConfigError(f"the upload folder {self.upload_dir} has a '*', '?' or '[' in its path; "
                              "give --upload-dir a folder without them")
        # A PostgreSQL view is an open transaction: end it when a thread falls idle (see release_snapshot).
        idle = settings.release_idle_s if is_postgres_url(str(root)) else None
        self.reader = IndexThread("read", opener, settings.read_threads, release_idle_s=idle)
        self.writer = IndexThread("write", opener, release_idle_s=idle)
        self.auth = auth
        self.settings = settings
        self.limiter = RateLimiter(settings.rate_per_second, settings.burst)
        self.metrics = Metrics()
        self.conversations = Conversations()
        # While the server runs, 'beleg gc' keeps the version it opened (it may be switched away from).
        self._held = ExitStack()
        self._held.enter_context(hold_version(root, held, "beleg serve"))
        self.ready = False
        #: The catalog generation each reader thread last served (a change rebuilds its search view).
        self._seen = threading.local()
        self._audit = _AuditLog(settings.audit_log) if settings.audit_log else None
        #: A database URL's password, never to appear in an answer (errors may quote the URL).
        self._secrets = url_passwords(str(root))

    async def warm_up(self) -> None:
        """Open the index and load the model before the first request (then /readyz says ready)."""
        await self.reader.call(lambda svc: (svc.kb.embedder, svc.kb.snapshot()))
        self.ready = True

    def close(self) -> None:
        self.reader.close()
        self.writer.close()
        self._held.close()

    # ------------------------------------------------------------------ plumbing
    def route(self, scope: str | None, handler: Callable[[Request, Identity | None], Awaitable[Response]],
              template: str) -> Callable[[Request], Awaitable[Response]]:
        """Wrap ``handler``: authenticate (when ``scope``), rate-limit, size-limit, map errors, count."""

        async def endpoint(request: Request) -> Response:
            t0 = time.perf_counter()
            try:
                identity = None
                if scope is not None:
                    identity = self.auth.authenticate(request.headers.get("authorization"))
                    identity.require(scope)
                    wait = self.limiter.take(identity.owner)
                    if wait > 0:
                        raise ApiError(429, "rate_limited", f"rate limit of {self.settings.rate_per_second:g} "
                                       f"requests/s exceeded; retry in {wait:.1f} s",
                                       {"Retry-After": str(max(1, round(wait + 0.5)))})
                    await self._read_limited(request)
                response = await handler(request, identity)
            except Exception as exc:  # every failure becomes one JSON error, never a traceback
                err = self.classify(exc, identity)
                self.metrics.error(template, err.kind)
                response = error_response(err.status, err.kind, err.message, err.headers)
            # A reply may hold text only its key may read: a browser must not keep it in its
            # cache, where a later page of the same origin could read it after sign-out.
            response.headers.setdefault("Cache-Control", "no-store")
            self.metrics.observe(request.method, template, response.status_code, time.perf_counter() - t0)
            return response

        return endpoint

    def classify(self, exc: BaseException, identity: Identity | None) -> ApiError:
        """:func:`_classify` for ``identity`` (None: before authentication), with the database
        password taken out of the message."""
        err = _classify(exc, operator=identity is not None and identity.operator)
        message = err.message
        for secret in self._secrets:
            message = message.replace(secret, "***")
        return ApiError(err.status, err.kind, message, err.headers) if message != err.message else err

    async def _read_limited(self, request: Request) -> None:
        """Read the body (cached on the request) up to the size limit; 413 beyond it."""
        limit = self.settings.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise ApiError(413, "too_large", f"request body of {int(declared)} bytes is over the {limit}-byte limit")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise ApiError(413, "too_large", f"request body is over the {limit}-byte limit")
            chunks.append(chunk)
        request._body = b"".join(chunks)  # Starlette reads a cached body back in .json() and .form()

    async def json_body(self, request: Request, schema: dict[str, Any], what: str) -> dict[str, Any]:
        content_type = request.headers.get("content-type")
        if content_type is not None and not _is_json(content_type):
            # A browser sends text/plain, form or multipart bodies cross-site without asking
            # (no CORS preflight); a JSON body it would have to ask for.
            raise ApiError(415, "unsupported_media_type", f"the {what} body must be JSON "
                           f"(Content-Type: application/json), got {content_type!r}")
        try:
            body = json.loads(await request.body() or b"null")
            # JSON may escape a lone surrogate (\ud800), which no UTF-8 text can hold: it would
            # fail later, in the index or half-way through a stream. Encoding the body back finds it.
            json.dumps(body, ensure_ascii=False).encode("utf-8")
        except RecursionError:
            raise ConfigError(f"the {what} body is nested too deeply") from None
        except UnicodeEncodeError:
            raise ConfigError(f"the {what} body holds a lone surrogate (such as \\ud800), which is not "
                              "text; send valid UTF-8") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise ConfigError(f"the {what} body is not valid JSON: {exc}") from None
        return openapi.validate_body(body, schema, what)

    async def index_call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """A read on the index thread, counting whether the index view was reused (a cache hit)."""

        def counted(svc: Service) -> Any:
            generation = svc.kb.catalog.generation
            self.metrics.cache("index_view", getattr(self._seen, "generation", None) == generation)
            self._seen.generation = generation
            return fn(svc, *args, **kwargs)

        return await self.reader.read(counted)

    def audit(self, identity: Identity | None, endpoint: str, query: str | None, doc_ids: list[str]) -> None:
        if self._audit is not None and identity is not None:
            self._audit.write(identity, endpoint, query, doc_ids)


def _is_json(content_type: str) -> bool:
    media = content_type.partition(";")[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


class _AuditLog:
    """One JSON line per request: who asked what, which documents it returned (off by default)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, identity: Identity, endpoint: str, query: str | None, doc_ids: list[str]) -> None:
        p = identity.principal
        line = json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "subject": identity.subject,
                           "user": p.user, "tenant": p.tenant, "endpoint": endpoint, "query": query,
                           "documents": sorted(set(doc_ids))}, ensure_ascii=False)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(line + "\n")


def create_app(index: Any, auth: AuthConfig, settings: ServerSettings | None = None) -> Starlette:
    """The ASGI app over ``index`` (a folder, a ``postgresql://`` URL, a :class:`~beleg.kb.KnowledgeBase`
    or a :class:`~beleg.service.Service`), authenticating with ``auth``."""
    from beleg.server import handlers

    settings = settings or ServerSettings()
    api = Api(index, auth, settings)
    by_path: dict[str, dict[str, Callable[[Request], Awaitable[Response]]]] = {}
    for method, path, scope, handler in handlers.ROUTES:
        if path == "/metrics" and settings.metrics_public:
            scope = None
        by_path.setdefault(path, {})[method] = api.route(scope, handler, path)
    # One route per path, for every method: a wrong method is a JSON 405 here, not a miss that
    # falls through to the static files mounted at "/".
    routes: list[Any] = [Route(path, _dispatch(methods), methods=_EVERY_METHOD) for path, methods in by_path.items()]
    static = settings.static_dir
    if static is not None and static.is_dir():
        from starlette.staticfiles import StaticFiles

        routes.append(Mount("/", app=StaticFiles(directory=static, html=True), name="static"))

    async def not_found(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        kind = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return error_response(exc.status_code, kind, f"{request.method} {request.url.path}: {exc.detail}")

    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await api.warm_up()
        yield
        api.close()

    from starlette.middleware import Middleware

    middleware = [Middleware(_NoFraming)]
    if settings.cors_origins:
        middleware.append(Middleware(_JsonCors, allow_origins=list(settings.cors_origins),
                                     allow_methods=["GET", "POST", "DELETE"],
                                     allow_headers=["Authorization", "Content-Type"]))
    app = Starlette(routes=routes, middleware=middleware, exception_handlers={HTTPException: not_found},
                    lifespan=_as_context(lifespan))
    app.state.api = api
    return app


_EVERY_METHOD = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


class _NoFraming:
    """No page of the server may be framed by another site (clickjacking the web page): a
    Content-Security-Policy in a <meta> cannot say frame-ancestors, so every response says it
    in headers (X-Frame-Options for older browsers)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.append("Content-Security-Policy", "frame-ancestors 'none'")
                headers["X-Frame-Options"] = "DENY"
                headers["X-Content-Type-Options"] = "nosniff"
            await send(message)

        await self.app(scope, receive, send_with_headers)


class _JsonCors(CORSMiddleware):
    """Starlette's CORS, with a refused preflight answered in the API's JSON error shape."""

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code != 400:
            return response
        headers = {k: v for k, v in response.headers.items() if k not in ("content-length", "content-type")}
        return error_response(400, "cors_rejected", bytes(response.body).decode(), headers)


def _dispatch(methods: dict[str, Callable[[Request], Awaitable[Response]]]) -> Callable[[Request], Awaitable[Response]]:
    allowed = ", ".join(sorted(methods))

    async def endpoint(request: Request) -> Response:
        handler = methods.get(request.method)
        if handler is None:
            return error_response(405, "method_not_allowed", f"{request.method} {request.url.path} is not "
                                  f"supported; use {allowed}", {"Allow": allowed})
        return await handler(request)

    return endpoint


def _as_context(fn: Callable[[Starlette], AsyncIterator[None]]) -> Any:
    from contextlib import asynccontextmanager

    return asynccontextmanager(fn)


def url_passwords(index: str) -> tuple[str, ...]:
    """The password of a database URL as it is written and decoded (none for a folder)."""
    from urllib.parse import unquote, urlsplit

    if not is_postgres_url(index):
        return ()
    password = urlsplit(index).password
    return tuple(dict.fromkeys([password, unquote(password)])) if password else ()


QUOTE_RANGE = re.compile(r"^(\d{1,9}):(\d{1,9})$")


def search_request(body: dict[str, Any]) -> SearchRequest:
    """A :class:`SearchRequest` from a validated /v1/search body."""
    return SearchRequest(body["query"], mode=body.get("mode", "hybrid"), k=body.get("k", 10),
                         filters=body.get("filters"), where=body.get("where"), fusion=body.get("fusion", "rrf"),
                         rrf_k=body.get("rrf_k", 60), weights=tuple(body.get("weights", (1.0, 1.0))),  # type: ignore[arg-type]
                         mmr=body.get("mmr"), strategy=body.get("strategy", "hybrid"),
                         self_query=body.get("self_query", "auto"), context=tuple(body.get("context", ())))
