"""pytest glue of the human labels beside a run: ``record.human`` on every record, and ``--calibrate``.

Registered on the controller only (plugin.py).  ``record.human`` is filled from the panel of ``--calibrate``,
else of ``--agreement``, else of a labels judge, as each record arrives (before the report's own hook reads it);
``--calibrate`` adds the calibrated figures to every results row (report/calibrated_rows.py) and prints them; the
judge's stability (``--judge-stability``, engine/stability.py) is printed here too.  ``read_labels_option`` reads
the labels of ``--calibrate`` or ``--agreement`` for their plugins and for ``--estimate`` (glue/control_run.py),
keyed for the release each model of the run measures (``for_this_run``): another release's labels never count;
``judge_for_this_run`` keys a labels judge's panel the same way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol, TypeVar

import pytest

from ..engine.release import release_of
from ..errors import HypeEditError
from ..judges.labels_judge import LabelsJudge
from ..options import settings_of
from ..report.calibrated_rows import HumanSample, Settings, add_calibration, human_of, stability_lines, terminal_lines
from ..tasks import folder_parts, is_plain_name
from .terminal_layout import write_folded

if TYPE_CHECKING:
    from ..config import RunConfig
    from ..engine.records import Record
    from ..judges import Judge
    from ..labels import LabelKey, Panel
    from ..report.results_model import Results
    from ..sample_design import Design

PLUGIN_NAME = "hypeedit-calibration"


class Labelled(Protocol):
    """What a labels option reads (``HumanSample``, ``AgreementCheck``): a panel."""

    panel: Panel


Read = TypeVar("Read", bound="Labelled | None")


class HumanLabelsPlugin:
    def __init__(self, config: pytest.Config, sample: HumanSample | None):
        self.config, self.sample = config, sample
        self._panel: Panel | None = None
        self._looked = False
        self.results: Results | None = None

    def panel(self) -> Panel | None:
        """The panel whose labels go into ``record.human``: the calibration's, the agreement's, the judge's."""
        if not self._looked:
            self._looked = True
            self._panel = self.sample.panel if self.sample else _agreement_panel(self.config) or _judge_panel(self.config)
        return self._panel

    @pytest.hookimpl(tryfirst=True)  # before the report's own hook reads the record
    def pytest_hypeedit_record(self, config: pytest.Config, record: Record) -> None:
        record.human = human_of(self.panel(), record)

    def add_to(self, results: Results) -> None:
        self.results = results
        if self.sample is None:
            return
        from .stash import SESSION_KEY

        config = self.config
        ci = config.pluginmanager.get_plugin("hypeedit-ci")
        read = settings_of(config)
        settings = Settings(config.stash[SESSION_KEY].run.metric_settings, read.bootstrap, read.bootstrap_seed)
        records = config.stash[SESSION_KEY].records.values()
        add_calibration(results, records, self.sample, settings, getattr(ci, "baseline", None))

    def write_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.results:
            return
        if self.sample is not None:
            terminalreporter.write_sep("=", "calibrated with a human sample (--calibrate)")
            every = self.config.get_verbosity() > 0  # -v: every calibrated interval, else the pass rate's
            write_folded(terminalreporter, terminal_lines(self.results, every_interval=every))
        stability = stability_lines(self.results)
        if stability:
            terminalreporter.write_sep("=", "judge stability (--judge-stability)")
            write_folded(terminalreporter, stability)


def _agreement_panel(config: pytest.Config) -> Panel | None:
    plugin = config.pluginmanager.get_plugin("hypeedit-agreement")
    panel: Panel | None = plugin.check.panel if plugin is not None else None
    return panel


def _judge_panel(config: pytest.Config) -> Panel | None:
    """The panel of a labels judge, alone or as one juror of a majority."""
    from .stash import RUNNER_KEY

    runner = config.stash.get(RUNNER_KEY, None)
    judge = runner.made_judge if runner is not None else None  # built at start-up on the controller; never here
    for juror in getattr(judge, "jurors", [judge]):
        if getattr(juror, "panel", None) is not None:
            panel: Panel = juror.panel
            return panel
    return None


def register_calibration(config: pytest.Config, run: RunConfig) -> HumanLabelsPlugin:
    """Read the human sample now, so a bad labels or design file stops the run before anything is paid for."""
    sample = read_labels_option(HumanSample.from_option, settings_of(config).calibrate, run)
    plugin = HumanLabelsPlugin(config, sample)
    config.pluginmanager.register(plugin, PLUGIN_NAME)
    return plugin


