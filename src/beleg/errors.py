"""Errors raised by Beleg.

Every error derives from :class:`BelegError`; most also derive from the builtin that
matches their meaning, so ``except ValueError`` keeps working for callers that do not
know Beleg. Messages say what was received, what was expected and what to do.
"""

from __future__ import annotations


class BelegError(Exception):
    """Root of all Beleg errors."""


class ConfigError(BelegError, ValueError):
    """A configuration value, spec string or option is invalid."""


class FilterError(BelegError, ValueError):
    """A metadata filter expression cannot be parsed or applied."""


class IngestError(BelegError):
    """A single source could not be ingested (reported per file, never fatal to a run)."""


class NoContent(IngestError):
    """A file that is intentionally empty (zero bytes, or nothing after its front matter, as
    in a redirect stub): the file is reported ``skipped`` with the reason, not ``failed``."""


class UnsupportedFormatError(IngestError, ValueError):
    """No reader handles this kind of file."""


class IndexStateError(BelegError, RuntimeError):
    """The index directory is missing, corrupt or was built with another configuration."""


class IndexVersionError(IndexStateError):
    """The index was built with a different chunking/embedding configuration."""


class ReadOnlyIndexError(IndexStateError):
    """A write to an index this process may only read (its folder or catalog is not writable)."""


class MissingDependencyError(BelegError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


class ModelError(BelegError, RuntimeError):
    """A model could not be loaded or failed while running."""


def missing_dependency(package: str, extra: str, cause: BaseException | None = None) -> MissingDependencyError:
    """Build the error raised when an optional backend's package is absent.

    Example: ``raise missing_dependency("pypdf", "pdf") from exc``.
    """
    err = MissingDependencyError(
        f"{package} is not installed; install it with: pip install \"beleg[{extra}]\""
    )
    if cause is not None:
        err.__cause__ = cause
    return err


class LLMError(BelegError, RuntimeError):
    """An LLM backend failed; the message names the endpoint and what to check."""


class LLMUnavailableError(LLMError, ConnectionError):
    """The LLM endpoint could not be reached (refused, DNS, timeout after all retries)."""


class LLMAuthError(LLMError, PermissionError):
    """The LLM endpoint rejected the credentials (HTTP 401/403)."""


class LLMResponseError(LLMError):
    """The LLM endpoint answered with an error status or a payload Beleg cannot read."""


class NeedsLLMError(ConfigError):
    """The requested feature has no honest offline method; configure an LLM (``--llm``)."""
