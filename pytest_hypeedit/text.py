"""Text taken from outside (provider error texts, judge reasoning, rater notes, records read from disk), made
safe to print.

Such text reaches the terminal, the junit XML a CI system parses, and the HTML report.  Raw, it can drive the
terminal (ANSI and OSC escapes set the window title or the clipboard, BEL rings, NUL and DEL garble logs),
reorder what a reader sees (Unicode bidi overrides), or command the CI runner: GitHub Actions executes any log
line whose first non-space characters are ``::`` (``::add-mask::``, ``::stop-commands::``, ``::error``) or
``##[`` (its older syntax; ``##vso[`` on Azure Pipelines).  ``clean_text`` removes the first two and prefixes
such a line with a visible marker, so it is shown, never executed.

It also caps the text where it is stored: a 512 MB judge reasoning once became a 268 MB terminal log.  The
limits below are far above any honest text of each kind and far below what hurts a log or a report.
"""

from __future__ import annotations

import re
from typing import Any

#: Judge reasoning (a verdict's explanation; several jurors' joined for a majority): honest replies are a few
#: hundred characters, the judge prompt asks for a short paragraph.
REASONING_LIMIT = 16 * 1024
#: A provider's or judge's error text, a refusal reason: one message, never a page.
ERROR_LIMIT = 4 * 1024
#: A rater's note on one candidate (labels files, the review app).
NOTE_LIMIT = 4 * 1024
#: Any other short string taken from a record or a reply (a judge id, a request id, a route).
SHORT_LIMIT = 512

#: What a line that would be a CI workflow command starts with instead (shown, never executed).
COMMAND_MARKER = "| "

# ESC sequences: CSI (ESC [ ... final), OSC / DCS / SOS / PM / APC strings (ended by BEL or ST), and two-char
# escapes; then their 8-bit C1 forms (0x9b CSI, 0x9d OSC, 0x90/0x98/0x9e/0x9f strings).  A string escape with
# no terminator runs to the end of the text: it is dropped whole, as a terminal would swallow it.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"
    r"|\x1b[\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
    r"|\x9b[0-?]*[ -/]*[@-~]?"
    r"|[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
)
# What remains to drop: C0 controls but tab and newline, DEL, C1, and the bidi embeddings, overrides and isolates.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# Line breaks other than \n that a terminal or a log reader may honour: each becomes \n, so the line check sees it.
_BREAKS = re.compile("\r\n?|[\u2028\u2029\x85\x0b\x0c]")
_COMMAND_LINE = re.compile(r"^([ \t]*)(?=::|##\[|##vso\[)", re.MULTILINE | re.IGNORECASE)
# A text with none of these is left as it is (most are: a replay cleans thousands of records' texts).
_WORK = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_WORK_MULTILINE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def clean_text(text: str, limit: int, *, multiline: bool = True) -> str:
    """``text`` without control characters, escape sequences or bidi overrides, no line of it a CI workflow
    command, at most ``limit`` characters (plus a note of how many were cut).  ``multiline=False`` also turns
    line breaks and tabs into spaces, for a text shown on one line."""
    if (len(text) <= limit and "::" not in text and "##" not in text
            and not (_WORK_MULTILINE if multiline else _WORK).search(text)):
        return text
    cut = len(text) - limit if len(text) > limit else 0
    text = text[:limit] if cut else text  # cut first: never run the patterns over a huge text
    text = _CONTROLS.sub("", _ESCAPES.sub("", _BREAKS.sub("\n", text)))
    text = text if multiline else re.sub(r"[\n\t]", " ", text)
    text = _COMMAND_LINE.sub(lambda m: m.group(1) + COMMAND_MARKER, text)
    if len(text) > limit:  # the markers added a few characters
        cut, text = cut + len(text) - limit, text[:limit]
    return f"{text}... [{cut} more characters cut]" if cut else text


def clean_optional(value: Any, limit: int) -> Any:
    """``clean_text`` for a string; anything else as it is (None, or a value a validator does not accept elsewhere)."""
    return clean_text(value, limit) if isinstance(value, str) else value


def clean_entries(entries: Any, limit: int = NOTE_LIMIT) -> Any:
    """Every string value of a list of dicts (a verdict's votes: rater, verdict, note, a juror's reasoning)."""
    if not isinstance(entries, list):
        return entries
    return [{key: clean_optional(value, limit) for key, value in entry.items()} if isinstance(entry, dict)
            else entry for entry in entries]


def image_problem(exc: BaseException) -> str:
    """What Pillow said about a file it cannot read, without the Python object it read from: its
    "cannot identify image file <_io.BytesIO object at 0x7f...>" names a buffer, not the file."""
    text = re.sub(r"\s*<[\w.]+ object at 0x[0-9a-fA-F]+>", "", str(exc)).strip(" :;")
    return text or type(exc).__name__
