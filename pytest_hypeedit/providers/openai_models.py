"""What differs between OpenAI's GPT image models on ``images/edits``: sizes, input fidelity, token prices.

Sources (docs/reference/providers.md sections 3 and 10):
- openai/openai-python ``types/image_edit_params.py`` (2026-08): ``size`` for ``gpt-image-2`` and
  ``gpt-image-2-2026-04-21`` is any ``WIDTHxHEIGHT`` with both sides divisible by 16 and an aspect ratio
  between 1:3 and 3:1, at most 3840x2160 (above 2560x1440 experimental); the other GPT image models take
  1024x1024, 1536x1024, 1024x1536 (or auto).  ``api_reference/openapi.transformed.yml``: "``gpt-image-2``
  and ``gpt-image-2-2026-04-21`` ignore" ``input_fidelity``, so it is not sent to them.
- ``types/images_response.py``: the reply's ``usage`` has ``input_tokens_details{image_tokens, text_tokens}``,
  ``output_tokens`` and optionally ``output_tokens_details{image_tokens, text_tokens}``: the cost is computed
  from it at the token prices below.
- Token prices, USD per 1M tokens (UNCONFIRMED, second-hand copies of openai.com/api/pricing):
  gpt-image-1.5 text in 5, image in 8, image out 32 (llmreference.com, Vercel's gateway row for text);
  gpt-image-2 text in 5, image in 8, image out 30 (xairouter.com's copy of OpenAI's model page); text out 10
  for both (robotsatlas.com for gpt-image-2; assumed the same for 1.5).
- Output image tokens by size and quality: gpt-image-1.5 uses GPT image 1's table of OpenAI's image
  generation guide (low 272/408/400, medium 1056/1584/1568, high 4160/6240/6208 for 1024x1024, 1024x1536,
  1536x1024), which reproduces its list prices $0.133 (1024x1024 high) and about $0.20 (3:2 and 2:3 high)
  at $32 per 1M (docs/reference/providers.md section 10).  gpt-image-2: the formula behind OpenAI's cost calculator as a
  community post transcribed it (community.openai.com/t/gpt-image-2-output-pricing-calculator-online-and-
  in-your-code/1382699, UNCONFIRMED); it gives 7024 tokens at 1024x1024 high and 5488 at 1536x1024 high,
  as the post's readings of the calculator do.
- A reference image's input tokens are bounded by ``REFERENCE_TOKENS_MAX`` (UNCONFIRMED: OpenAI publishes no
  figure for high input fidelity): used only for the worst case the budget reserves.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

#: Sizes every GPT image model takes (the only ones before gpt-image-2).
LISTED_SIZES = ((1024, 1024), (1536, 1024), (1024, 1536))
#: An upper bound on one reference image's input tokens at high fidelity (UNCONFIRMED, see above).
REFERENCE_TOKENS_MAX = 8_000
QUALITIES = ("low", "medium", "high")


@dataclass(frozen=True)
class TokenPrices:
    """USD per 1M tokens."""

    text_in: float
    image_in: float
    image_out: float
    text_out: float = 10.0


@dataclass(frozen=True)
class FreeSize:
    """gpt-image-2's size rule: any WxH in multiples of ``step`` within these limits (image_edit_params.py;
    the pixel bounds and the edge are the calculator's, as transcribed second-hand: UNCONFIRMED)."""

    step: int = 16
    max_ratio: float = 3.0
    max_edge: int = 3840
    min_pixels: int = 655_360
    max_pixels: int = 8_294_400

    def size_for(self, width: int, height: int, pixels: float) -> tuple[int, int]:
        """The task's aspect ratio (clamped to 1:3..3:1) at about ``pixels``, sides multiples of ``step``."""
        pixels = min(max(pixels, self.min_pixels), self.max_pixels)
        ratio = min(max(width / height, 1 / self.max_ratio), self.max_ratio)
        w, h = math.sqrt(pixels * ratio), math.sqrt(pixels / ratio)
        shrink = min(1.0, self.max_edge / max(w, h))
        w, h = (self.step * max(1, math.floor(side * shrink / self.step + 0.5)) for side in (w, h))
        while max(w, h) > self.max_ratio * min(w, h) or w * h > self.max_pixels:
            w, h = (w - self.step, h) if w >= h else (w, h - self.step)
        return w, h


