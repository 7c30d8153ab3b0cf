"""Every document the code, the tests and the benches point to is a file of this repository.

A newcomer with only this repository follows every pointer: ``docs/reference/providers.md, section 10`` must
open, and no comment may send them to a document they do not have (the team's own reading notes, kept outside
the repository, were cited by name until the project wrote its contracts into docs/reference/).
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("pytest_hypeedit", "tests", "bench", "examples")
#: A pointer to a page of the manual: docs/<path>.md
POINTER = re.compile(r"docs/[\w./-]+?\.md")
#: A bare name of a document that is not in the repository (a pointer must say where the page is: docs/...).
BARE = re.compile(r"(?<![\w/.-])(providers|design|pytest-notes|anchors)\.md")
#: A path into the team's shared folder beside the checkout: its notes, and its copy of the public split.  A user has
#: no such folder: the package and the benches name a file of the public split by HYPEEDIT_PUBLIC_SPLIT or download
#: it as --tasks public does.  Only the suite may read that copy (the test data CI lays beside the clone).
OUTSIDE = re.compile(r"(?<![\w-])shared/(docs|hype-edit-1)\b|\"shared\"\s*/\s*\"(docs|hype-edit-1)\"")
TEST_DATA = re.compile(r"\"shared\"\s*/\s*\"hype-edit-1\"")


def source_files() -> list[Path]:
    return sorted(path for folder in SOURCES for path in (REPO / folder).rglob("*")
                  if path.suffix in {".py", ".yaml", ".yml", ".txt", ".js", ".css", ".html"} and path.is_file()
                  and path != Path(__file__).resolve())  # this file's own examples of bad pointers


def test_every_page_a_source_points_to_exists():
    missing = {f"{path.relative_to(REPO)}: {pointer}" for path in source_files()
               for pointer in POINTER.findall(path.read_text(encoding="utf-8", errors="replace"))
               if not (REPO / pointer).is_file()}
    assert not missing, "pointers to pages that are not in the repository:\n" + "\n".join(sorted(missing))


def test_no_source_names_a_document_outside_the_repository():
    bare = {f"{path.relative_to(REPO)}:{number}" for path in source_files()
            for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
            if BARE.search(line) or (OUTSIDE.search(line) and not _test_data(path, line))}
    assert not bare, "name the page under docs/ (e.g. docs/reference/providers.md):\n" + "\n".join(sorted(bare))


def _test_data(path: Path, line: str) -> bool:
    return path.relative_to(REPO).parts[0] == "tests" and bool(TEST_DATA.search(line))


def test_the_checks_see_a_bad_pointer():
    assert POINTER.findall("see docs/reference/nowhere.md, section 3") == ["docs/reference/nowhere.md"]
    assert BARE.search("(providers.md section 10)") and not BARE.search("docs/reference/providers.md section 10")
    assert BARE.search("design.md contract") and not BARE.search("docs/explanation/design.md")
    assert OUTSIDE.search("from ../shared/hype-edit-1/public.json") and OUTSIDE.search('parents[2] / "shared" / "docs"')
    assert not OUTSIDE.search("sourceful-official/hype-edit-1-benchmark")
