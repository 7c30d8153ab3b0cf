"""The release each results row measured (``row["release"]``, engine/release.py), as the terminal, the report and
a baseline comparison say it.  Rows are untrusted (a baseline file may come from anywhere): only text is shown."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ..text import SHORT_LIMIT, clean_text


def release_text(release: Any) -> str:
    """``ep-rel-b via ark (release 2026-11-28, id 0a1b2c3d4e5f)``; "" for a row that names no release."""
    if not isinstance(release, Mapping) or not isinstance(release.get("id"), str):
        return ""
    label = release.get("label")
    named = f"release {_clean(label)}, " if isinstance(label, str) and label else ""
    return (f"{_clean(release.get('provider_model'))} via {_clean(release.get('route'))} "
            f"({named}id {_clean(release['id'])})")


def release_lines(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per model: the release its figures are of."""
    seen: dict[str, str] = {}
    for row in rows:
        model, text = _clean(row.get("model")), release_text(row.get("release"))
        if text and model not in seen:
            seen[model] = text
    return [f"release of {model}: {text}" for model, text in seen.items()]


def same_release_lines(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """A warning per model whose baseline (--baseline) measured this very release: a release compared with itself
    shows no change, whatever it is."""
    same: dict[str, str] = {}
    for row in rows:
        release = _id(row.get("release"))
        if release is not None and release == _id(row.get("baseline_release")):
            same[_clean(row.get("model"))] = _clean(release)
    return [f"hypeedit: WARNING: the baseline of {model} is the same release ({release}): a release compared with "
            "itself; pass the results of the last accepted release as --baseline" for model, release in same.items()]


def _id(release: Any) -> str | None:
    value = release.get("id") if isinstance(release, Mapping) else None
    return value if isinstance(value, str) else None


def _clean(value: Any) -> str:
    return clean_text(str(value), SHORT_LIMIT, multiline=False)