def read_labels_option(read: Callable[[str | None, Iterable[str]], Read], value: str | None, run: RunConfig) -> Read:
    """What ``read`` (``HumanSample.from_option``, ``AgreementCheck.from_option``) makes of a labels option's
    ``value`` for the run's models, keyed for the releases the run measures (``for_this_run``): a bad labels or
    design file is a usage error, before anything is paid for."""
    try:
        found = read(value, tuple(run.registry.models))
    except HypeEditError as exc:
        raise pytest.UsageError(str(exc)) from None
    if found is not None:
        found.panel = for_this_run(found.panel, run)
        if isinstance(found, HumanSample):  # its design's strata named as its labels are, so each finds its own
            found.designs = [design_for_this_run(design, run) for design in found.designs]
    return found


# --------------------------------------------------------------------------- whose labels: the run's release's


def for_this_run(panel: Panel, run: RunConfig) -> Panel:
    """The panel with each label keyed by the model whose record it must meet: the labels of the release this
    run measures under the model's name, every other release's under a name no record carries.

    A labels file names a release by the folder hypeedit-review found it in (review/catalog.py): ``<model>``,
    the release that wrote there first, or ``<model>@<release id>``, a release bought aside (engine/release.py);
    a record names only the model.  So ``<model>@<id>`` is this run's when the id is its release's, and
    ``<model>`` is this run's when the run's candidates of that task's split are in the model folder; the
    model folder's labels are renamed ``<split>/<model>`` (no model's name: a ``/`` is in no folder name) when
    the run measures another release, whose verdicts must not be mixed with this one's."""
    rename = _Renaming(run)
    return dataclasses.replace(panel, raters=[dataclasses.replace(
        rater, verdicts={rename.key(key): verdict for key, verdict in rater.verdicts.items()},
        notes={rename.key(key): note for key, note in rater.notes.items()},
        models=tuple(sorted({rename.name(name, None) for name in rater.models}))) for rater in panel.raters])


class _Renaming:
    """A label's model name as the run's records carry it (see ``for_this_run``)."""

    def __init__(self, run: RunConfig):
        self.release_ids = {spec.name: release_of(spec).id for spec in run.models}
        self.split_of = {task.task_id: split.name for split in run.splits for task in split.tasks}
        self.folders = run.folders

    def key(self, key: LabelKey) -> LabelKey:
        task_id, name, repeat = key
        return task_id, self.name(name, self.split_of.get(task_id)), repeat

    def name(self, name: str, split: str | None) -> str:
        parts = folder_parts(name)
        if parts is None or parts[0] not in self.release_ids:
            return name  # no model of this run: no record meets it whatever its name
        model, release_id = parts
        if release_id is not None:
            return model if release_id == self.release_ids[model] else name
        if split is None or self.folders.get((split, model), model) == model:
            return name  # the model folder holds this run's release (or the label is of no task of the run)
        return f"{split}/{model}"


def judge_for_this_run(judge: Judge, run: RunConfig) -> Judge:
    """``judge`` with each labels juror (``--judge labels:...``, alone or in a majority) looking its verdicts up in
    its panel keyed by ``for_this_run``: a verdict belongs to the bytes people looked at, so a candidate of a
    release nobody labelled is not labelled (the labels judge's error), never judged with the verdict people gave
    another release's image of the same task and repeat.  ``record.human`` reads this panel when no labels option
    is given.  Keyed from the panel as read, so every process that makes the judge keys it alike."""
    for juror in getattr(judge, "jurors", [judge]):
        if isinstance(juror, LabelsJudge):
            juror.panel = for_this_run(juror.as_read, run)
    return judge


def design_for_this_run(design: Design, run: RunConfig) -> Design:
    """A sampling design's strata named as ``for_this_run`` names the labels: the stratum of the release this run
    measures under the model's name, so the row finds the design its labels were drawn with, and no other
    release's stratum (drawn from other candidates) weighs them."""
    rename = _Renaming(run)
    return dataclasses.replace(design, strata=tuple(
        dataclasses.replace(stratum, model=rename.name(stratum.model, stratum.split)) for stratum in design.strata))


def label_folder(name: str, split: str, run: RunConfig) -> str | None:
    """The folder under ``<outputs>/<split>`` holding the candidate of a label keyed by ``for_this_run``: the
    run's release's folder for a model of the run, the model folder for a label renamed ``<split>/<model>``,
    ``<model>@<id>`` for another release bought aside; None when it names no folder of ``split``.  A candidate
    people passed is a positive control whatever release made it (glue/control_run.py), so each is looked up
    where it is, and never by a name with a ``/`` in it."""
    if name in {spec.name for spec in run.models}:
        return run.folders.get((split, name), name)
    head, separator, model = name.partition("/")
    if separator:
        return model if head == split and is_plain_name(model) else None
    return name if folder_parts(name) is not None else None
