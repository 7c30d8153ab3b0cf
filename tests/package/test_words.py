"""One word per concept (docs/reference/glossary.md): the meanings a word lost do not come back.

"gate" is a CI gate only (a route's admission of a call is an admission); "refused" is a model's refusal only (a
key the provider answers 401/403 is rejected, files the plugin will not use are unusable, a redirect it will not
follow is not followed, an input the plugin or an API will not take - an option, a gate, a file - is not
accepted, a calibrated figure too few labels cannot give is withheld); "hold" is a possibly paid call held for
review only (a --budget share or disk room set aside is a reservation, a route's steps running are running, a
slot a call took is taken, a CI gate passes, a record has what it contains).  Identifiers are read
as Python tokens, so the English verb in prose ("the record holds its verdicts") is left alone; the phrases
below are looked for in the package's text, its docs and its tests, in test names too (read with their
underscores as spaces)."""

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
    r"(?i)\w*refuse(?!d)\w*": "check_... / not accepted (refuse: a model's refusal only)",
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
    # the plugin (or an API) not taking an input: it is not accepted; a model's refusal is the only refusal
    r"\brefus\w*( \w+){0,3} before (anything|any call|a byte|the run|paying)\b": "not accepted before ...",
    r"\brefus\w*[^.;]{0,30}\busage error|\busage error[^.;]{0,30}\brefus": "not accepted (a usage error)",
    r"\b(file|files) refused\b|\brefused by (name|default)\b|\brefuse to merge\b|\brefuses? to start\b":
        "not accepted",
    r"\brefus\w* (at|during) (start-up|startup|configure time)\b": "not accepted at start-up",
    r"\bkeys? (is |was |are |were )?refused\b|\brefus\w* (the |a |its |this |that )?(\w+ )?key\b": "rejected key",
    r"\brefused to send\b|\b(KeyRefused|RedirectRefused)\b": "not sent / KeyNotSent / RedirectNotFollowed",
    r"\brefus\w* (a |the |any )?(symbolic )?links?\b|\blinks? (is |are )?refused\b": "unusable (a link)",
    # a CI gate passes or fails; hold is a possibly paid call held for review
    r"\bgates?( all)? (hold|holds|held)\b|\b(hold|holds|held) (its|the|all|every) gates?\b": "gates pass",
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
                hit = re.search(pattern, line) or re.search(pattern, line.replace("_", " "))
                if hit:
                    found.append(f"{path.relative_to(ROOT)}:{number}: {hit.group(0)!r} -> {instead}")
    return found


def test_no_identifier_of_a_retired_meaning():
    found = retired_names()
    assert found == [], "a word is back in a meaning it lost (docs/reference/glossary.md):\n" + "\n".join(found)


def test_no_phrase_of_a_retired_meaning():
    found = retired_phrases()
    assert found == [], "a word is back in a meaning it lost (docs/reference/glossary.md):\n" + "\n".join(found)


def test_the_glossary_names_every_kept_meaning():
    glossary = (ROOT / "docs" / "reference" / "glossary.md").read_text(encoding="utf-8")
    for word in ("gate", "refusal", "rejected key", "not accepted", "withheld", "reservation", "hold", "admission",
                 "running", "slot", "transport", "candidate", "record", "route", "tier", "signals", "plan"):
        assert f"| **{word}** |" in glossary, word
