"""Reading JSON and YAML files that anyone may have written (records, task, labels, models and results files),
bounded.

Python's parsers trust their input: JSON nested 100,000 deep is a RecursionError, and YAML aliases expand
without end (a 495-byte models file of nested aliases once hung start-up past 120 s; another took 3.1 GB,
since PyYAML shares the aliased nodes and the code that walks the result does not).  Every such file is read
here instead, with three bounds, each far above what an honest file needs:

- its size in bytes (given by the caller, per kind of file);
- its nesting depth (``MAX_DEPTH``): the deepest honest file, a record, nests about six levels;
- for YAML, the nodes of the document with every alias expanded (``MAX_YAML_NODES``): the built-in
  models.yaml has about 200.

Past a bound, ``UntrustedInput`` (a ValueError) says which; each caller raises it again as its own error
naming the file (TaskFileError, LabelsError, ConfigError) or treats the file as absent (a record).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, BinaryIO, Callable

import yaml

MAX_DEPTH = 64
MAX_YAML_NODES = 100_000
#: A record is a few KB (its reasoning is capped at 16 KiB, text.py): 1 MiB leaves room for many judges.
RECORD_BYTES = 1 << 20
#: The public split is 15 KB for 50 tasks; 64 MiB holds hundreds of thousands of tasks.
TASK_FILE_BYTES = 64 << 20
#: One rater's labels: about 100 bytes per verdict, notes up to 2,000 characters; 64 MiB is far beyond a panel's.
LABELS_BYTES = 64 << 20
#: A models file lists a few models and routes in a few KB; a split manifest is a few lines; a sampling design
#: (sample_design.py) names a few hundred candidates.
MODELS_BYTES = MANIFEST_BYTES = DESIGN_BYTES = 1 << 20
#: A run's results file (``--baseline``, ``hypeedit-leaderboard``): about 30 KB a row with its per-task tallies on
#: the public split's 50 tasks; 32 MiB holds a thousand such rows, or splits of tens of thousands of tasks.
RESULTS_BYTES = 32 << 20


class UntrustedInput(ValueError):
    """A file past one of this module's bounds, or not parseable; the message says which, not the file."""


def read_bounded(path: Path, max_bytes: int, opener: Callable[[Path], BinaryIO] | None = None) -> bytes:
    """The bytes of ``path``, not accepted past ``max_bytes`` before they are read whole (OSError as raised).
    ``opener`` opens it another way (``files.open_regular``: no link followed)."""
    with (opener(path) if opener else open(path, "rb")) as handle:
        return read_bounded_handle(handle, max_bytes)


def read_bounded_handle(handle: BinaryIO, max_bytes: int) -> bytes:
    """What is left in ``handle``, not accepted past ``max_bytes`` before it is read whole."""
    data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise UntrustedInput(f"larger than {_size(max_bytes)}, the most such a file may hold")
    return data


def load_json_file(path: Path, max_bytes: int, opener: Callable[[Path], BinaryIO] | None = None) -> Any:
    """The JSON value of ``path``, with its size and depth bounded (OSError as raised)."""
    return loads_json_bytes(read_bounded(path, max_bytes, opener))


def loads_json_bytes(data: bytes) -> Any:
    """``loads_json`` of bytes read from outside, which must be UTF-8 text."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UntrustedInput(f"not UTF-8 text ({exc})") from None
    return loads_json(text)


def loads_json(text: str) -> Any:
    """``json.loads`` with the nesting depth bounded: the parser fails on deep nesting with a RecursionError
    (caught here), and the value parsed is measured before anyone walks it."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UntrustedInput(f"not valid JSON ({exc})") from None
    except RecursionError:
        raise UntrustedInput(_too_deep()) from None
    if text.count("[") + text.count("{") > MAX_DEPTH:  # a value nests no deeper than it opens containers
        check_depth(value)
    return value


def check_depth(value: Any) -> None:
    """Refuse a parsed value nested deeper than MAX_DEPTH: walked level by level, containers only, no recursion
    (a replay reads thousands of records: only what can nest is visited)."""
    level, depth = [value] if isinstance(value, (dict, list)) else [], 1
    while level:
        if depth > MAX_DEPTH:
            raise UntrustedInput(_too_deep())
        inner: list[Any] = []
        for item in level:
            inner.extend(child for child in (item.values() if isinstance(item, dict) else item)
                         if isinstance(child, (dict, list)))
        level, depth = inner, depth + 1


def _too_deep() -> str:
    return f"nested deeper than {MAX_DEPTH} levels, the most such a file may nest"


class BoundedLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML has no stubs here: its classes are Any
    """PyYAML's safe loader with the document's depth and its size with aliases expanded bounded."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise UntrustedInput(_too_deep())
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_document(self) -> yaml.Node:
        node = super().compose_document()
        _count_expanded(node)
        return node


def _count_expanded(root: yaml.Node) -> None:
    """Walk the document as its readers will, every alias expanded, and stop past MAX_YAML_NODES (a loop of
    aliases, which never ends, stops there too)."""
    stack, seen = [root], 0
    while stack:
        node = stack.pop()
        seen += 1
        if seen > MAX_YAML_NODES:
            raise UntrustedInput(f"more than {MAX_YAML_NODES:,} values once its aliases (*name) are expanded; "
                                 "an alias bomb, or a file far larger than a models or task file")
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend(part for pair in node.value for part in pair)


def load_yaml_file(path: Path, max_bytes: int) -> Any:
    """The YAML value of ``path`` (safe tags only), bounded in size, depth and alias expansion (OSError as
    raised)."""
    try:
        text = read_bounded(path, max_bytes).decode("utf-8")
        return yaml.load(text, Loader=BoundedLoader)  # a SafeLoader subclass: safe tags only
    except UnicodeDecodeError as exc:
        raise UntrustedInput(f"not UTF-8 text ({exc})") from None
    except yaml.YAMLError as exc:
        raise UntrustedInput(f"not valid YAML ({exc})") from None
    except RecursionError:  # a construct the depth count missed; never a traceback
        raise UntrustedInput(_too_deep()) from None


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"
