"""One code path for a local directory and s3://: Lance takes ``storage_options``, upload files
go through fsspec, and secrets are scrubbed from anything shown to a person."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import fsspec

# Lance storage option -> environment variable that supplies it.
_ENV_OPTIONS = {
    "aws_access_key_id": "AWS_ACCESS_KEY_ID",
    "aws_secret_access_key": "AWS_SECRET_ACCESS_KEY",
    "aws_session_token": "AWS_SESSION_TOKEN",
    "aws_region": "AWS_REGION",
    "aws_endpoint": "AWS_ENDPOINT_URL",
}
SECRET_KEYS = ("aws_secret_access_key", "aws_session_token", "aws_access_key_id")
# Other spellings Lance (object_store) accepts for the same options: fsspec must see them too, or
# it would ask the store without the credentials (and a missing bucket look like no answer).
OPTION_ALIASES = {
    "access_key_id": "aws_access_key_id",
    "secret_access_key": "aws_secret_access_key",
    "session_token": "aws_session_token",
    "aws_token": "aws_session_token",
    "token": "aws_session_token",
    "endpoint": "aws_endpoint",
    "endpoint_url": "aws_endpoint",
    "aws_endpoint_url": "aws_endpoint",
    "region": "aws_region",
    "aws_default_region": "aws_region",
}


def canonical_options(storage_options: dict | None) -> dict:
    """``storage_options`` with every accepted spelling of an option under its ``aws_`` name
    (an explicit ``aws_`` name wins).

    >>> canonical_options({"secret_access_key": "s", "endpoint": "http://x"})
    {'aws_secret_access_key': 's', 'aws_endpoint': 'http://x'}
    """
    options: dict = {}
    for key, value in (storage_options or {}).items():
        name = OPTION_ALIASES.get(str(key).lower(), key)
        if name not in options or key == name:
            options[name] = value
    return options


def is_remote(uri: str) -> bool:
    return "://" in str(uri) and not str(uri).startswith("file://")


def join_uri(root: str | os.PathLike, *parts: str) -> str:
    """``root`` joined with ``parts`` by '/', for local paths and s3:// alike."""
    root = str(root)
    if not is_remote(root):
        return str(Path(root.removeprefix("file://")).joinpath(*parts))
    return "/".join([root.rstrip("/"), *(p.strip("/") for p in parts)])