@dataclass(frozen=True)
class ImageModel:
    name: str
    prices: TokenPrices
    free_size: FreeSize | None  # None: one of LISTED_SIZES
    takes_input_fidelity: bool

    def output_tokens(self, quality: str, width: int, height: int) -> int:
        quality = quality if quality in QUALITIES else "high"  # "auto" may be high: the worst case
        if self.free_size is not None:
            return gpt_image_2_output_tokens(quality, width, height)
        return GPT_IMAGE_1_OUTPUT_TOKENS[quality][_nearest_listed(width, height)]

    def list_price(self, quality: str, width: int, height: int) -> float:
        """The price of the output image alone, by size and quality (the fallback without ``usage``)."""
        return round(self.output_tokens(quality, width, height) * self.prices.image_out / 1e6, 6)

    def usage_cost(self, usage: Any) -> float | None:
        """USD from a reply's ``usage``; None when it is missing or not the documented shape."""
        return usage_cost(usage, self.prices)


#: OpenAI image generation guide, "Cost and latency", GPT image 1 (see the module docstring).
GPT_IMAGE_1_OUTPUT_TOKENS = {
    "low": {(1024, 1024): 272, (1024, 1536): 408, (1536, 1024): 400},
    "medium": {(1024, 1024): 1056, (1024, 1536): 1584, (1536, 1024): 1568},
    "high": {(1024, 1024): 4160, (1024, 1536): 6240, (1536, 1024): 6208},
}

GPT_IMAGE_15 = ImageModel("gpt-image-1.5", TokenPrices(text_in=5.0, image_in=8.0, image_out=32.0), None, True)
GPT_IMAGE_2 = ImageModel("gpt-image-2", TokenPrices(text_in=5.0, image_in=8.0, image_out=30.0), FreeSize(), False)
#: GPT Image 2.5 and 2.6, each as Flare and Sunburst (2.6 released 2026-11-04).  All second-hand, UNCONFIRMED:
#: the custom size rule of gpt-image-2 (sides multiples of 16, longest edge <= 3840, ratio <= 3:1, 655,360 to
#: 8,294,400 pixels: Comfy's GPT Image node docs), gpt-image-2's token prices ("unchanged": APIYI's 2.6 launch
#: note) and, for want of a published table, gpt-image-2's output tokens.  input_fidelity is not sent: no
#: source says these ids take it (gpt-image-2 ignores it).
GPT_IMAGE_2X = {name: ImageModel(name, GPT_IMAGE_2.prices, FreeSize(), False)
                for name in ("gpt-image-2.5-flare", "gpt-image-2.5-sunburst", "gpt-image-2.6-flare",
                             "gpt-image-2.6-sunburst")}
#: Provider model id -> what we know of it; other ids (a newer model) get the listed sizes and the model's
#: flat price until they are added here.
MODELS: dict[str, ImageModel] = {"gpt-image-1.5": GPT_IMAGE_15, "gpt-image-2": GPT_IMAGE_2,
                                 "gpt-image-2-2026-04-21": GPT_IMAGE_2, **GPT_IMAGE_2X}
_DATED = re.compile(r"^(?P<base>.+)-\d{4}-\d{2}-\d{2}$")


def image_model(provider_model: str) -> ImageModel | None:
    if provider_model in MODELS:
        return MODELS[provider_model]
    dated = _DATED.match(provider_model)
    return MODELS.get(dated["base"]) if dated else None


def gpt_image_2_output_tokens(quality: str, width: int, height: int) -> int:
    """Output image tokens of gpt-image-2 (the calculator's formula, UNCONFIRMED; module docstring)."""
    factor = {"low": 16, "medium": 48, "high": 96}[quality]
    long_edge, short_edge = max(width, height), min(width, height)
    short_factor = (2 * factor * short_edge + long_edge) // (2 * long_edge)
    return (factor * short_factor * (2_000_000 + width * height) + 3_999_999) // 4_000_000


def usage_cost(usage: Any, prices: TokenPrices) -> float | None:
    """``usage`` priced: text and image input tokens, image and text output tokens.  Input without its
    details is priced as image tokens, output without its details as image tokens (the dearer of each)."""
    if not isinstance(usage, dict) or (not _count(usage.get("output_tokens")) and not _count(usage.get("input_tokens"))):
        return None
    inputs = details if isinstance(details := usage.get("input_tokens_details"), dict) else {}
    outputs = details if isinstance(details := usage.get("output_tokens_details"), dict) else {}
    text_in = _count(inputs.get("text_tokens"))
    image_in = _count(inputs.get("image_tokens")) if inputs else _count(usage.get("input_tokens"))
    text_out = _count(outputs.get("text_tokens"))
    image_out = _count(outputs.get("image_tokens")) if outputs else _count(usage.get("output_tokens"))
    total = (text_in * prices.text_in + image_in * prices.image_in + image_out * prices.image_out
             + text_out * prices.text_out)
    return round(total / 1e6, 6)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _nearest_listed(width: int, height: int) -> tuple[int, int]:
    target = math.log(width / height)
    return min(LISTED_SIZES, key=lambda wh: abs(math.log(wh[0] / wh[1]) - target))
