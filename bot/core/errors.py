"""The small named hierarchy of errors closebot raises and explains to its user."""


class CloseBotError(Exception):
    """Base class: the message is written for the person running closebot."""


class ConfigError(CloseBotError):
    """A setting in the environment or on the command line is missing or malformed."""


class DataError(CloseBotError):
    """Close data is missing or malformed (unknown period, bad CSV)."""


class NotFoundError(CloseBotError):
    """A run or question id that the store does not know."""


class AnswerError(CloseBotError):
    """An answer to a question is malformed (out of range, required left empty)."""


class AlreadyAnsweredError(CloseBotError):
    """A claim lost: the question was answered, cancelled or expired before."""

    def __init__(self, message: str, *, status: str, by: str | None) -> None:
        super().__init__(message)
        self.status = status
        self.by = by


class ReplayedError(CloseBotError):
    """A Slack request already handled: its signature was recorded by an earlier delivery."""


class ModelError(CloseBotError):
    """The model could not produce a reply (after the SDK's own retries)."""


class ModelAuthError(ModelError):
    """The API key was refused (401/403)."""


class ModelTransientError(ModelError):
    """A failure that passes (rate limits, overload, connection, 5xx): the run waits and
    retries by itself. `retry_after`: the seconds the API asked us to wait, if it said."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ModelRateLimitedError(ModelTransientError):
    """Rate limited (429) and retries did not get through."""


class ModelOverloadedError(ModelTransientError):
    """The API is overloaded (529) and retries did not get through."""


class ModelUnavailableError(ModelTransientError):
    """Connection failures, timeouts and 5xx answers after retries."""


class ModelRequestError(ModelError):
    """The API rejected the request itself (400, 404, 413, 422)."""


class StorageError(CloseBotError):
    """The database cannot take a write right now."""


class BusyError(StorageError):
    """The database is locked by another writer; the caller chose not to wait for it."""


class ReadOnlyError(StorageError):
    """The database (or its folder) is read-only: nothing can be recorded."""


class StorageFullError(StorageError):
    """The disk is full or failing (SQLITE_FULL, an I/O error): the transaction was rolled
    back, nothing was written; a later write works again once there is room."""


class CorruptDatabaseError(StorageError):
    """The database file is damaged (quick_check or a read found it malformed): closebot
    will not serve from it. Restore a backup (README: Backups)."""


class PeriodTakenError(CloseBotError):
    """A close of this period is already under way (`run_id`): a period has one live close."""

    def __init__(self, message: str, *, run_id: str) -> None:
        super().__init__(message)
        self.run_id = run_id


class NotAuthorizedError(CloseBotError):
    """Someone other than the run's starter or an approver tried to answer or steer it, or a
    control refused this person's answer (`reason`, e.g. a second approver must differ)."""

    def __init__(self, message: str, *, started_by: str | None, reason: str | None = None) -> None:
        super().__init__(message)
        self.started_by = started_by
        self.reason = reason
