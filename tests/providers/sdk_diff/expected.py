"""What each model must be asked for, per task shape: written out here, never computed by our adapters.

The SDK side of every differential case takes its size, aspect ratio or size pair from this table, so an
adapter whose rule goes wrong (width and height swapped, the wrong ratio list, a wrong pixel budget) sends
something the SDK did not.  Each row names the rule it follows: the provider's documented constraint (the
source beside it, docs/reference/providers.md section in brackets) and, where the provider leaves a choice, the project's
policy inside it (the task's own aspect ratio at the model's pixel budget, sides multiples of 16; a tie in
rounding to 16 goes to the even multiple).  The values were worked out by hand from those rules; the
constraints each must meet are checked again by test_expected.py, without our adapters' code.

Shapes (shapes.py): landscape 4800x3584 (4:3), portrait 3072x4096 (3:4), square 2048x2048, extreme 6144x1536
(4:1), multi 1920x1080 (16:9, three references).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Rule:
    rule: str  # the documented constraint and the policy within it
    source: str
    values: dict[str, Any]  # shape name -> the value the request must carry


GEMINI_10 = ("1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9")

RULES: dict[str, Rule] = {
    # ---------------------------------------------------------------- aspect ratios: the nearest documented one
    "gemini-10-ratios": Rule(
        "imageConfig.aspectRatio: the documented ratio nearest the task's (log distance); 4:1 -> 21:9, the widest",
        "Gemini API image generation guide, aspect ratios 1:1 2:3 3:2 3:4 4:3 9:16 16:9 21:9 (+4:5 5:4) [G3][G17]",
        {"landscape": "4:3", "portrait": "3:4", "square": "1:1", "extreme": "21:9", "multi": "16:9"}),
    "gemini-14-ratios": Rule(
        "imageConfig.aspectRatio: as gemini-10-ratios, from the list with 1:4 4:1 1:8 8:1: 4:1 is listed",
        "Google Cloud model page of gemini-3.1-flash-image; tanstack/ai-gemini 0.36.0 for nano-banana-2.1 (2nd)",
        {"landscape": "4:3", "portrait": "3:4", "square": "1:1", "extreme": "4:1", "multi": "16:9"}),
    "flux3-ratios": Rule(
        "aspect_ratio: the nearest of 21:9 2:1 16:9 3:2 7:5 4:3 5:4 1:1 4:5 3:4 5:7 2:3 9:16 1:2 9:21",
        "docs.comfy.org Comfy Router page of bfl/flux-3-image (2nd, UNCONFIRMED) [docs/reference/providers.md 10]",
        {"landscape": "4:3", "portrait": "3:4", "square": "1:1", "extreme": "21:9", "multi": "16:9"}),
    "replicate-seedream-ratios": Rule(
        "aspect_ratio: the nearest of 1:1 4:3 3:4 16:9 9:16 3:2 2:3 21:9",
        "replicate.com/bytedance/seedream-4.5 API schema (2nd copy) [docs/reference/providers.md 7]",
        {"landscape": "4:3", "portrait": "3:4", "square": "1:1", "extreme": "21:9", "multi": "16:9"}),
    "replicate-riverflow-ratios": Rule(
        "aspect_ratio: the nearest of 1:1 4:3 3:4 16:9 9:16 3:2 2:3 5:4 4:5 (no 21:9: 4:1 -> 16:9)",
        "Runware's and WaveSpeed's riverflow-2.0-pro size lists (Replicate's own UNCONFIRMED) [docs/reference/providers.md 5]",
        {"landscape": "4:3", "portrait": "3:4", "square": "1:1", "extreme": "16:9", "multi": "16:9"}),
    # ---------------------------------------------------------------- listed sizes: the nearest listed pair
    "openai-listed": Rule(
        "size: the listed WxH nearest the task's ratio: 1024x1024 | 1536x1024 | 1024x1536",
        "openai-python types/image_edit_params.py (size) [O1]",
        {"landscape": "1536x1024", "portrait": "1024x1536", "square": "1024x1024", "extreme": "1536x1024",
         "multi": "1536x1024"}),
    "riverflow-2.0-2k": Rule(
        "width/height: the listed 2K pair nearest the task's ratio (any other pair is not accepted)",
        "runware.ai/docs/models/sourceful-riverflow-2-0-pro, supported dimensions [R1]",
        {"landscape": (2304, 1728), "portrait": (1728, 2304), "square": (2048, 2048), "extreme": (3024, 1296),
         "multi": (2560, 1440)}),
    "riverflow-2.5-2k": Rule(
        "width/height: the listed 2K pair nearest the task's ratio; 21:9 is 2688x1152",
        "runware.ai/docs/models/sourceful-riverflow-2-5-fast, supported dimension combinations",
        {"landscape": (2048, 1536), "portrait": (1536, 2048), "square": (2048, 2048), "extreme": (2688, 1152),
         "multi": (2048, 1152)}),
    # ---------------------------------------------------------------- free sizes: the task's ratio at a budget
    "openai-free": Rule(
        "size: any WxH, sides multiples of 16, ratio <= 3:1, 655,360-8,294,400 px; policy: the task's ratio "
        "(clamped to 3:1) at 1536x1024's area; 4:1 -> 2160x720",
        "openai-python types/image_edit_params.py (gpt-image-2 size) [docs/reference/providers.md 10]",
        {"landscape": "1456x1088", "portrait": "1088x1456", "square": "1248x1248", "extreme": "2160x720",
         "multi": "1680x944"}),
    "seedream-2k": Rule(
        "size WxH: total pixels within the model's range (4.0 1024^2-4096^2, 4.5 3,686,400-16,777,216, 5.0 "
        "from 3,686,400), ratio 1/16-16; policy: the task's ratio at 2048x2048's area",
        "ModelArk image generation API (size) [B5][B6 2nd] [docs/reference/providers.md 2, 10]",
        {"landscape": "2368x1776", "portrait": "1776x2368", "square": "2048x2048", "extreme": "4096x1024",
         "multi": "2736x1536"}),
    "seedream-2k-capped": Rule(
        "as seedream-2k, within at most 2048x2048 pixels: 2368x1776 is over, so its long side gives 16 px",
        "docs/reference/providers.md 10 (5.5: 0.92 MP to about 2048x2048, UNCONFIRMED); APIYI's Seedream page for 5.0 Pro (2nd)",
        {"landscape": "2352x1776", "portrait": "1776x2352", "square": "2048x2048", "extreme": "4096x1024",
         "multi": "2720x1536"}),
    "bfl-1mp": Rule(
        "width/height: multiples of 16, >= 64, <= 4 MP; policy: the task's ratio at 1 MP",
        "BFL API reference, flux-2-max body (width, height) [F1]; BFL python-client _validate_dimensions [F2]",
        {"landscape": (1152, 864), "portrait": (864, 1152), "square": (992, 992), "extreme": (2000, 496),
         "multi": (1328, 752)}),
    "fal-1mp": Rule(
        "image_size {width, height}; policy: the task's ratio at 1 MP, sides multiples of 16",
        "fal model API pages, image_size as {width, height} [B14][Q6]",
        {"landscape": (1152, 864), "portrait": (864, 1152), "square": (992, 992), "extreme": (2000, 496),
         "multi": (1328, 752)}),
    "fal-qwen2-range": Rule(
        "image_size {width, height} within 0.26-4.19 MP; policy: the task's own size brought into that range",
        "fal-ai/qwen-image-2/edit model page (2nd) [docs/reference/providers.md 10]",
        {"landscape": (2352, 1776), "portrait": (1776, 2352), "square": (2048, 2048), "extreme": (4096, 1024),
         "multi": (1920, 1088)}),
    "dashscope-1mp": Rule(
        "parameters.size 'W*H', sides 512-2048; policy: the task's ratio at 1 MP, sides multiples of 16",
        "Model Studio qwen-image-edit API reference (size) [Q1][Q3 2nd] [docs/reference/providers.md 6]",
        {"landscape": "1184*880", "portrait": "880*1184", "square": "1024*1024", "extreme": "2048*512",
         "multi": "1360*768"}),
}

#: The rule each model's request follows (provider model id -> RULES key).
MODEL_RULE = {
    "gemini-3-pro-image": "gemini-10-ratios", "gemini-3.1-flash-lite-image": "gemini-10-ratios",
    "gemini-3.1-flash-image": "gemini-14-ratios", "gemini-nano-banana-2.1": "gemini-14-ratios",
    "google/gemini-3-pro-image-preview": "gemini-10-ratios",
    "gpt-image-1.5": "openai-listed", "gpt-image-2": "openai-free", "gpt-image-2.5-flare": "openai-free",
    "gpt-image-2.5-sunburst": "openai-free", "gpt-image-2.6-flare": "openai-free",
    "gpt-image-2.6-sunburst": "openai-free",
    "seedream-4-0-250828": "seedream-2k", "seedream-4-5-251128": "seedream-2k", "seedream-5-0-260128": "seedream-2k",
    "seedream-5-5-261028": "seedream-2k-capped", "seedream-5-0-pro-260628": "seedream-2k-capped",
    "flux-2-max": "bfl-1mp", "flux-3-image": "flux3-ratios",
    "fal-ai/qwen-image-edit-2511": "fal-1mp", "fal-ai/bytedance/seedream/v4.5/edit": "fal-1mp",
    "fal-ai/qwen-image-2/edit": "fal-qwen2-range",
    "qwen-image-edit-plus-2025-12-15": "dashscope-1mp",
    "bytedance/seedream-4.5": "replicate-seedream-ratios", "sourceful/riverflow-2.0-pro": "replicate-riverflow-ratios",
    "sourceful:riverflow-2.0@pro": "riverflow-2.0-2k", "sourceful:riverflow-2.5@pro": "riverflow-2.5-2k",
}


def expected(provider_model: str, shape: str) -> Any:
    """The value ``provider_model``'s request must carry for a task of ``shape``."""
    assert provider_model in MODEL_RULE, (f"tests/sdk_diff/expected.py has no rule for {provider_model}: add its "
                                          "documented size or aspect-ratio rule and its values per shape")
    return RULES[MODEL_RULE[provider_model]].values[shape]
