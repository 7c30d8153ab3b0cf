"""Reading the end of a run as a person does: its prose is folded within 100 columns (report/terminal_table.py
``fold``), so a sentence is matched across the lines it was folded into."""

from __future__ import annotations

import fnmatch


def said(result, *patterns: str) -> None:
    """Each fnmatch pattern, in this order, in the run's output with every run of whitespace (a fold's line break
    and indent among them) read as one space."""
    text = " ".join(result.stdout.str().split())
    wanted = "*" + "*".join(" ".join(pattern.split()) for pattern in patterns) + "*"
    assert fnmatch.fnmatchcase(text, wanted), (patterns, result.stdout.str()[-4000:])
