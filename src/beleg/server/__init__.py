"""The HTTP service (``beleg serve``): an authenticated JSON API over one index. Needs ``beleg[server]``."""

from beleg.server.app import ServerSettings, create_app
from beleg.server.auth import AuthConfig, load_auth

__all__ = ["AuthConfig", "ServerSettings", "create_app", "load_auth"]
