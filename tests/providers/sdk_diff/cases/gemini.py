"""``gemini``: our ``generateContent`` request against google-genai called as Google documents image editing.

Both sides use google-genai here (ours through our own httpx client), so the comparison is with a
hand-built call in the documented style: ``genai.Client(http_options=HttpOptions(base_url=...,
api_version="v1beta"))`` (the SDK's documented base URL setting, ``_api_client.py``), the instruction and
the references as parts of one user ``Content`` with ``Part.from_bytes`` (as the upstream HYPE-EDIT-1
judge script, src/judge_gemini_3_flash.py, passes images), and ``GenerateContentConfig(response_modalities=
["IMAGE"], image_config=ImageConfig(aspect_ratio=..., image_size=...))`` (Gemini API image generation
guide, "aspect ratios and image size"), with ``seed`` (``GenerateContentConfig.seed``, ``types.py``).
"""

from __future__ import annotations

import base64

from ..harness import OUTPUT, Call, Case, file_reply
from ..recorder import Recorded, Recorder, Reply
from ..wire import KEY, MISSING, Allow, sniff


class GeminiCase(Case):
    route = "gemini"
    sdk = "google-genai"
    provider_env = "GEMINI"
    allowed = (
        Allow("header.x-server-timeout", "google-genai sends it (seconds) when HttpOptions.timeout is set "
              "(_api_client.py); ours sets the timeout so the server may stop work nobody waits for, the "
              "documented call sets none", lambda d: d.theirs is MISSING and str(d.ours).isdigit()),
    )

    def answer(self, recorder: Recorder, request: Recorded) -> Reply:
        part = {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(OUTPUT).decode()}}
        return file_reply(request) or Reply(200, {
            "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
            "modelVersion": "m", "responseId": "resp-1"})

    def send_with_sdk(self, call: Call) -> None:
        from google import genai
        from google.genai import types

        parts = [types.Part.from_text(text=call.request.task.instruction)]
        parts += [types.Part.from_bytes(data=path.read_bytes(), mime_type=sniff(path.read_bytes()))
                  for path in call.references]
        config = types.GenerateContentConfig(
            response_modalities=list(call.options.get("response_modalities") or ["IMAGE"]),
            image_config=types.ImageConfig(aspect_ratio=call.expected,
                                           image_size=str(call.options.get("image_size", "2K")).upper()),
            seed=call.request.seed)
        client = genai.Client(api_key=KEY, vertexai=False,
                              http_options=types.HttpOptions(base_url=call.base, api_version="v1beta"))
        client.models.generate_content(model=call.spec.provider_model,
                                       contents=[types.Content(role="user", parts=parts)], config=config)
