"""The one way to write a test judge: a class in this module, loaded into a pytester run by a two-line conftest.

A pytester test writes ``pytester.makeconftest(judges_conftest("CoinJudge", ...))``, or appends it to a
:func:`fake_models.models_conftest` text.  The conftest it gets puts this folder on sys.path (so a run in a
subprocess or an xdist worker finds it too), imports :func:`plugin` and binds what it returns: the judge class as
``FakeJudge`` and the make_judge hook, which makes that judge when ``--judge`` names it (the class's ``name``).
No judge's source is pasted into a string.

The keywords of :func:`judges_conftest` set the class attributes of the judge named (each judge says which it
has).  Judges import only the plugin's public names.
"""

from __future__ import annotations

import os
import random
import threading
from typing import Any

import pytest
from fake_models import conftest_head

from pytest_hypeedit import Judge, JudgeError, JudgeRequest, Verdict


class CoinJudge(Judge):
    """Says PASS with chance ``pass_chance`` on every call, whatever the image (a seeded coin per judge), costs a
    cent, and writes each call to ``calls.log`` in the run's folder."""

    name = "coinjudge"
    routes = ("coin-judge",)
    needs_images = False
    pass_chance = 0.8

    def __init__(self) -> None:
        self.rng, self.lock = random.Random(20261123), threading.Lock()

    def worst_case_cost(self, request: JudgeRequest) -> float:  # the interface session "guard" adds to every judge
        return 0.01

    def judge(self, request: JudgeRequest) -> Verdict:
        with self.lock:
            passed = self.rng.random() < self.pass_chance
            with open("calls.log", "a") as log:
                log.write(f"{request.task.task_id} {request.repeat}\n")
        return Verdict(passed=passed, reasoning="a coin", judge="coinjudge", cost=0.01)


class PixelJudge(Judge):
    """PASS for a candidate whose first pixel is red (fake_models.ModelIdProvider), free."""

    name = "pixeljudge"

    def judge(self, request: JudgeRequest) -> Verdict:
        from PIL import Image

        with Image.open(request.candidate) as image:
            red = image.convert("RGB").getpixel((0, 0))[0] > 128
        return Verdict(passed=red, reasoning="red" if red else "not red", judge="pixeljudge", cost=0.0)


class SlowJudge(Judge):
    """Asks the loopback server at $SLOW_URL for each verdict, at ``/judge-route-of-<model>`` (the judge's route is
    one, the path names the model: a test can hold one model's verdicts); PASS on even repeats."""

    name = "slowjudge"
    routes = ("judge-route",)

    def judge(self, request: JudgeRequest) -> Verdict:
        import httpx

        httpx.get(os.environ["SLOW_URL"] + "/judge-route-of-" + request.model, timeout=300).raise_for_status()
        return Verdict(passed=request.repeat % 2 == 0, reasoning="slow verdict", judge="slowjudge", cost=0.001)


class HostileJudge(Judge):
    """A paid judge (its verdicts are reused) whose reasoning is ``hostile`` and huge when $HOSTILE is set."""

    name = "hostilejudge"
    hostile = ""

    def judge(self, request: JudgeRequest) -> Verdict:
        if os.environ.get("HOSTILE"):
            return Verdict(passed=False, reasoning=self.hostile + "r" * 2_000_000, judge=self.id)
        return Verdict(passed=False, reasoning="plain reasoning", judge=self.id)


class HtmlJudge(Judge):
    """Fails odd repeats with a reasoning full of HTML, to prove the report escapes it."""

    name = "htmljudge"

    def judge(self, request: JudgeRequest) -> Verdict:
        passed = request.repeat % 2 == 0
        reasoning = '<img src=x onerror="alert(2)"><b>not bold</b> & the car is still there'
        votes = [{"judge": "juror<1>", "verdict": "PASS" if passed else "FAIL", "reasoning": "<i>vote</i>"}]
        return Verdict(passed=passed, reasoning=reasoning, judge="htmljudge", votes=votes)


