"""Every request is bounded: an overall deadline, and a cap on its body checked while it is decompressed.

Driven through the real policy client (make_http_client) against a loopback fake that trickles, never ends,
or answers with a compression bomb (providers_fakes/base.py, the wire faults).
"""

from __future__ import annotations

import gzip
import itertools
import time
import tracemalloc
import zlib

import pytest
from providers_fakes import FakeServer, Reply

from pytest_hypeedit.errors import ProviderError
from pytest_hypeedit.transport import bounds
from pytest_hypeedit.transport.bounds import MiB
from pytest_hypeedit.transport.http import RetryPolicy, download_to, make_http_client, send

FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02)
BODY = {"status": "Pending", "note": "x" * 2000}


@pytest.fixture
def server():
    fake = FakeServer()
    fake.route("GET", "/v1/thing", lambda seen: Reply(200, BODY))
    fake.route("GET", "/files/a.png", lambda seen: Reply(200, b"\x89PNG" + b"p" * 5000, {"content-type": "image/png"}))
    with fake:
        yield fake


def client(**options):
    return make_http_client("bfl", policy=FAST, sleep=lambda s: None, **options)


# --------------------------------------------------------------------------- the deadline


def test_a_trickled_reply_ends_at_the_overall_deadline_with_a_clear_error(server):
    server.inject("trickle", delay=0.05)  # headers and body, one byte every 50 ms: no read ever times out
    started = time.monotonic()
    with client(timeout=5.0, deadline_s=1.0) as http:
        with pytest.raises(ProviderError) as info:
            send(http, "GET", f"{server.url}/v1/thing", route="bfl", model="flux-2-max")
    took = time.monotonic() - started
    assert 0.9 < took < 3.0, took
    message = str(info.value)
    assert "not complete within the overall deadline of 1 s" in message and "deadline_s" in message
    assert len(server.seen()) == 1  # a deadline that passed is not tried again: it would pass again


def test_the_deadline_also_bounds_a_download_read_as_it_arrives(server, tmp_path):
    server.inject("trickle", delay=0.02, path="/files/")
    with client(timeout=5.0, deadline_s=0.5) as http:
        with pytest.raises(ProviderError, match="overall deadline of 0.5 s"):
            download_to(http, f"{server.url}/files/a.png", tmp_path, route="bfl", model="flux-2-max")
    assert list(tmp_path.iterdir()) == [] and len(server.seen("/files/")) == 1


def test_a_normal_reply_is_not_touched_by_the_deadline(server):
    with client(timeout=5.0, deadline_s=2.0) as http:
        assert http.get(f"{server.url}/v1/thing").json() == BODY


def test_the_default_deadline_sits_above_the_sdks_600_s_read_timeout():
    assert bounds.deadline_for(180.0) == 900.0
    assert bounds.deadline_for(600.0) == 900.0
    assert bounds.deadline_for(1000.0) == 1500.0
    assert bounds.deadline_for(600.0, 42) == 42.0


# --------------------------------------------------------------------------- the caps


def test_an_endless_json_reply_stops_at_its_cap_and_is_not_retried(server):
    server.inject("endless")
    with client(reply_cap=1 * MiB) as http:
        with pytest.raises(ProviderError) as info:
            send(http, "GET", f"{server.url}/v1/thing", route="bfl", model="flux-2-max")
    assert "passed 1 MB (decoded)" in str(info.value) and info.value.retryable is False
    assert len(server.seen()) == 1


def test_a_gzip_bomb_stops_while_it_is_decompressed(server):
    server.inject("bomb", body=512 * MiB)  # 512 MB of zeros in about 0.5 MB of gzip
    tracemalloc.start()
    try:
        with client(reply_cap=2 * MiB) as http:
            with pytest.raises(ProviderError, match="passed 2 MB"):
                send(http, "GET", f"{server.url}/v1/thing", route="bfl", model="flux-2-max")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * MiB, peak  # never the 512 MB the bomb holds: decoding stopped at the cap


def test_an_endless_compressed_body_that_decodes_to_nothing_stops_at_the_cap_too(server):
    empty_blocks = b"\x00\x00\x00\xff\xff" * 20_000  # deflate's empty stored block, never the final one
    gzip_header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    server.route("GET", "/enc/nothing", lambda seen: Reply(200, headers={"content-encoding": "gzip"},
                                                           chunks=itertools.chain([gzip_header],
                                                                                  itertools.repeat(empty_blocks))))
    with client(reply_cap=1 * MiB, deadline_s=10) as http:
        with pytest.raises(ProviderError, match="passed 1 MB"):
            send(http, "GET", f"{server.url}/enc/nothing", route="bfl", model="flux-2-max")


