"""``runware``: our ``imageInference`` task against runware-python's ``Runware.run`` over REST.

SDK: runware-sdk on PyPI (github Runware/runware-python), the SDK with a REST transport and typed,
validated parameters; the older ``runware`` package (Runware/sdk-python) speaks only WebSocket and
cannot be given an HTTP server.  ``Runware(transport="rest", http_base_url=...)`` is its documented
base URL setting (``types/sdk.py`` ``SDKConfig``); ``run(params)`` posts ``[task]`` with
``Authorization: Bearer`` (``transport/rest.py``), adds ``taskUUID`` and ``deliveryMethod: "async"``
(``client.py`` ``run``) and polls ``getResponse`` until the image arrives.  The task's fields are the
ones the model's generated ``...Params`` TypedDict lists (``types/task_map.py``, from Runware's schemas
bundle ``_schemas_version.py``); a field that is not there (``seed`` for Riverflow) is not sent.
References are data URIs from the SDK's ``file_to_data_uri`` (``utils/file.py``) in
``inputs.referenceImages``.
"""

from __future__ import annotations

import asyncio
import sys

import pytest

from ..harness import Call, Case, download, file_reply
from ..recorder import Recorded, Recorder, Reply
from ..typed import typed_dict_schema
from ..wire import KEY, Allow, both_uuid4


def needs_python_311() -> None:
    if sys.version_info < (3, 11):
        pytest.skip("runware-sdk, Runware's REST SDK, needs Python 3.11 (its pyproject requires-python); "
                    "on 3.10 the Runware request is not compared")


def params_class(model: str) -> type:
    """The SDK's TypedDict of ``model``'s parameters (the class whose ``model`` is ``Literal[model]``)."""
    import typing

    from runware.types import task_map

    for name in dir(task_map):
        cls = getattr(task_map, name)
        if name.endswith("Params") and isinstance(cls, type) and hasattr(cls, "__optional_keys__"):
            hint = typing.get_type_hints(cls).get("model")
            if typing.get_origin(hint) is typing.Literal and model in typing.get_args(hint):
                return cls
    raise AssertionError(f"runware-python {task_map.SCHEMAS_VERSION} has no parameter type for model {model}: "
                         "update runware-sdk, or the model id is wrong")


class RunwareCase(Case):
    route = "runware"
    sdk = "runware-sdk"
    provider_env = "RUNWARE"
    adapter_base = "/v1"
    allowed = (
        Allow("body[0].taskUUID", "a fresh UUID v4 per task on both sides (client.py run: uuid.uuid4())",
              both_uuid4),
    )

    def answer(self, recorder: Recorder, request: Recorded) -> Reply:
        if file := file_reply(request):
            return file
        import json

        task = json.loads(request.body)[0]
        return Reply(200, {"data": [{"taskType": "imageInference", "taskUUID": task["taskUUID"],
                                     "imageUUID": "img-1", "imageURL": f"{recorder.url}/files/out.png",
                                     "cost": 0.15, "status": "success"}]})

    def task(self, call: Call, images: list[str]) -> dict:
        known = params_class(call.spec.provider_model).__optional_keys__
        # The size is the model's listed pair for the task's shape (expected.py); a model with ``settings`` gets
        # its thinking level from the model's options, "medium" when none is given (the default of Runware's
        # schemas, second-hand table, UNCONFIRMED).
        width, height = call.expected
        task: dict = {"width": width, "height": height}
        if "settings" in known:
            task["settings"] = {"thinkingLevel": str(call.options.get("thinking_level", "medium"))}
        task.update({"taskType": "imageInference", "model": call.spec.provider_model,
                     "positivePrompt": call.request.task.instruction, "numberResults": 1, "outputType": "URL",
                     "outputFormat": str(call.options.get("output_format", "PNG")).upper(),
                     "deliveryMethod": "async", "includeCost": True, "inputs": {"referenceImages": images}})
        if "seed" in known and call.options.get("send_seed", True):
            task["seed"] = call.request.seed
        return task

    def validate(self, call: Call, ours: Recorded) -> None:
        """Our task through the SDK's own validation (``validate.py`` ``validate_tasks``: fastjsonschema on the
        model's request schema), with the schema made from the model's generated parameter type
        (``additionalProperties: false``, as Runware's schemas are) and served from loopback: the SDK fetches
        it from ``SCHEMAS_BASE_URL/resolve/<model>``, which cannot be reached from here."""
        import json

        needs_python_311()
        schema = typed_dict_schema(params_class(call.spec.provider_model), plain_is_required=True)
        task = json.loads(ours.body)[0]
        with Recorder(lambda recorder, request: Reply(200, {"requestSchema": schema})) as schemas:
            error = asyncio.run(_sdk_validation(task, schemas.url))
        assert error is None, f"{call.spec.name}: runware-sdk does not accept our task: {error}"

    def send_with_sdk(self, call: Call) -> None:
        needs_python_311()
        from runware import Runware
        from runware.utils.file import file_to_data_uri

        task = self.task(call, [file_to_data_uri(path) for path in call.references])

        async def send():
            async with Runware(api_key=KEY, transport="rest", http_base_url=f"{call.base}/v1",
                               max_retries=0) as client:
                return await client.run(task)

        results = asyncio.run(send())
        result = results[0] if isinstance(results, list) else results
        download(str(result["imageURL"] if isinstance(result, dict) else result.imageURL))


async def _sdk_validation(task: dict, schemas_url: str) -> str | None:
    """The SDK's verdict on ``task`` (None when valid), with its schema URL pointed at ``schemas_url``."""
    import aiohttp
    from runware import RunwareError, validate as sdk_validate
    from runware.logger import create_logger

    previous, sdk_validate.SCHEMAS_BASE_URL = sdk_validate.SCHEMAS_BASE_URL, schemas_url
    sdk_validate.clear_validator_cache()
    try:
        async with aiohttp.ClientSession() as session:
            await sdk_validate.validate_tasks([task], log=create_logger(False), session=session)
    except RunwareError as exc:
        return str(exc)
    finally:
        sdk_validate.SCHEMAS_BASE_URL = previous
        sdk_validate.clear_validator_cache()
    return None
