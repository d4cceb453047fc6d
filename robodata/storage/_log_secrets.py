"""Credentials stay out of every log: botocore (under s3fs and aiobotocore) logs each request's
headers and parameters at DEBUG, the session token (``X-Amz-Security-Token``) and the access key
id (in ``Authorization: ... Credential=<key id>/...``) among them. With the root logger at DEBUG,
as Dagster and many notebooks set it, those records would reach every handler.

A filter on a logger does not see its children's records, and robodata owns no handler, so the
scrubbing happens where records are made: a log record factory that, for the storage libraries'
loggers, replaces every credential robodata has handed to them (and the AWS ones in the
environment) with ``***`` before any handler sees the record.

>>> remember_secrets({"aws_session_token": "PLANTED-TOKEN"})
>>> class Keep(logging.Handler):  # what any handler would be given
...     def emit(self, record):
...         seen.append(record.getMessage())
>>> seen, keep, log = [], Keep(), logging.getLogger("botocore.endpoint")
>>> log.addHandler(keep); log.setLevel(logging.DEBUG)
>>> log.debug("token %s", "PLANTED-TOKEN")
>>> log.removeHandler(keep); log.setLevel(logging.NOTSET)
>>> seen
['token ***']
"""

from __future__ import annotations

import logging
import os
import threading

# The loggers of the libraries that see credentials (each name covers its children).
STORAGE_LOGGERS = ("botocore", "aiobotocore", "boto3", "s3fs", "fsspec", "urllib3", "aiohttp")
# Shorter values are not credentials; replacing them would garble every message.
_MIN_SECRET_LENGTH = 6
_CREDENTIAL_OPTIONS = ("aws_secret_access_key", "aws_session_token", "aws_access_key_id")
_CREDENTIAL_ENV = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID", "AWS_SECURITY_TOKEN")

_secrets: set[str] = set()
_lock = threading.Lock()
_installed = False


def remember_secrets(storage_options: dict | None) -> None:
    """Note the credentials in ``storage_options`` (and the environment's) so no storage
    library's log record shows them; installs the scrubbing on first use."""
    from robodata.storage._uris import canonical_options

    options = canonical_options(storage_options)
    found = {str(v) for k, v in options.items() if k in _CREDENTIAL_OPTIONS and v}
    found |= {os.environ[name] for name in _CREDENTIAL_ENV if os.environ.get(name)}
    with _lock:
        _secrets.update(s for s in found if len(s) >= _MIN_SECRET_LENGTH)
    _install()


def _scrub(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def _is_storage_logger(name: str | None) -> bool:
    # ``logging.makeLogRecord({})`` (Dagster's log manager calls it) makes a record named None.
    return isinstance(name, str) and any(name == root or name.startswith(root + ".") for root in STORAGE_LOGGERS)


def _install() -> None:
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
        make_record = logging.getLogRecordFactory()

    def scrubbed_record(*args, **kwargs) -> logging.LogRecord:
        record = make_record(*args, **kwargs)
        if not _is_storage_logger(record.name):
            return record
        secrets = sorted(_secrets, key=len, reverse=True)
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to logging's own error report
            return record
        if any(secret in message for secret in secrets):
            # Formatted once here: the arguments (headers dicts, request params) held the secrets.
            record.msg, record.args = _scrub(message, secrets), None
        return record

    logging.setLogRecordFactory(scrubbed_record)
