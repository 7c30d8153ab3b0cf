"""One word per concept (docs/reference/glossary.md): the meanings a word lost do not come back.

"gate" is a CI gate only (a route's admission of a call is an admission); "refused" is a model's refusal only (a
key the provider answers 401/403 is rejected, files the plugin will not use are unusable, a redirect it will not
follow is not followed); "hold" is a possibly paid call held for review only (a --budget share or disk room set
aside is a reservation, a route's steps running are running, a slot a call took is taken, a CI gate passes, a
record has what it contains).  Identifiers are read
as Python tokens, so the English verb in prose ("the record holds its verdicts") is left alone; the phrases
below are looked for in the package's text, its docs and its tests."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

from package_graph import PACKAGE, modules

ROOT = PACKAGE.parent

#: Identifiers of a retired meaning, and the word that replaced it.
RETIRED_NAMES = {
    r"RouteGate|GateState": "RouteAdmission / AdmissionState (gate: CI gates only)",
    r"(?i)\w*refused_?keys?\w*|key_refused": "rejected_keys / key_rejected (refused: a model's refusal only)",
    r"KeyRefused|RedirectRefused": "KeyNotSent / RedirectNotFollowed",
    r"WAIT_REFUSED|_refused_wait|REFUSED_BY_CLIENT": "WAIT_DECLINED / _declined_wait / STOPPED_BY_CLIENT",
    r"Hold|\w*verdict_hold\w*|_hold_verdict|_hold_room|_room_held": "CallReservation / verdict_reservation / "
                                                                      "_reserve_room (hold: held for review only)",
    r"held_here": "taken_here (a slot is taken)",
}
#: The identifiers made of hold/held that are the one meaning kept: a possibly paid call held for review.
REVIEW_HOLD = {"HELD", "WRITE_HELD", "held", "held_message", "_hold", "_held", "possibly_paid_held"}
#: Any identifier made of hold/held: outside REVIEW_HOLD it is a retired meaning (a gate passes, a record has).
HOLD_ANYWHERE = re.compile(r"(?i)(^|_)(hold|holds|holding|held)(_|$)")

#: Phrases of a retired meaning, in the package, its docs and its tests.
RETIRED_PHRASES = {
    r"\b[Rr]oute gates?\b": "route admission",
    r"\b[Rr]efused keys?\b": "rejected key",
    r"--budget holds?\b": "--budget reservation",
    r"\brefusedkeys\b": "engine/rejected_keys.py",
    r"\bproviders[/.](http|httperrors|addresses|body|bounds|keyhosts|requestopts|waits|keycheck)\b":
        "transport/ (the HTTP stack moved)",
}


def _names(path: Path) -> list[tuple[int, str]]:
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    return [(tok.start[0], tok.string) for tok in tokens if tok.type == tokenize.NAME]


def retired_names() -> list[str]:
    found = []
    for path in modules().values():
        for line, name in _names(path):
            for pattern, instead in RETIRED_NAMES.items():
                if re.fullmatch(pattern, name):
                    found.append(f"{path.relative_to(ROOT)}:{line}: {name} -> {instead}")
            if (HOLD_ANYWHERE.search(name) and name not in REVIEW_HOLD
                    and not any(re.fullmatch(p, name) for p in RETIRED_NAMES)):
                found.append(f"{path.relative_to(ROOT)}:{line}: {name}: hold means held for review only")
    return found


def retired_phrases() -> list[str]:
    paths = [*PACKAGE.rglob("*.py"), *(ROOT / "docs").rglob("*.md"), *(ROOT / "tests").rglob("*.py")]
    found = []
    for path in sorted(paths):
        if path == Path(__file__).resolve():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for pattern, instead in RETIRED_PHRASES.items():
                if re.search(pattern, line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {re.search(pattern, line).group(0)!r} -> "
                                 f"{instead}")
    return found


def test_no_identifier_of_a_retired_meaning():
    found = retired_names()
    assert found == [], "a word is back in a meaning it lost (docs/reference/glossary.md):\n" + "\n".join(found)


def test_no_phrase_of_a_retired_meaning():
    found = retired_phrases()
    assert found == [], "a word is back in a meaning it lost (docs/reference/glossary.md):\n" + "\n".join(found)


def test_the_glossary_names_every_kept_meaning():
    glossary = (ROOT / "docs" / "reference" / "glossary.md").read_text(encoding="utf-8")
    for word in ("gate", "refusal", "rejected key", "reservation", "hold", "admission", "running", "slot",
                 "transport", "candidate", "record", "route", "tier"):
        assert f"| **{word}** |" in glossary, word
