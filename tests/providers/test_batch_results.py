"""The results reader of the batch tier (providers/batch_results.py): split at b"\\n" only, whatever the chunks;
a line past its cap not kept but named; a line that cannot be parsed named by the key in its first bytes; the
spool reads each line back as it was."""

from __future__ import annotations

import itertools
import json
import random

from pytest_hypeedit.providers.batch_results import Spool, index, key_in, split_lines

SEPARATORS = "\u2028\u2029\u0085\v\f\x1c\x1d\x1e\r"


def chunked(data: bytes, seed: int) -> list[bytes]:
    rng, pieces, at = random.Random(seed), [], 0
    while at < len(data):
        step = rng.randint(1, 7)
        pieces.append(data[at:at + step])
        at += step
    return pieces


def test_lines_split_at_newlines_only_whatever_the_chunks():
    """Planted: str.splitlines (splits at U+2028 and the others) -> more lines than written."""
    lines = [json.dumps({"custom_id": f"k{n}", "text": f"a{SEPARATORS[n % len(SEPARATORS)]}b"}, ensure_ascii=False)
             for n in range(30)]
    data = "\n".join(lines).encode()  # the last line without its newline
    for seed in range(5):
        got = [raw.data.decode() for raw in split_lines(chunked(data, seed), cap=10_000)]
        assert got == lines


def test_a_line_past_its_cap_is_not_kept_but_counted_and_named():
    big = json.dumps({"custom_id": "big-1", "body": "x" * 5000}).encode()
    raws = list(split_lines(chunked(b"small\n" + big + b"\nafter\n", 3), cap=1000))
    assert [(r.number, r.data) for r in raws] == [(1, b"small"), (2, None), (3, b"after")]
    assert raws[1].size == len(big) and key_in(raws[1].head) == "big-1"


def test_the_index_spools_good_lines_and_names_the_bad_ones(tmp_path):
    good = json.dumps({"custom_id": "a", "response": {"status_code": 200}}).encode()
    cut = json.dumps({"custom_id": "b", "response": {"status_code": 200, "body": "y" * 100}}).encode()[:60]
    nameless = b'{"response": {}}'
    entries = list(index([good + b"\n\n" + cut + b"\n" + nameless + b"\n" + good], cap=10_000,
                         spool=Spool(tmp_path), file="file-x", key_of=lambda value: value.get("custom_id")))
    assert [(e.number, e.key) for e in entries] == [(1, "a"), (3, "b"), (4, None), (5, "a")]
    assert entries[0].line.load() == json.loads(good) and entries[3].line.load() == json.loads(good)
    assert "line 3 of file-x is not JSON" in entries[1].problem and "names no key" in entries[2].problem


def test_the_index_hands_over_each_line_before_it_reads_the_next(tmp_path):
    """Planted: split_lines collects every line in a list first -> the whole body read before line 1 is handed
    over (the batch held whole in memory)."""
    lines = [json.dumps({"custom_id": f"k{n}", "b64": "x" * 3000}).encode() + b"\n" for n in range(20)]
    body, step, read = b"".join(lines), 1000, [0]

    def streamed():  # a streaming body that says how far it was read
        for at in range(0, len(body), step):
            read[0] = min(at + step, len(body))
            yield body[at:at + step]

    ends = list(itertools.accumulate(len(line) for line in lines))
    entries = 0
    for entry in index(streamed(), cap=10_000, spool=Spool(tmp_path), file="file-x",
                       key_of=lambda value: value.get("custom_id")):
        assert read[0] < ends[entry.number - 1] + step, f"line {entry.number} handed over after {read[0]} bytes"
        entries += 1
    assert entries == len(lines)
