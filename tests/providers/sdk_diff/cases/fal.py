"""``fal``: our queue submission against fal-client's ``SyncClient.submit``.

SDK: fal-client (fal-ai/fal, projects/fal_client).  ``SyncClient(key=...)`` sends ``Authorization:
Key <key>`` (``auth.py`` ``AuthCredentials``); ``submit(application, arguments)`` posts the arguments as
JSON to ``QUEUE_URL_FORMAT + application`` (``client.py``).  Its only base URL setting is the host,
``FAL_QUEUE_RUN_HOST`` (``auth.py``), read at import and always put behind ``https://``
(``client.py``: ``QUEUE_URL_FORMAT = f"https://{FAL_QUEUE_RUN_HOST}/"``), so it cannot name a plain-HTTP
loopback server: the test sets the module's ``QUEUE_URL_FORMAT``, the value that variable feeds, instead.
References are data URIs made by the SDK's own ``fal_client.encode_file`` (type from the file name).
"""

from __future__ import annotations

from ..harness import Call, Case, download, file_reply
from ..recorder import Recorded, Recorder, Reply
from ..wire import KEY, MISSING, Allow


class FalCase(Case):
    route = "fal"
    sdk = "fal-client"
    provider_env = "FAL"
    allowed = (
        Allow("query.logs", "fal-client asks the status without logs (?logs=false, client.py "
              "SyncRequestHandle.status); logs are off unless ?logs=1 is asked (fal queue docs [A1])",
              lambda difference: difference.ours is MISSING and difference.theirs == ["false"]),
    )

    def answer(self, recorder: Recorder, request: Recorded) -> Reply:
        if file := file_reply(request):
            return file
        base = f"{recorder.url}/fal-ai/app/requests/r-1"
        if request.method == "POST":
            return Reply(200, {"request_id": "r-1", "status_url": f"{base}/status", "response_url": base,
                               "cancel_url": f"{base}/cancel", "queue_position": 0})
        if request.path.endswith("/status"):
            return Reply(200, {"status": "COMPLETED", "logs": []})
        return Reply(200, {"images": [{"url": f"{recorder.url}/files/out.png", "content_type": "image/png"}],
                           "seed": 1})

    def send_with_sdk(self, call: Call) -> None:
        import fal_client
        import fal_client.client

        arguments = {"prompt": call.request.task.instruction,
                     "image_urls": [fal_client.encode_file(path) for path in call.references],
                     "num_images": 1, "seed": call.request.seed,
                     "image_size": dict(zip(("width", "height"), call.expected)),
                     "output_format": str(call.options.get("output_format", "png"))}
        arguments.update(call.options.get("arguments") or {})
        previous, fal_client.client.QUEUE_URL_FORMAT = fal_client.client.QUEUE_URL_FORMAT, f"{call.base}/"
        try:
            handle = fal_client.SyncClient(key=KEY).submit(call.spec.provider_model, arguments=arguments)
            result = handle.get()  # polls status_url until COMPLETED, then GETs response_url (client.py)
        finally:
            fal_client.client.QUEUE_URL_FORMAT = previous
        download(result["images"][0]["url"])
