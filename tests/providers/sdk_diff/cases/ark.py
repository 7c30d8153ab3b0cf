"""``ark``: our ``images/generations`` body against byteplus-python-sdk-v2's ``Ark().images.generate``.

SDK: byteplus-python-sdk-v2, module ``byteplussdkarkruntime`` (byteplus-sdk/byteplus-python-sdk-v2).
``Ark(base_url=..., api_key=...)`` is its documented base URL setting (``_client.py``; default
``https://ark.ap-southeast.bytepluses.com/api/v3``, ``_constants.py``).  ``images.generate`` posts
every parameter it has, unset ones as JSON null (``resources/images/images.py``: the whole body
dict is sent), and the client adds ``X-Client-Request-Id`` (``_base_client.py``), which
``extra_headers`` replaces with the caller's own id: ours, the journaled call id, so it is compared by value.
The returned URL is then fetched with a plain GET (no key).  References are
data URLs, ``data:image/<format>;base64,...`` (ModelArk image generation API reference).
"""

from __future__ import annotations

from ..harness import CALL_ID, Call, Case, data_uri, download, file_reply
from ..recorder import Recorded, Recorder, Reply
from ..wire import KEY, Allow, only_sdk_null


class ArkCase(Case):
    route = "ark"
    sdk = "byteplus-python-sdk-v2"
    provider_env = "ARK"
    adapter_base = "/api/v3"
    allowed = (
        Allow("body.*", "the SDK sends every parameter it did not get as null (images.py passes its whole body "
              "dict); null is how every SDK user says 'not given', so leaving the field out is the same",
              only_sdk_null),
    )

    def answer(self, recorder: Recorder, request: Recorded) -> Reply:
        return file_reply(request) or Reply(200, {
            "model": "seedream", "created": 1, "data": [{"url": f"{recorder.url}/files/out.png", "size": "64x48"}],
            "usage": {"generated_images": 1, "output_tokens": 1, "total_tokens": 1}})

    def validate(self, call: Call, ours: Recorded) -> None:
        """Every field we send is a parameter of the SDK's ``Images.generate`` (it has no other way to send one
        but ``extra_body``)."""
        import inspect
        import json

        from byteplussdkarkruntime.resources.images.images import Images

        # generate is wrapped by _utils.apikey_required, which keeps no __wrapped__: the function is in its closure
        generate = next(cell.cell_contents for cell in Images.generate.__closure__ if callable(cell.cell_contents))
        known = set(inspect.signature(generate).parameters) - {"self", "extra_headers", "extra_query", "extra_body",
                                                                "timeout"}
        unknown = sorted(set(json.loads(ours.body)) - known)
        assert not unknown, f"{call.spec.name}: images.generate has no parameter {unknown} (byteplus SDK)"

    def send_with_sdk(self, call: Call) -> None:
        from byteplussdkarkruntime import Ark

        extra = {"seed": call.request.seed} if call.options.get("send_seed", True) else {}
        # 5.0 and 5.0 Pro are asked for PNG (output_format png | jpeg, a parameter of images.generate)
        if call.spec.provider_model in ("seedream-5-0-260128", "seedream-5-0-pro-260628"):
            extra["output_format"] = call.options.get("output_format", "png")
        # 5.0 Pro answers 400 to sequential_image_generation whatever its value (second-hand: APIYI, LaoZhang)
        if call.spec.provider_model != "seedream-5-0-pro-260628":
            extra["sequential_image_generation"] = "disabled"
        client = Ark(api_key=KEY, base_url=f"{call.base}/api/v3", max_retries=0)
        references = [data_uri(path) for path in call.references]
        reply = client.images.generate(model=call.spec.provider_model, prompt=call.request.task.instruction,
                                       image=references[0] if len(references) == 1 else references,
                                       size=call.expected, response_format="url", watermark=False,
                                       extra_headers={"X-Client-Request-Id": CALL_ID}, **extra)
        download(reply.data[0].url)
