"""``dashscope``: our multimodal-generation request against dashscope's ``MultiModalConversation.call``.

SDK: dashscope (Alibaba Cloud Model Studio).  ``dashscope.base_http_api_url`` is its documented base
URL setting (``dashscope/__init__.py``, ``common/env.py``: also ``DASHSCOPE_HTTP_BASE_URL``); the
Qwen image edit guide calls ``MultiModalConversation.call(model, messages=[{"role": "user",
"content": [{"image": ...}, ..., {"text": ...}]}], n, size, watermark, seed, negative_prompt,
prompt_extend)`` and the SDK puts the keyword arguments under ``parameters``.  Images may be URLs or
``data:{MIME};base64,...`` (Model Studio, qwen-image-edit API reference, "image" field).
"""

from __future__ import annotations

from ..harness import Call, Case, data_uri, download, file_reply
from ..recorder import Recorded, Recorder, Reply
from ..wire import KEY, Allow, only_sdk


class DashScopeCase(Case):
    route = "dashscope"
    sdk = "dashscope"
    provider_env = "DASHSCOPE"
    adapter_base = "/api/v1"
    allowed = (
        Allow("header.x-dashscope-sdk-*", "the SDK's name/version and a per-process session id "
              "(api_entities/http_request.py); the service does not require them", only_sdk),
    )

    def answer(self, recorder: Recorder, request: Recorded) -> Reply:
        content = [{"image": f"{recorder.url}/files/out.png"}]
        return file_reply(request) or Reply(200, {
            "output": {"choices": [{"finish_reason": "stop", "message": {"role": "assistant", "content": content}}]},
            "usage": {"width": 64, "height": 48, "image_count": 1}, "request_id": "req-1"})

    def send_with_sdk(self, call: Call) -> None:
        import dashscope
        from dashscope import MultiModalConversation

        content = [{"image": data_uri(path)} for path in call.references]
        content.append({"text": call.request.task.instruction})
        extra = {name: call.options[name] for name in ("negative_prompt", "prompt_extend") if name in call.options}
        previous, dashscope.base_http_api_url = dashscope.base_http_api_url, f"{call.base}/api/v1"
        try:
            reply = MultiModalConversation.call(
                model=call.spec.provider_model, api_key=KEY, messages=[{"role": "user", "content": content}],
                n=1, size=call.expected, watermark=False, seed=call.request.seed, **extra)
        finally:
            dashscope.base_http_api_url = previous
        assert reply.status_code == 200, reply
        download(reply.output.choices[0].message.content[0]["image"])
