"""JSON Schemas made from an SDK's TypedDicts, so a body can be checked against the SDK's own parameter types.

OpenAI's ``ImageEditParams`` and Runware's per-model ``...Params`` are
TypedDicts: their keys are the parameters the SDK knows, with their types and
``Literal`` choices.  ``typed_dict_schema`` turns one into a JSON Schema with
``additionalProperties: false`` (Runware's own schemas are strict that way,
runware-python tests/test_validate.py), for fastjsonschema (the validator
runware-python itself uses, ``validate.py``).
"""

from __future__ import annotations

import types
import typing
from typing import Any

_SCALARS = {str: {"type": "string"}, bool: {"type": "boolean"}, int: {"type": "integer"},
            float: {"type": "number"}, type(None): {"type": "null"}, object: {}}


def typed_dict_schema(cls: type, *, plain_is_required: bool) -> dict:
    """``cls`` as a strict JSON Schema.  Runware's generated classes are ``total=False`` and mark optional
    keys ``NotRequired``: there a plain key is a required one (``plain_is_required=True``)."""
    hints = typing.get_type_hints(cls, include_extras=True)
    properties, required = {}, []
    for name, hint in hints.items():
        origin = typing.get_origin(hint)
        if origin is typing.Required or (plain_is_required and origin is not typing.NotRequired):
            required.append(name)
        inner = typing.get_args(hint)[0] if origin in (typing.Required, typing.NotRequired) else hint
        properties[name] = type_schema(inner)
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def type_schema(hint: Any) -> dict:
    if hint in _SCALARS:
        return dict(_SCALARS[hint])
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [type_schema(arg) for arg in args]}
    if origin is dict:
        return {"type": "object"}
    if origin in (list, tuple) or (origin is not None and getattr(origin, "__name__", "") in ("Sequence",)):
        return {"type": "array"}
    return {}  # a file, a protocol, anything else the wire cannot show: not checked here


def check(value: dict, schema: dict, what: str) -> None:
    """AssertionError naming ``what`` and the failing rule when ``value`` does not match ``schema``."""
    import fastjsonschema

    try:
        fastjsonschema.compile(schema)(value)
    except fastjsonschema.JsonSchemaException as exc:
        raise AssertionError(f"{what}: {exc.message}") from None
