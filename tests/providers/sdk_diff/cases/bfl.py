"""``bfl``: our submission against the request BFL documents, and against BFL's published schema.

BFL publishes no Python SDK on PyPI that knows FLUX.2 (``blackforest`` 0.1.3, 2025-09, stops at FLUX.1
Kontext; its repository's newer ``bfl`` client is not released), so the reference side is the request
BFL's own client sends: ``POST {base}/v1/{model}`` with headers ``x-key`` and ``Content-Type:
application/json``, a JSON body of ``prompt``, ``input_image``, ``input_image_2`` ... (base64 or URL),
``seed``, ``width``, ``height``, ``safety_tolerance``, ``output_format`` (github black-forest-labs/skills,
skills/bfl-api/references/code-examples/python-client.py, ``generate_i2i`` and ``_submit_and_poll``).
Our body must also pass the endpoint's published schema (schemas/bfl.json, vendored with its source).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from ..harness import Call, Case, download, file_reply
from ..recorder import Recorded, Recorder, Reply
from ..wire import KEY

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas" / "bfl.json"


def endpoint_schema(path: str) -> dict:
    endpoints = json.loads(SCHEMAS.read_text())["endpoints"]
    assert path in endpoints, (f"no published schema for BFL's {path} in {SCHEMAS}: vendor its request schema "
                               "(with its source and date) so requests to it are checked")
    return endpoints[path]["schema"]


class BflCase(Case):
    route = "bfl"
    sdk = ""  # none on PyPI for FLUX.2: BFL's documented request and published schema instead
    provider_env = "BFL"

    def answer(self, recorder: Recorder, request: Recorded) -> Reply:
        if file := file_reply(request):
            return file
        if request.method == "POST":
            # A regional polling URL, as api.bfl.ai's failover may answer: a client that builds its own poll URL
            # from its base (instead of polling the one returned, as BFL says to [F3]) asks another path.
            return Reply(200, {"id": "job-1", "polling_url": f"{recorder.url}/eu4/v1/get_result?id=job-1",
                               "cost": 10.0, "input_mp": 0.5, "output_mp": 1.0})
        return Reply(200, {"id": "job-1", "status": "Ready",
                           "result": {"sample": f"{recorder.url}/files/out.png", "seed": 1}})

    def send_with_sdk(self, call: Call) -> None:
        import httpx

        images = [base64.b64encode(path.read_bytes()).decode() for path in call.references]
        if call.spec.provider_model.startswith("flux-3"):
            payload = self.flux3_request(call, images)
        else:
            payload = self.flux2_request(call, images)
        headers = {"x-key": KEY, "Content-Type": "application/json"}
        submitted = httpx.post(f"{call.base}/v1/{call.spec.provider_model}", json=payload, headers=headers)
        submitted.raise_for_status()
        # "GET <polling_url> with the same x-key", always the returned URL [F3]; then the sample, without the key
        polled = httpx.get(submitted.json()["polling_url"], headers={"x-key": KEY})
        polled.raise_for_status()
        download(polled.json()["result"]["sample"])

    @staticmethod
    def flux3_request(call: Call, images: list[str]) -> dict:
        """FLUX 3 Image's documented shape (second-hand, docs/reference/providers.md section 10, UNCONFIRMED): ``images`` (1-10),
        ``aspect_ratio``, ``resolution``, ``grounding`` (on by default: an edit of given images asks for it off)
        and ``safety_tolerance``; the ratio is the adapter's choice of the documented list, as FLUX.2's width and
        height are."""
        payload = {"prompt": call.request.task.instruction, "images": images,
                   "aspect_ratio": call.expected,
                   "resolution": str(call.options.get("resolution", "2k")),
                   "grounding": bool(call.options.get("grounding", False))}
        if "safety_tolerance" in call.options:
            payload["safety_tolerance"] = int(call.options["safety_tolerance"])
        return payload

    @staticmethod
    def flux2_request(call: Call, images: list[str]) -> dict:
        width, height = call.expected
        payload = {"prompt": call.request.task.instruction, "input_image": images[0]}
        payload.update({f"input_image_{index}": image for index, image in enumerate(images[1:], start=2)})
        payload.update(seed=call.request.seed, width=width, height=height,
                       output_format=str(call.options.get("output_format", "png")))
        if "safety_tolerance" in call.options:
            payload["safety_tolerance"] = int(call.options["safety_tolerance"])
        return payload

    def validate(self, call: Call, ours: Recorded) -> None:
        import fastjsonschema

        validate = fastjsonschema.compile(endpoint_schema(ours.path))
        try:
            validate(json.loads(ours.body))
        except fastjsonschema.JsonSchemaException as exc:
            raise AssertionError(f"{call.spec.name}: our body fails BFL's schema for {ours.path}: {exc.message}") from exc
