"""Where a route's API key may be sent: its own API host, and the hosts its provider documents.

A key goes out in a request header (``x-key``, ``x-goog-api-key``, ``Authorization: Key/Bearer ...``).  Two
things could carry it elsewhere, and neither gets the key here, in the one HTTP policy every route uses:

- **a URL from outside**: a polling or result URL from a provider's reply, or one read back from a record
  on disk (a restored CI cache can hold a doctored record).  A request that carries a key goes only to an
  allowed origin: the route's configured API origin (the scheme, host and port of its base URL, which
  ``HYPEEDIT_<PROVIDER>_BASE_URL`` moves), or, over https on port 443, a host the provider documents for
  its API (each adapter lists its own, with the documentation cited).  Anything else gets no request, not a
  byte (``KeyNotSent``).  Result *files* are fetched without any key, from wherever the reply
  says (signed URLs of delivery CDNs), so they need no such list.
- **a redirect**: httpx strips only ``Authorization`` when a redirect leaves the origin, so ``x-key`` and
  ``x-goog-api-key`` would follow it.  A request that carries a key does not follow a redirect to another
  origin at all (``RedirectNotFollowed``): no provider documents such a redirect of its API, stripping the key
  would only turn it into an unexplained 401 from a stranger, and a clear error says where it was sent.
  Redirects within the origin (and http -> https on the same host) are followed; key-less requests (result
  downloads, reference images) follow redirects anywhere, as CDNs use them.

"Carries a key" means a header holds the value of a key the process knows (the route's own, every
``KEY_ENV`` variable, and every registered secret), so the rule also covers keys set by a plugin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import httpx

from ..secrets import known_secrets, redact

_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: httpx.URL | str) -> tuple[str, str, int | None]:
    url = httpx.URL(str(url))
    return url.scheme, url.host.lower(), url.port or _DEFAULT_PORTS.get(url.scheme)


def shown_origin(url: httpx.URL | str) -> str:
    scheme, host, port = origin(url)
    return f"{scheme}://{host}" + ("" if port == _DEFAULT_PORTS.get(scheme) else f":{port}")


@dataclass(frozen=True)
class KeyHosts:
    """The origins a route's key may go to (see the module docstring)."""

    route: str
    origins: frozenset[tuple[str, str, int | None]]
    documented: frozenset[str] = frozenset()

    def allows(self, url: httpx.URL | str) -> bool:
        scheme, host, port = origin(url)
        return (scheme, host, port) in self.origins or (scheme == "https" and port == 443 and host in self.documented)

    def describe(self) -> str:
        listed = [shown_origin(f"{s}://{h}:{p}") for s, h, p in sorted(self.origins, key=str)]
        return ", ".join(listed + sorted(self.documented - {h for _, h, _ in self.origins}))


def key_hosts(route: str, base: str, documented: Iterable[str] = ()) -> KeyHosts:
    """The key hosts of a route whose configured API base URL is ``base``."""
    return KeyHosts(route, frozenset({origin(base)}), frozenset(h.lower() for h in documented))


class KeyNotSent(httpx.RequestError):
    """A request that would have sent a key somewhere it must not go; nothing was sent."""


class RedirectNotFollowed(KeyNotSent):
    """A request carrying a key was redirected to another origin; the redirect was not followed."""


def carries_key(headers: httpx.Headers, extra: Iterable[str] = ()) -> bool:
    secrets = known_secrets(extra)
    return any(secret in value for _, value in headers.items() for secret in secrets)


def check_request(request: httpx.Request, hosts: KeyHosts | None, extra: Iterable[str] = ()) -> None:
    """Refuse ``request`` when it carries a key to an origin ``hosts`` does not allow."""
    if hosts is None or hosts.allows(request.url) or not carries_key(request.headers, extra):
        return
    raise KeyNotSent(redact(f"the {hosts.route} key is not sent to {shown_origin(request.url)}: not the route's "
                            f"API host ({hosts.describe()}); nothing was sent there"), request=request)


def _same_origin_or_upgrade(source: httpx.URL, target: httpx.URL) -> bool:
    if origin(source) == origin(target):
        return True
    # httpx's own exception for Authorization: http -> https on the same host and default ports
    return (source.scheme == "http" and target.scheme == "https" and source.host == target.host
            and origin(source)[2] == 80 and origin(target)[2] == 443)


def redirect_guard(extra: Iterable[str] = ()) -> Callable[[httpx.Response], None]:
    """An httpx response hook that stops a request carrying a key from following a redirect off its origin."""
    extra = tuple(extra)

    def hook(response: httpx.Response) -> None:
        location = response.headers.get("location")
        if not response.has_redirect_location or not location:
            return
        request = response.request
        try:
            target = request.url.join(location)
        except httpx.InvalidURL:
            return  # httpx does not accept it itself
        if _same_origin_or_upgrade(request.url, target) or not carries_key(request.headers, extra):
            return
        where = f"HTTP {response.status_code} from {shown_origin(request.url)} redirects to {shown_origin(target)}"
        raise RedirectNotFollowed(redact(
            f"{where}: not followed, since the request carries an API key and the redirect leaves the origin; "
            "nothing was sent there "
            "(a proxy or a moved base URL? check HYPEEDIT_<PROVIDER>_BASE_URL)"), request=request)

    return hook
