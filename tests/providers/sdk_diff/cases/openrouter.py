"""``openrouter``: our chat completion against openai-python's ``chat.completions.create``, as OpenRouter
documents it.

OpenRouter's quickstart uses the OpenAI SDK with ``base_url="https://openrouter.ai/api/v1"`` and passes
what the OpenAI API lacks through ``extra_body`` (``modalities``, ``image_config``, ``usage``) and its
optional attribution headers through ``extra_headers`` (``X-Title``) (openrouter.ai/docs quickstart,
image generation guide).  ``seed`` is a parameter of ``chat.completions.create`` itself
(openai-python ``types/chat/completion_create_params.py``).  Images go as ``image_url`` parts with data
URLs (OpenRouter multimodal images guide).
"""

from __future__ import annotations

import base64

from ..harness import OUTPUT, Call, Case, data_uri, file_reply
from ..recorder import Recorded, Recorder, Reply
from ..typed import check, typed_dict_schema
from ..wire import KEY
from .openai import OpenAICase

#: Body fields OpenRouter documents beyond the OpenAI API, sent through the SDK's ``extra_body``.
OPENROUTER_EXTRAS = ("modalities", "image_config", "usage")


class OpenRouterCase(Case):
    route = "openrouter"
    sdk = "openai"
    provider_env = "OPENROUTER"
    adapter_base = "/api/v1"
    allowed = OpenAICase.allowed

    def answer(self, recorder: Recorder, request: Recorded) -> Reply:
        image = f"data:image/png;base64,{base64.b64encode(OUTPUT).decode()}"
        return file_reply(request) or Reply(200, {
            "id": "gen-1", "object": "chat.completion", "created": 1, "model": "m", "provider": "p",
            "choices": [{"index": 0, "finish_reason": "stop", "native_finish_reason": "STOP",
                         "message": {"role": "assistant", "content": "",
                                     "images": [{"type": "image_url", "image_url": {"url": image}}]}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2, "cost": 0.1}})

    def validate(self, call: Call, ours: Recorded) -> None:
        """Our body, less what OpenRouter adds through ``extra_body``, against openai-python's
        ``CompletionCreateParamsNonStreaming``: OpenAI's own ``modalities`` are text and audio only, which is
        why OpenRouter's image modality goes as an extra."""
        import json

        from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

        body = {key: value for key, value in json.loads(ours.body).items() if key not in OPENROUTER_EXTRAS}
        check(body, typed_dict_schema(CompletionCreateParamsNonStreaming, plain_is_required=False),
              f"{call.spec.name}: our chat completion fails openai's CompletionCreateParamsNonStreaming")

    def send_with_sdk(self, call: Call) -> None:
        import openai

        content = [{"type": "text", "text": call.request.task.instruction}]
        content += [{"type": "image_url", "image_url": {"url": data_uri(path)}} for path in call.references]
        image_config = {"aspect_ratio": call.expected}
        if "image_size" in call.options:
            image_config["image_size"] = call.options["image_size"]
        extra_body = dict(zip(OPENROUTER_EXTRAS, (list(call.options.get("modalities") or ["image", "text"]),
                                                  image_config, {"include": True})))
        with openai.OpenAI(api_key=KEY, base_url=f"{call.base}/api/v1", max_retries=0) as client:
            client.chat.completions.create(model=call.spec.provider_model,
                                           messages=[{"role": "user", "content": content}],
                                           seed=call.request.seed, extra_body=extra_body,
                                           extra_headers={"X-Title": "pytest-hypeedit"})
