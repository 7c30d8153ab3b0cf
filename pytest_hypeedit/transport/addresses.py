"""Addresses a request goes to (a base URL from the environment or an option, a result URL from a reply), and the
model options that shape every request (its timeouts, deadline, size cap, waits): checked before anything is paid.

httpx does not accept an address holding a control character (a newline), an unclosed IPv6 bracket or a bad port only
when the request is built (``httpx.InvalidURL``, which is no ``httpx.HTTPError``), and one without ``http://`` or
``https://`` only when it is sent (``httpx.UnsupportedProtocol``).  By then a paid call is journaled: an address
that cannot be used looked like a call that may have reached the provider, counted possibly paid and bought
again on every run, with nothing sent.  So:

- every setting whose value becomes an address of a request (``HYPEEDIT_<PROVIDER>_BASE_URL``,
  ``--judge-base-url``) is checked at start-up, and an unusable one is a usage error naming it
  (``check_address_settings``);
- every model's options that the HTTP client or its waits are made from (``REQUEST_NUMBERS``) are positive
  numbers: ``timeout_s: "abc"`` failed while the client was built, with the call journaled, and counted as
  possibly paid with nothing sent (``check_request_options``);
- a result URL a reply names is checked before it is fetched (``url_problem``): an unusable one is the answered
  call's failure (paid, not bought again: providers/adapter.py ``download``), never a fault of the plugin.
"""

from __future__ import annotations

import os
import re
from typing import Iterable, Mapping

import httpx

from ..errors import ConfigError
from ..finite import finite_number
from ..registry import ModelSpec
from ..secrets import redact

#: The variables that move a provider's API (secrets.base_url builds their names).
BASE_URL_VARIABLE = re.compile(r"HYPEEDIT_[A-Z0-9_]+_BASE_URL")
#: C0 controls, DEL and C1 controls: never part of an address (httpx does not accept C0 and DEL; C1 it would encode).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def base_url_variable(provider: str) -> str:
    """The variable that moves ``provider``'s API (as secrets.base_url reads it)."""
    return f"HYPEEDIT_{re.sub(r'[^A-Za-z0-9]', '_', provider).upper()}_BASE_URL"


def url_problem(url: object) -> str | None:
    """Why ``url`` cannot be the address of a request, or None when it can: an http(s) URL that httpx parses,
    with a host and no control character."""
    if not isinstance(url, str) or not url.strip():
        return "it is empty" if isinstance(url, str) or url is None else f"it is a {type(url).__name__}, not text"
    control = _CONTROL.search(url)
    if control is not None:
        return f"it holds the control character {control.group()!r} at position {control.start()}"
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        return f"it cannot be parsed ({exc})"
    if parsed.scheme not in ("http", "https"):
        return "it is not an http:// or https:// address"
    if not parsed.host:
        return "it names no host"
    if parsed.port is not None and not 0 < parsed.port < 65536:
        return f"its port {parsed.port} is not one (1 to 65535)"
    return None


def quoted(url: object, limit: int = 120) -> str:
    """An address as a message quotes it: redacted, control characters visible, cut at ``limit``."""
    text = redact(repr(url if isinstance(url, str) else str(url)))
    return text if len(text) <= limit else text[:limit] + "...'"


def check_request_settings(models: Iterable[ModelSpec], judge_base_url: str | None = None) -> None:
    """Everything of the run's settings that reaches a request, checked at start-up (glue/startup.py): the
    addresses and the models' request options."""
    check_address_settings(judge_base_url)
    check_request_options(models)


def check_address_settings(judge_base_url: str | None = None,
                           environ: Mapping[str, str] | None = None) -> None:
    """Every ``HYPEEDIT_<PROVIDER>_BASE_URL`` set in the environment, and ``--judge-base-url`` when given, is an
    address a request can go to; else a ConfigError naming each one that is not, before anything is paid."""
    environ = os.environ if environ is None else environ
    settings = [(name, value.strip()) for name, value in sorted(environ.items())
                if BASE_URL_VARIABLE.fullmatch(name) and value.strip()]
    if judge_base_url is not None:
        settings.append(("--judge-base-url", judge_base_url))
    problems = [f"{name}={quoted(value)}: {problem}" for name, value in settings
                if (problem := url_problem(value)) is not None]
    if problems:
        raise ConfigError("an address a request would go to cannot be used: " + "; ".join(problems)
                          + ". Give an http:// or https:// URL on one line (e.g. https://proxy.example.com/v1), "
                          "or unset the variable to use the provider's own address")


#: Model options that make the HTTP client (its read timeout, deadline and size cap) or the waits of its requests:
#: each a number of seconds (or MB) above 0, when given; those in REQUEST_NUMBERS_OR_ZERO may be 0 (no wait).
REQUEST_NUMBERS = ("timeout_s", "deadline_s", "max_image_mb", "max_wait_s", "poll_s", "poll_max_s",
                   "batch_max_wait_s", "batch_poll_s", "batch_poll_max_s")
REQUEST_NUMBERS_OR_ZERO = ("wait_s", "batch_linger_s")


def check_request_options(models: Iterable[ModelSpec]) -> None:
    """Each model's request options are numbers in range; else a ConfigError naming the model and option."""
    problems = [f"model {spec.name}: options.{key} is {quoted(spec.options[key], 40)}"
                for spec in models for key in REQUEST_NUMBERS + REQUEST_NUMBERS_OR_ZERO
                if key in spec.options and not _in_range(spec.options[key], zero=key in REQUEST_NUMBERS_OR_ZERO)]
    if problems:
        raise ConfigError("; ".join(problems) + ": each must be a number of seconds above 0 (MB for max_image_mb; "
                          "wait_s and batch_linger_s may be 0); fix it in the --models-file that sets it")


def _in_range(value: object, *, zero: bool) -> bool:
    return finite_number(value) and (value >= 0 if zero else value > 0)
