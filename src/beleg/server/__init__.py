"""The HTTP service (``beleg serve``): an authenticated JSON API over one index. Needs ``beleg[server]``.

``create_app`` and ``ServerSettings`` are imported on first use, so ``beleg.server.auth``
(used by ``beleg keys``) works without the server's dependencies installed.
"""

from typing import Any

from beleg.server.auth import AuthConfig, load_auth

__all__ = ["AuthConfig", "ServerSettings", "create_app", "load_auth"]


def __getattr__(name: str) -> Any:
    if name in ("create_app", "ServerSettings"):
        from beleg.server import app

        return getattr(app, name)
    raise AttributeError(f"module 'beleg.server' has no attribute {name!r}")
