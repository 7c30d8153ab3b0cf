"""``openai``: our multipart ``images/edits`` against openai-python's ``client.images.edit``.

SDK: openai (openai/openai-python).  ``OpenAI(base_url=...)`` is its documented
base URL setting (``_client.py``); ``images.edit`` sends ``image`` as one
``image[]`` part per file ("brackets" array format, ``resources/images.py``
``extract_files(..., paths=[["image", "<array>"], ...])``) and a ``Path`` as
``(path.name, bytes)`` with the content type httpx guesses from the name
(``_files.py`` ``_transform_file``).  ``input_fidelity`` only for the models its
docstring says take it: "Supports high and low on gpt-image-1.5; gpt-image-1-mini
supports only low. For gpt-image-2, omit this parameter" (``types/image_edit_params.py``).
"""

from __future__ import annotations

import base64

from ..harness import CALL_ID, OUTPUT, Call, Case, file_reply
from ..recorder import Recorded, Recorder, Reply
from ..typed import check, typed_dict_schema
from ..wire import KEY, Allow, normal, only_sdk

#: Models whose edits take input_fidelity (image_edit_params.py, see the module docstring).
INPUT_FIDELITY_MODELS = ("gpt-image-1.5", "gpt-image-1-mini", "gpt-image-1")


def takes_input_fidelity(model: str) -> bool:
    return any(model == name or model.startswith(f"{name}-20") for name in INPUT_FIDELITY_MODELS)


class OpenAICase(Case):
    route = "openai"
    sdk = "openai"
    provider_env = "OPENAI"
    adapter_base = "/v1"
    allowed = (
        Allow("header.x-stainless-*", "openai-python's telemetry headers (_base_client.py platform_headers, "
              "retry count, read timeout): the API does not need them", only_sdk),
    )

    def answer(self, recorder: Recorder, request: Recorded) -> Reply:
        return file_reply(request) or Reply(200, {
            "created": 1, "data": [{"b64_json": base64.b64encode(OUTPUT).decode()}], "size": "1536x1024",
            "quality": "high", "output_format": "png",
            "usage": {"input_tokens": 10, "output_tokens": 20, "total_tokens": 30,
                      "input_tokens_details": {"image_tokens": 8, "text_tokens": 2}}})

    def validate(self, call: Call, ours: Recorded) -> None:
        """Our fields and file part names against the SDK's ``ImageEditParamsNonStreaming`` (its keys, types and
        Literal choices); numbers arrive in a form as text, so digits are read as the integers they stand for."""
        from openai.types.image_edit_params import ImageEditParamsNonStreaming

        form = normal(ours).body
        value = {name: int(text) if text.isdigit() else text for name, text in form["fields"].items()}
        for part in form["files"]:
            value[part["name"].removesuffix("[]")] = part["filename"]  # "brackets" arrays: image[] is image
        check(value, typed_dict_schema(ImageEditParamsNonStreaming, plain_is_required=False),
              f"{call.spec.name}: our images/edits form fails openai's ImageEditParamsNonStreaming")

    def send_with_sdk(self, call: Call) -> None:
        import openai

        options = call.options
        extra = {}
        if takes_input_fidelity(call.spec.provider_model):
            extra["input_fidelity"] = str(options.get("input_fidelity", "high"))
        client = openai.OpenAI(api_key=KEY, base_url=f"{call.base}/v1", max_retries=0)
        with client:
            client.images.edit(image=list(call.references), prompt=call.request.task.instruction,
                               model=call.spec.provider_model, size=call.expected,
                               quality=str(options.get("quality", "high")),
                               output_format=str(options.get("output_format", "png")), n=1,
                               extra_headers={"X-Client-Request-Id": CALL_ID}, **extra)
