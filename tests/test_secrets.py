import pytest

from pytest_hypeedit import secrets
from pytest_hypeedit.errors import ConfigError

KEY = "sk-test-SECRET-value-1234567890"


def test_key_for_returns_the_first_set_variable(monkeypatch):
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    assert secrets.key_for("gemini") == KEY


def test_missing_key_names_the_variable_and_route(monkeypatch):
    monkeypatch.delenv("BFL_API_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"route bfl .*BFL_API_KEY"):
        secrets.key_for("bfl")


def test_missing_key_lists_every_variable(monkeypatch):
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(ConfigError) as info:
        secrets.key_for("gemini")
    assert "GOOGLE_API_KEY or GEMINI_API_KEY" in str(info.value)


def test_blank_key_counts_as_missing(monkeypatch):
    monkeypatch.setenv("ARK_API_KEY", "   ")
    with pytest.raises(ConfigError, match="ARK_API_KEY"):
        secrets.key_for("ark")


def test_redact_hides_plain_and_url_quoted_keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk/abc+def=1234567")
    text = "Bearer sk/abc+def=1234567 and ?key=sk%2Fabc%2Bdef%3D1234567"
    assert secrets.redact(text) == "Bearer *** and ?key=***"


def test_redact_leaves_short_values_and_other_text(monkeypatch):
    monkeypatch.setenv("FAL_KEY", "abc")
    assert secrets.redact("abc is fine") == "abc is fine"


def test_redact_extra_and_registered(monkeypatch):
    secrets.register_secret("registered-secret-999")
    assert secrets.redact("x registered-secret-999 y extra-secret-42", extra=["extra-secret-42"]) == "x *** y ***"


def test_base_url_override_and_default(monkeypatch):
    monkeypatch.delenv("HYPEEDIT_ARK_BASE_URL", raising=False)
    assert secrets.base_url("ark", "https://x.example/api/v3/") == "https://x.example/api/v3"
    monkeypatch.setenv("HYPEEDIT_ARK_BASE_URL", "http://127.0.0.1:9/")
    assert secrets.base_url("ark", "https://x.example") == "http://127.0.0.1:9"


def test_a_key_that_contains_another_is_masked_whole(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-short-12345678")
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-short-12345678-and-LONGER-tail")
    text = "a sk-short-12345678-and-LONGER-tail b sk-short-12345678 c"
    assert secrets.redact(text) == "a *** b *** c"


def test_a_key_that_contains_another_is_masked_whole_when_url_quoted(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk/short+12345678")
    secrets.register_secret("sk/short+12345678/and/LONGER")
    assert secrets.redact("?k=sk%2Fshort%2B12345678%2Fand%2FLONGER") == "?k=***"


def test_the_values_of_a_plugins_key_variables_are_redacted(monkeypatch):
    monkeypatch.setattr(secrets, "_registered", set())  # registrations are process-wide
    monkeypatch.setenv("MY_ROUTE_TOKEN", "tok-plugin-route-7777")
    assert secrets.redact("tok-plugin-route-7777") == "tok-plugin-route-7777"
    secrets.register_key_variables(["MY_ROUTE_TOKEN", "UNSET_VARIABLE_XYZ"])
    assert secrets.redact("key tok-plugin-route-7777") == "key ***"
