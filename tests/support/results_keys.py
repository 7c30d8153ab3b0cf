"""What a results object holds that its typed model (report/results_model.py) does not declare: walked key by key
against the TypedDicts, so that a key a writer renames (or adds without typing it) is named with its path.

``model_problems(value, Results)`` lists, as ``path: what``, every key the model does not declare, every key it
requires that is missing, and every plain value of another kind than declared (text where a count is typed).  An
empty list: the object is the model's, as far as the types say."""

from __future__ import annotations

import types
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

from pytest_hypeedit.judges.versions import JudgeVersions
from pytest_hypeedit.labels import VoteEntry
from pytest_hypeedit.report import results_model

PLAIN = {str: (str,), int: (int,), float: (int, float), bool: (bool,)}


def hints(model: Any) -> dict[str, Any]:
    """A TypedDict's keys and their types, its annotations resolved in the model's module."""
    # the model imports these for the type checker only: given here, beside the module's own names
    return get_type_hints(model, vars(results_model), {"JudgeVersions": JudgeVersions, "VoteEntry": VoteEntry})


def model_problems(value: Any, model: Any, path: str = "") -> list[str]:
    if model is Any or model is object:
        return []
    if is_typeddict(model):
        return _typed_dict_problems(value, model, path)
    origin, args = get_origin(model), get_args(model)
    if origin in (Union, types.UnionType):
        return _union_problems(value, args, path)
    if origin is Literal:
        return [] if value in args else [f"{path}: {value!r} is none of {args}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{path}: a {type(value).__name__}, not a list"]
        return [p for index, item in enumerate(value) for p in model_problems(item, args[0], f"{path}[{index}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{path}: a {type(value).__name__}, not an object"]
        return [p for key, item in value.items() for p in model_problems(item, args[1], f"{path}.{key}")]
    if model is type(None):
        return [] if value is None else [f"{path}: {value!r}, not null"]
    if model in PLAIN:
        kinds = PLAIN[model]
        fits = isinstance(value, kinds) and (model is bool or not isinstance(value, bool))
        return [] if fits else [f"{path}: {value!r} is not a {model.__name__}"]
    raise TypeError(f"{path}: no rule for the type {model!r}")


def _typed_dict_problems(value: Any, model: Any, path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: a {type(value).__name__}, not an object ({model.__name__})"]
    declared = hints(model)
    found = [f"{path}.{key}: not a key of {model.__name__}" for key in value if key not in declared]
    found += [f"{path}.{key}: missing, and {model.__name__} requires it" for key in sorted(model.__required_keys__)
              if key not in value]
    for key, item in value.items():
        if key in declared:
            found += model_problems(item, declared[key], f"{path}.{key}")
    return found


def _union_problems(value: Any, arms: tuple[Any, ...], path: str) -> list[str]:
    tried = [model_problems(value, arm, path) for arm in arms]
    if any(not problems for problems in tried):
        return []
    return min(tried, key=len)  # the arm it comes closest to: what is wrong with it there
