"""API keys from the environment, base URLs, and redaction of key values.

Keys come from the variables each provider's own SDK reads
(docs/reference/environment.md).  ``redact`` is applied to every message that could quote a
request or a provider's reply, so a key value never reaches a record, a
report or a log line.  Log lines the plugin does not write itself (httpcore and
httpx log every request and reply header at DEBUG; a provider may echo the key
in one) are redacted as they are made: ``install_log_redaction`` puts a record
factory in front of the logging module's, so every handler (the terminal's live
log, pytest's captured log in junit XML and report.html) sees the mask.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import urllib.parse
from typing import Any, Callable, Iterable

from .errors import ConfigError

#: route -> the variables that can hold its key, in the order they are tried.
KEY_ENV: dict[str, tuple[str, ...]] = {
    # google-genai lets GOOGLE_API_KEY win over GEMINI_API_KEY; we do the same.
    "gemini": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "ark": ("ARK_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "bfl": ("BFL_API_KEY",),
    "fal": ("FAL_KEY",),
    "dashscope": ("DASHSCOPE_API_KEY",),
    "replicate": ("REPLICATE_API_TOKEN",),
    "runware": ("RUNWARE_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
}

#: Values shorter than this are not redacted: replacing "a" or "1" everywhere
#: would mangle messages, and no real key is that short.
MIN_SECRET_LENGTH = 8
MASK = "***"

#: Extra secret values registered at run time (e.g. a judge key read from a custom variable).
_registered: set[str] = set()


def key_for(route: str, variables: Iterable[str] | None = None) -> str:
    """The API key of ``route``; a ConfigError naming the variable(s) and the route when none is set."""
    names = tuple(variables) if variables is not None else KEY_ENV.get(route, ())
    value = find_key(names)
    if value is not None:
        return value
    if not names:
        raise ConfigError(f"route {route}: no environment variable is known for its API key")
    wanted = " or ".join(names)
    raise ConfigError(
        f"route {route} needs an API key: set {wanted} in the environment "
        "(or choose a model on another route with --model)"
    )


def find_key(variables: Iterable[str]) -> str | None:
    """The first of these environment variables that holds a key, or None."""
    for name in variables:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def base_url(provider: str, default: str) -> str:
    """``HYPEEDIT_<PROVIDER>_BASE_URL`` if set, else ``default``; without a trailing slash."""
    variable = f"HYPEEDIT_{re.sub(r'[^A-Za-z0-9]', '_', provider).upper()}_BASE_URL"
    return (os.environ.get(variable, "").strip() or default).rstrip("/")


def register_secret(value: str) -> None:
    """Redact ``value`` too from now on (a key that is not in one of the KEY_ENV variables)."""
    if value and len(value) >= MIN_SECRET_LENGTH:
        _registered.add(value)


def register_key_variables(variables: Iterable[str]) -> None:
    """Redact the values of these variables too: the key variables a plugin's provider or judge declares
    (``key_env``), which KEY_ENV does not know."""
    for name in variables:
        register_secret(os.environ.get(name, "").strip())


def known_secrets(extra: Iterable[str] = ()) -> list[str]:
    """Every secret value to hide, longest first (so a key that contains another is masked whole)."""
    values = {os.environ.get(name, "") for names in KEY_ENV.values() for name in names}
    values |= _registered | set(extra)
    values = {value.strip() for value in values if value and len(value.strip()) >= MIN_SECRET_LENGTH}
    return sorted(values, key=len, reverse=True)


def redact(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with every known key value (plain or URL-quoted) replaced by ``***``."""
    text = str(text)
    for value in known_secrets(extra):
        text = text.replace(value, MASK)
        quoted = urllib.parse.quote(value, safe="")
        if quoted != value:
            text = text.replace(quoted, MASK)
    return text


# --------------------------------------------------------------------------- log records

_factory_lock = threading.Lock()


class _RedactingFactory:
    """A log record factory that masks every known key in a record's message and traceback text."""

    def __init__(self, inner: Callable[..., logging.LogRecord]) -> None:
        self.inner = inner

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.inner(*args, **kwargs)
        secrets = known_secrets()
        if secrets:
            _redact_record(record, secrets)
        return record


def _redact_record(record: logging.LogRecord, secrets: list[str]) -> None:
    try:
        message = record.getMessage()
    except Exception:  # a broken format string: leave it to logging's own error report
        return
    masked = redact(message)
    if masked != message:
        record.msg, record.args = masked, None
    if record.exc_info and not record.exc_text:
        text = logging.Formatter().formatException(record.exc_info)
        record.exc_text = redact(text)  # formatters reuse exc_text instead of formatting the traceback again


def install_log_redaction() -> None:
    """Mask keys in every log record from now on, whoever logs it (idempotent; the first HTTP client calls it)."""
    with _factory_lock:
        current = logging.getLogRecordFactory()
        if not isinstance(current, _RedactingFactory):
            logging.setLogRecordFactory(_RedactingFactory(current))