def test_a_download_that_never_ends_stops_at_the_image_cap_and_leaves_no_file(server, tmp_path):
    server.inject("endless", path="/files/", headers={"content-type": "image/png"})
    with client(download_cap=3 * MiB) as http:
        with pytest.raises(ProviderError, match="passed 3 MB") as info:
            download_to(http, f"{server.url}/files/a.png", tmp_path, route="bfl", model="flux-2-max")
    assert info.value.retryable is False
    assert list(tmp_path.iterdir()) == [] and len(server.seen("/files/")) == 1  # not downloaded three times


def test_a_gzip_bomb_download_stops_at_the_cap(server, tmp_path):
    server.inject("bomb", path="/files/", body=256 * MiB, headers={"content-type": "image/png"})
    with client(download_cap=4 * MiB) as http:
        with pytest.raises(ProviderError, match="passed 4 MB"):
            download_to(http, f"{server.url}/files/a.png", tmp_path, route="bfl", model="flux-2-max")
    assert list(tmp_path.iterdir()) == []


def test_gzip_and_deflate_replies_are_decoded_and_we_ask_for_nothing_else(server):
    payload = b'{"status": "Ready"}'
    raw_deflate = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    encodings = {"gzip": gzip.compress(payload), "deflate": zlib.compress(payload),
                 "deflate-raw": raw_deflate.compress(payload) + raw_deflate.flush()}
    for name, data in encodings.items():
        header = name.split("-")[0]
        server.route("GET", f"/enc/{name}", lambda seen, d=data, h=header: Reply(200, d, {"content-encoding": h}))
    with client() as http:
        for name in encodings:
            assert http.get(f"{server.url}/enc/{name}").json() == {"status": "Ready"}, name
    assert {seen.headers["accept-encoding"] for seen in server.seen("/enc/")} == {"gzip, deflate"}


def test_an_encoding_we_did_not_ask_for_is_not_accepted_not_decoded(server):
    server.route("GET", "/enc/br", lambda seen: Reply(200, b"\x1b\x03\x00", {"content-encoding": "br"}))
    with client() as http:
        with pytest.raises(ProviderError, match="br-encoded, which was not asked for") as info:
            send(http, "GET", f"{server.url}/enc/br", route="bfl", model="flux-2-max")
    assert info.value.retryable is False


def test_the_inline_cap_holds_a_base64_image_of_the_image_cap():
    assert bounds.inline_cap(96 * MiB) >= 96 * MiB * 4 // 3
    assert bounds.JSON_CAP <= 8 * MiB


# --------------------------------------------------------------------------- proxies from the environment


def test_a_proxy_from_the_environment_is_used_inside_the_policy(server, monkeypatch):
    proxy = FakeServer()
    with proxy:
        proxy.inject("status", status=503, count=1, path="")  # the policy retries through the proxy too
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        with client() as http:
            http.get(f"{server.url}/v1/thing")
        seen = proxy.seen("")
    assert len(seen) == 2 and seen[0].path.startswith(f"{server.url}/v1/thing")  # absolute form: a proxy request
    assert server.seen() == []


def test_no_proxy_is_honoured(server, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with client() as http:
        assert http.get(f"{server.url}/v1/thing").status_code == 200


# --------------------------------------------------------------------------- one TLS context per process


def tls_context_of(transport) -> object:
    direct = transport.direct if isinstance(transport, bounds.EnvProxyTransport) else transport
    return direct._pool._ssl_context  # httpcore's pool keeps the context it connects with


def test_every_transport_shares_one_tls_context_and_a_ca_bundle_named_later_gets_its_own(monkeypatch):
    """httpx loads certifi's CA bundle for each new transport (~40 ms); every transport of a process shares
    one, unless the environment names another bundle (SSL_CERT_FILE, which httpx honours)."""
    import certifi

    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy",
                 "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    first, second = bounds.network_transport(), bounds.network_transport()
    assert tls_context_of(first) is tls_context_of(second)
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")  # through a proxy too
    assert tls_context_of(bounds.network_transport()) is tls_context_of(first)
    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
    assert tls_context_of(bounds.network_transport()) is not tls_context_of(first)