def storage_options_from_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Lance storage options for s3:// from the standard AWS environment variables.

    ``AWS_ENDPOINT_URL`` points at an S3-compatible server; an http:// endpoint also sets
    ``allow_http``.
    """
    environ = os.environ if environ is None else environ
    options = {key: environ[var] for key, var in _ENV_OPTIONS.items() if environ.get(var)}
    if environ.get(ALLOW_HTTP_VARIABLE):  # said by the user: kept as they said it
        options["allow_http"] = environ[ALLOW_HTTP_VARIABLE]
    return http_endpoint_allowed(options, environ)


# How Lance's object store spells "plain http may be used", as an option and in the environment.
ALLOW_HTTP_OPTIONS = ("allow_http", "aws_allow_http")
ALLOW_HTTP_VARIABLE = "AWS_ALLOW_HTTP"
# The environment variables Lance's object store takes an S3 endpoint from (the first one set wins).
ENDPOINT_VARIABLES = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT")


def http_endpoint_allowed(storage_options: dict | None, environ: Mapping[str, str] | None = None) -> dict:
    """``storage_options`` plus ``allow_http`` when the S3 endpoint they (or, without one, the
    environment's ``AWS_ENDPOINT_URL``) name is an http:// URL: Lance's object store refuses plain
    http ("HTTP error: builder error") unless told. An ``allow_http`` the caller gave, in the
    options or as ``AWS_ALLOW_HTTP``, is kept as it is.

    >>> http_endpoint_allowed({"aws_endpoint": "http://127.0.0.1:9000"}, environ={})
    {'aws_endpoint': 'http://127.0.0.1:9000', 'allow_http': 'true'}
    >>> http_endpoint_allowed(None, environ={"AWS_ENDPOINT_URL": "http://minio:9000"})
    {'allow_http': 'true'}
    >>> http_endpoint_allowed(None, environ={"AWS_ENDPOINT_URL": "https://s3.example.com"})
    {}
    """
    environ = os.environ if environ is None else environ
    options = dict(storage_options or {})
    if any(key in options for key in ALLOW_HTTP_OPTIONS) or environ.get(ALLOW_HTTP_VARIABLE):
        return options
    endpoint = canonical_options(options).get("aws_endpoint")
    if not endpoint:
        endpoint = next((environ[var] for var in ENDPOINT_VARIABLES if environ.get(var)), "")
    if str(endpoint).lower().startswith("http://"):
        options["allow_http"] = "true"
    return options


def env_storage_options() -> dict[str, str] | None:
    """``storage_options_from_env()``, or None when the environment sets none: what a command
    passes to the library when the user gave no options of their own.

    >>> robodata.open("data/demo", storage_options=env_storage_options()).version  # or an s3:// root
    3
    """
    return storage_options_from_env() or None


def fsspec_filesystem(uri: str, storage_options: dict[str, str] | None = None):
    """The fsspec file system for ``uri``, configured from Lance-style ``storage_options``."""
    if not is_remote(uri):
        return fsspec.filesystem("file")
    protocol = str(uri).split("://", 1)[0]
    options = canonical_options(storage_options)
    if protocol in ("s3", "s3a"):
        from robodata.storage._deadlines import botocore_config
        from robodata.storage._log_secrets import remember_secrets

        remember_secrets(options)  # botocore logs its requests' credentials at DEBUG

        client_kwargs = {}
        if options.get("aws_endpoint"):
            client_kwargs["endpoint_url"] = options["aws_endpoint"]
        if options.get("aws_region"):
            client_kwargs["region_name"] = options["aws_region"]
        key, secret = options.get("aws_access_key_id"), options.get("aws_secret_access_key")
        fs = fsspec.filesystem(
            "s3",
            key=key,
            secret=secret,
            token=options.get("aws_session_token"),
            client_kwargs=client_kwargs,
            # Every listing and read has a timeout and is tried twice at most: a silent store
            # fails the step within about its deadline (robodata.storage._deadlines).
            config_kwargs=botocore_config(options),
            # A new client (and connection pool) for every call, as before; with credentials
            # given, from one session per process (see _shared_session).
            session=_shared_session() if key and secret else None,
            skip_instance_cache=True,
        )
        fs.retries = 1  # s3fs's own retry loop (5 by default) on top of botocore's
        return fs
    return fsspec.filesystem(protocol, **{k: v for k, v in options.items() if not k.startswith("robodata_")})


_SESSIONS: dict[int, object] = {}


def _shared_session():
    """This process's aiobotocore session. A new session reads botocore's endpoint and S3
    service models again on every file-system call (a listing then costs 3.8x the CPU:
    ``python -m benchmarks s3-client``); a session's caches of those models are all it shares,
    since credentials are given with each client. Keyed by process: not carried over a fork."""
    from aiobotocore.session import AioSession

    session = _SESSIONS.get(os.getpid())
    if session is None:
        _SESSIONS.clear()
        session = _SESSIONS[os.getpid()] = AioSession()
    return session


def redact(text: str, storage_options: dict[str, str] | None = None) -> str:
    """``text`` with every credential value from ``storage_options`` (and the environment)
    replaced by ``***``."""
    secrets = {v for k, v in canonical_options(storage_options).items() if k in SECRET_KEYS and v}
    secrets |= {os.environ[_ENV_OPTIONS[k]] for k in SECRET_KEYS if os.environ.get(_ENV_OPTIONS[k])}
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def safe_uri(uri: str, storage_options: dict[str, str] | None = None) -> str:
    """``uri`` as it may be shown to a person: no user info, no query string, no credential.

    >>> safe_uri("s3://KEY:SECRET@bucket/data?X-Amz-Signature=abc")
    's3://bucket/data'
    """
    parts = urlsplit(uri)
    if parts.scheme and is_remote(uri):
        uri = urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], parts.path, "", ""))
    return redact(uri, storage_options)
