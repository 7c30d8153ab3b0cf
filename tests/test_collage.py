"""Collages: references on the left, every repeat of every model in a grid, tiles marked PASS/FAIL."""

from __future__ import annotations

from PIL import Image

from pytest_hypeedit.engine.records import Record
from pytest_hypeedit.report.collage import GAP, HEADER, STATUS_COLOURS, Tile, make_collage, tiles_by_model


def image(path, colour, size=(120, 80)):
    Image.new("RGB", size, colour).save(path)
    return path


def test_collage_layout_and_marks(tmp_path):
    ref = image(tmp_path / "ref.png", (0, 0, 255))
    cand = image(tmp_path / "001.webp", (255, 255, 0))
    tiles = [Tile(cand, "PASS", "r01"), Tile(cand, "FAIL", "r02"), Tile(None, "REFUSED", "r03"),
             Tile(tmp_path / "missing.png", "FAIL", "r04")]
    dest = make_collage([ref, ref], [("model-a", tiles), ("model-b", tiles[:1])], tmp_path / "c" / "task.png", tile_size=100)
    with Image.open(dest) as collage:
        collage = collage.convert("RGB")
        ref_width = 100 + 2 * GAP
        assert collage.width == ref_width + 5 * (100 + GAP) + GAP
        # reference column: the blue reference appears at the left
        assert collage.getpixel((GAP + 50, HEADER + 50)) == (0, 0, 255)
        # tile borders carry the verdict colour (bottom edge, clear of the label)
        assert collage.getpixel((ref_width + 50, HEADER + 97)) == STATUS_COLOURS["PASS"]
        assert collage.getpixel((ref_width + 108 + 50, HEADER + 97)) == STATUS_COLOURS["FAIL"]
        # the candidate image itself is inside the tile
        assert collage.getpixel((ref_width + 50, HEADER + 50)) == (255, 255, 0)
        # second model's block starts below the first (one row of tiles)
        assert collage.getpixel((ref_width + 50, HEADER + 108 + GAP + HEADER + 97)) == STATUS_COLOURS["PASS"]


def test_tiles_by_model_sorts_repeats_and_marks_outcomes(tmp_path):
    records = [Record("public", "m", "t1", repeat=r, outcome=o, candidate=f"{r:03d}.png")
               for r, o in [(3, "error"), (1, "pass"), (2, "refused")]]
    records.append(Record("public", "n", "t1", repeat=1, outcome="fail", candidate="001.png"))
    grouped = tiles_by_model(records, lambda r: tmp_path / r.model / r.candidate)
    assert [m for m, _ in grouped] == ["m", "n"]
    assert [(t.caption, t.status) for t in grouped[0][1]] == [("r01", "PASS"), ("r02", "REFUSED"), ("r03", "ERROR")]
    assert grouped[1][1][0].image == tmp_path / "n" / "001.png"