class PanelJudge(Judge):
    """A judge whose reasoning is full of HTML and whose votes carry ``note`` on a FAIL (like the labels judge's).

    identity passes repeats 2 and 4 of every task; flaky passes only task-02 and task-03 but for repeat 3 (the
    models differ); the old release ($HX_RELEASE=old) of flaky passed every repeat of task-03 (so task-03 got
    worse, and only it)."""

    name = "paneljudge"
    note = ""

    @staticmethod
    def passes(task: str, model: str, repeat: int) -> bool:
        if model == "identity":
            return repeat % 2 == 0
        old = os.environ.get("HX_RELEASE") == "old"
        return task in ("task-02", "task-03") and (repeat != 3 or (old and task == "task-03"))

    def judge(self, request: JudgeRequest) -> Verdict:
        passed = self.passes(request.task.task_id, request.model, request.repeat)
        votes = [{"judge": "rater-a", "verdict": "PASS" if passed else "FAIL", "note": None if passed else self.note}]
        return Verdict(passed=passed, reasoning='<img src=x onerror="alert(2)"> the car is still there',
                       judge="paneljudge", votes=votes)


class EchoJudge(Judge):
    """A plugin's own judge that quotes its key ($ECHO_JUDGE_KEY) in an error (task-00) and in its reasoning
    (the other tasks)."""

    name = "echojudge"
    key_env = ("ECHO_JUDGE_KEY",)

    def judge(self, request: JudgeRequest) -> Verdict:
        key = os.environ["ECHO_JUDGE_KEY"]
        if request.task.task_id == "task-00":
            raise JudgeError(f"quota of {key} used up", retryable=False)
        return Verdict(passed=False, reasoning=f"FAIL, billed to {key}", judge="echojudge")


class ControlJudge(Judge):
    """A paid judge (a cent a call, each written to calls.log) that sees the images: it PASSes a candidate whose
    bytes are the task's first reference on the tasks whose number is a multiple of ``unchanged_every`` (a known
    rate of false PASS on unchanged references), FAILs every other image of the task's own pixels and the positive
    controls (candidates people passed) on the tasks whose number is a multiple of ``human_fail_every``, and PASSes
    the models' candidates on odd repeats; each verdict names the served version $CONTROL_JUDGE_VERSION (else
    ``version``)."""

    name = "controljudge"
    routes = ("control-judge",)
    needs_images = True
    unchanged_every = 4
    human_fail_every = 3
    version = "control-judge-v1"

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def worst_case_cost(self, request: JudgeRequest) -> float:
        return 0.01

    def judge(self, request: JudgeRequest) -> Verdict:
        with self.lock, open("calls.log", "a") as log:
            log.write(f"{request.model} {request.task.task_id} {request.repeat}\n")
        number = int(request.task.task_id.rsplit("-", 1)[-1])
        if request.model == "human_pass":  # a candidate people passed: FAILed on every human_fail_every-th task
            passed, why = number % self.human_fail_every != 0, "a candidate people passed"
        elif request.model in ("flat", "other_task", "mirrored"):  # (a mirrored flat colour is the reference's bytes)
            passed, why = False, "not the edit asked for"
        elif request.candidate.read_bytes() == request.references[0].read_bytes():
            passed, why = number % self.unchanged_every == 0, "the reference itself"
        else:
            passed, why = request.repeat % 2 == 1, "a model's candidate"
        return Verdict(passed=passed, reasoning=why, judge=self.id, cost=0.01,
                       extra={"model_version": os.environ.get("CONTROL_JUDGE_VERSION", self.version)})


JUDGES: dict[str, type[Judge]] = {kind.__name__: kind for kind in (
    CoinJudge, PixelJudge, SlowJudge, HostileJudge, HtmlJudge, PanelJudge, EchoJudge, ControlJudge)}


def plugin(judge: str, **knobs: Any):
    """(the judge class, the make_judge hook that makes it when ``--judge`` names it)."""
    base = JUDGES[judge]
    unknown = {name for name in knobs if name.startswith("_") or not hasattr(base, name)}
    assert not unknown, f"fake_judges.plugin: no knob {sorted(unknown)}"
    judge_class = type(judge, (base,), knobs)

    @pytest.hookimpl(optionalhook=True)
    def pytest_hypeedit_make_judge(config, name, argument):
        return judge_class() if name == judge_class.name else None

    return judge_class, pytest_hypeedit_make_judge


def judges_conftest(judge: str, **knobs: Any) -> str:
    """The conftest text that loads ``judge`` (see the module's docstring); it may follow a models_conftest text."""
    return (conftest_head() + "from fake_judges import plugin as _judge_plugin\n"
            f"FakeJudge, pytest_hypeedit_make_judge = _judge_plugin({judge!r}, **{knobs!r})\n")
