"""The one exception tree of kgsearch; every error we raise descends from KgsearchError.

Each class carries the HTTP status and the stable error code that the REST API, the
MCP server and the CLI report, so an adapter needs one handler for all of them::

    KgsearchError                    500  error
    ├── InvalidRequest               400  invalid_request
    │   ├── DimensionMismatch        400  dimension_mismatch
    │   ├── ImportFailed             400  import_failed
    │   └── PayloadTooLarge          413  payload_too_large
    ├── Unauthorized                 401  unauthorized
    ├── Forbidden                    403  forbidden
    ├── NotFound                     404  not_found
    ├── Conflict                     409  conflict
    ├── BudgetExceeded               429  budget_exceeded
    ├── ConfigError                  500  config_error
    ├── StoreError                   503  store_error
    │   └── MigrationError           503  migration_error
    ├── ProviderError                502  provider_error
    │   ├── MissingCredentials       502  missing_credentials
    │   └── ExtractionFailed         502  extraction_failed
    └── MissingDependency            500  missing_dependency   (also an ImportError)
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "BudgetExceeded",
    "ConfigError",
    "Conflict",
    "DimensionMismatch",
    "ExtractionFailed",
    "Forbidden",
    "ImportFailed",
    "InvalidRequest",
    "KgsearchError",
    "MigrationError",
    "MissingCredentials",
    "MissingDependency",
    "NotFound",
    "PayloadTooLarge",
    "ProviderError",
    "StoreError",
    "Unauthorized",
    "error_class_for_code",
]

_BY_CODE: dict[str, type[KgsearchError]] = {}


class KgsearchError(Exception):
    """Root of every error kgsearch raises.

    Args:
        message: What went wrong and, where possible, what to do next.
        details: Machine-readable context (offending field, line number, ...).
    """

    status: ClassVar[int] = 500
    code: ClassVar[str] = "error"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = details or {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _BY_CODE[cls.code] = cls

    def to_dict(self) -> dict[str, Any]:
        """The wire shape shared by REST, MCP and CLI ``--json``."""
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


_BY_CODE[KgsearchError.code] = KgsearchError


class InvalidRequest(KgsearchError):
    """The caller asked for something malformed (bad filter, limit out of range...)."""

    status = 400
    code = "invalid_request"


class DimensionMismatch(InvalidRequest):
    """An embedder's dimensions differ from the ones the store was built with."""

    code = "dimension_mismatch"


class ImportFailed(InvalidRequest):
    """An import file had bad records; ``details['errors']`` lists file, line and reason."""

    code = "import_failed"


class PayloadTooLarge(InvalidRequest):
    """The request body is larger than the server accepts."""

    status = 413
    code = "payload_too_large"


class Unauthorized(KgsearchError):
    """No valid API key was presented (missing, malformed, unknown or revoked)."""

    status = 401
    code = "unauthorized"


class Forbidden(KgsearchError):
    """The key is valid but may not do this (missing scope, or another project)."""

    status = 403
    code = "forbidden"


class NotFound(KgsearchError):
    """The requested row does not exist in this project (or was deleted)."""

    status = 404
    code = "not_found"


class Conflict(KgsearchError):
    """A write collides with existing data."""

    status = 409
    code = "conflict"


class BudgetExceeded(KgsearchError):
    """An LLM spend limit (requests or tokens a minute, tokens or dollars a day) is
    reached; ``details.retry_after`` is the seconds until it resets."""

    status = 429
    code = "budget_exceeded"


class ConfigError(KgsearchError):
    """Settings are inconsistent; raised at start-up, never mid-request."""

    code = "config_error"


class StoreError(KgsearchError):
    """The database failed; the driver's exception is chained as ``__cause__``."""

    status = 503
    code = "store_error"


class MigrationError(StoreError):
    """A schema migration could not be applied."""

    code = "migration_error"


class ProviderError(KgsearchError):
    """An embedder, LLM or reranker call failed."""

    status = 502
    code = "provider_error"


class MissingCredentials(ProviderError):
    """A provider needs a key that is not configured."""

    code = "missing_credentials"


class ExtractionFailed(ProviderError):
    """A model's reply held nothing that could be parsed as entities or relationships.

    Args:
        message: What was wrong with the reply.
        raw: The reply exactly as the model wrote it (also in ``details['raw']``).
    """

    code = "extraction_failed"

    def __init__(self, message: str, *, raw: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message, details={**(details or {}), "raw": raw})
        self.raw = raw


class MissingDependency(KgsearchError, ImportError):
    """An optional extra is not installed; the message gives the pip line."""

    code = "missing_dependency"


def error_class_for_code(code: str) -> type[KgsearchError]:
    """Return the exception class for a wire error code (unknown codes map to the root)."""
    return _BY_CODE.get(code, KgsearchError)
