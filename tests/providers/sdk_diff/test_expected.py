"""The expected values (expected.py) meet the constraints their providers document, checked here with this
file's own arithmetic, never our adapters' code: a wrong row would make the differential tests demand a wrong
request."""

from __future__ import annotations

import math

import pytest

from .expected import GEMINI_10, MODEL_RULE, RULES
from .shapes import SHAPES
from .test_differential import MODELS

#: Each ratio rule's documented list (the sources are in expected.py).
RATIO_LISTS = {
    "gemini-10-ratios": GEMINI_10,
    "gemini-14-ratios": GEMINI_10 + ("1:4", "4:1", "1:8", "8:1"),
    "flux3-ratios": ("21:9", "2:1", "16:9", "3:2", "7:5", "4:3", "5:4", "1:1", "4:5", "3:4", "5:7", "2:3", "9:16",
                     "1:2", "9:21"),
    "replicate-seedream-ratios": ("1:1", "4:3", "3:4", "16:9", "9:16", "3:2", "2:3", "21:9"),
    "replicate-riverflow-ratios": ("1:1", "4:3", "3:4", "16:9", "9:16", "3:2", "2:3", "5:4", "4:5"),
}
#: Free sizes: (min pixels, max pixels, max ratio, budget in pixels) per rule, as documented.
FREE = {"openai-free": (655_360, 8_294_400, 3.0, 1536 * 1024), "seedream-2k": (3_686_400, 16_777_216, 16, 2048 ** 2),
        "seedream-2k-capped": (921_600, 2048 ** 2, 16, 2048 ** 2), "bfl-1mp": (64 * 64, 4_000_000, 16, 1e6),
        "fal-1mp": (0, 16_777_216, 16, 1e6), "fal-qwen2-range": (512 ** 2, 2048 ** 2, 16, None),
        "dashscope-1mp": (512 * 512, 2048 * 2048, 4, 1024 * 1024)}


def pair(value) -> tuple[int, int]:
    if isinstance(value, str):
        width, height = (int(side) for side in value.replace("*", "x").split("x"))
        return width, height
    return tuple(value)


def log_ratio(width: float, height: float) -> float:
    return math.log(width / height)


def test_every_model_compared_has_a_rule():
    missing = sorted({spec.provider_model for spec in MODELS} - set(MODEL_RULE))
    assert not missing, f"models with no expected values in tests/sdk_diff/expected.py: {missing}"


@pytest.mark.parametrize("rule", sorted(RULES))
def test_each_row_meets_its_documented_rule(rule):
    values = RULES[rule].values
    assert set(values) == set(SHAPES), f"{rule}: one value per shape"
    for name, value in values.items():
        shape = SHAPES[name]
        target = log_ratio(shape.width, shape.height)
        if rule in RATIO_LISTS:
            listed = RATIO_LISTS[rule]
            best = min(listed, key=lambda r: abs(log_ratio(*map(float, r.split(":"))) - target))
            assert value == best, f"{rule} {name}: {value}, but the nearest listed ratio is {best}"
            continue
        width, height = pair(value)
        if rule in FREE:
            low, high, max_ratio, budget = FREE[rule]
            assert width % 16 == 0 and height % 16 == 0, f"{rule} {name}: {value} is not in multiples of 16"
            assert low <= width * height <= high, f"{rule} {name}: {value} is outside {low}-{high} pixels"
            assert max(width, height) / min(width, height) <= max_ratio + 1e-9, f"{rule} {name}: ratio too wide"
            wanted = min(max(target, -math.log(max_ratio)), math.log(max_ratio))
            assert abs(log_ratio(width, height) - wanted) < 0.03, f"{rule} {name}: {value} is not the task's ratio"
            area = min(max(budget or shape.width * shape.height, low), high)
            assert abs(width * height / area - 1) < 0.04, f"{rule} {name}: {value} is not at the pixel budget"
        else:  # a listed pair: the nearest of the model's table, in the orientation of the task
            assert (width > height) == (shape.width > shape.height), f"{rule} {name}: {value} turned the task"
