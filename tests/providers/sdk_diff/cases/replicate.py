"""``replicate``: our prediction request against replicate-python's ``client.models.predictions.create``.

SDK: replicate (replicate/replicate-python).  ``Client(api_token=..., base_url=...)`` is its
documented base URL setting (``client.py`` ``_build_httpx_client``, also ``REPLICATE_BASE_URL``; its
paths carry ``/v1``).  ``models.predictions.create(model="owner/name", input=...)`` posts
``{"input": ...}`` to ``/v1/models/{owner}/{name}/predictions`` (``model.py``); with
``file_encoding_strategy="base64"`` a file in the input becomes a data URI with the type its name
suggests (``helpers.py`` ``base64_encode_file``), as Replicate recommends for files under 1 MB.
No ``wait`` is passed: the SDK then sends no ``Prefer`` header (``prediction.py``
``_create_prediction_headers``), and neither do we by default.  Inputs per model schema:
sourceful/riverflow-2.0-* takes ``instruction``, ``init_images``, ``resolution``, ``aspect_ratio``;
bytedance/seedream-4.5 ``prompt``, ``image_input``, ``aspect_ratio`` (replicate.com model API pages).
"""

from __future__ import annotations

from ..harness import QUICK_POLL_S, Call, Case, download, file_reply
from ..recorder import Recorded, Recorder, Reply
from ..wire import KEY


class ReplicateCase(Case):
    route = "replicate"
    sdk = "replicate"
    provider_env = "REPLICATE"
    adapter_base = "/v1"

    def answer(self, recorder: Recorder, request: Recorded) -> Reply:
        urls = {"get": f"{recorder.url}/v1/predictions/p-1", "cancel": f"{recorder.url}/v1/predictions/p-1/cancel"}
        # Starting when created, finished at the first poll of urls.get: both sides poll once.
        done = request.method != "POST"
        return file_reply(request) or Reply(200 if done else 201, {
            "id": "p-1", "model": "m", "version": "v", "status": "succeeded" if done else "starting", "input": {},
            "urls": urls, "output": [f"{recorder.url}/files/out.png"] if done else None, "logs": ""})

    def send_with_sdk(self, call: Call) -> None:
        import replicate

        files = [open(path, "rb") for path in call.references]
        try:
            client = replicate.Client(api_token=KEY, base_url=call.base)
            client.poll_interval = QUICK_POLL_S  # REPLICATE_POLL_INTERVAL's attribute (client.py), 0.5 s by default
            prediction = client.models.predictions.create(model=call.spec.provider_model,
                                                          input=model_input(call, files),
                                                          file_encoding_strategy="base64")
            prediction.wait()  # polls urls.get until a final status (prediction.py)
        finally:
            for handle in files:
                handle.close()
        download(prediction.output[0])


def model_input(call: Call, images: list) -> dict:
    aspect_ratio = call.expected
    if call.spec.provider_model.startswith("sourceful/"):
        body = {"instruction": call.request.task.instruction, "init_images": images,
                "resolution": str(call.options.get("resolution", "2K")), "aspect_ratio": aspect_ratio}
    else:
        body = {"prompt": call.request.task.instruction, "image_input": images, "aspect_ratio": aspect_ratio}
    body.update(call.options.get("arguments") or {})
    return body
