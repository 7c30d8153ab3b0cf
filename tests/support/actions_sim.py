"""A small local stand-in for a GitHub Actions runner, to run an example workflow's steps as written.

Every ``run:`` step is run with bash as GitHub runs it (``bash --noprofile --norc -eo pipefail``) in
a fresh workspace per job, after substituting the ``${{ ... }}`` expressions the workflow uses
(matrix, secrets, github.run_id / run_attempt, step outputs; any other is an error, so the workflow
cannot grow an expression this runner silently ignores).  Only what needs GitHub is simulated:

- ``actions/checkout``: the workspace starts as a copy of the repository;
- ``actions/setup-python`` and a step that only ``pip install``s the plugin by name (``pytest-hypeedit``
  from a git URL or a wheel, as a team's repository would): this venv, which has it;
- ``actions/cache/restore`` / ``save``: a store of folders by key; restore takes the exact key, else
  the newest entry whose key starts with a ``restore-keys`` prefix; a saved key is never overwritten;
- ``actions/upload-artifact`` / ``download-artifact``: folders by artifact name, per workflow run;
  download by ``pattern`` with ``merge-multiple`` (or one folder per artifact without it);
- the event: ``github.event_name``, ``github.ref_type`` and ``github.ref_name`` (and the runner's variables
  GITHUB_EVENT_NAME, GITHUB_REF_TYPE, GITHUB_REF_NAME, GITHUB_SHA) as ``new_run`` sets them;
- a ``run:`` step's outputs: the ``name=value`` lines it appends to ``$GITHUB_OUTPUT``.

A step that fails stops its job; later steps run only under ``if: always()``.  A step's ``if:`` may also join
with ``&&`` the terms ``success()``, ``always()`` and ``github.X == 'text'`` (or ``!=``).
"""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
BASH = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c"]


@dataclass
class StepResult:
    name: str
    returncode: int
    output: str = ""


@dataclass
class JobResult:
    job: str
    matrix: dict[str, Any]
    steps: list[StepResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(step.returncode == 0 for step in self.steps)

    def log(self) -> str:
        return "\n".join(f"--- {s.name} (exit {s.returncode})\n{s.output}" for s in self.steps)


class Runner:
    """Runs jobs of one workflow file; the cache store outlives workflow runs, artifacts do not."""

    def __init__(self, workflow: Path, repo: Path, root: Path, env: dict[str, str], secrets: dict[str, str]):
        self.workflow = yaml.safe_load(workflow.read_text(encoding="utf-8"))
        self.repo, self.root, self.env, self.secrets = repo, root, env, secrets
        self.cache: dict[str, Path] = {}  # key -> folder, in the order saved
        self.artifacts: dict[str, Path] = {}
        self.run_id = 0
        self.event = {"event_name": "schedule", "ref_type": "branch", "ref_name": "main", "sha": "0" * 40}
        self._workspaces = 0

    def new_run(self, event: str = "schedule", tag: str | None = None, sha: str | None = None) -> None:
        """A new workflow run: a new run id, no artifacts, the event that started it (a ``tag`` pushed: a
        push of that tag); the cache stays."""
        self.run_id += 1
        self.artifacts = {}
        self.event = {"event_name": "push" if tag else event, "ref_type": "tag" if tag else "branch",
                      "ref_name": tag or "main", "sha": sha or f"{self.run_id:040x}"}

    def matrix(self, job: str) -> list[dict[str, Any]]:
        spec = self.workflow["jobs"][job].get("strategy", {}).get("matrix", {})
        keys = [k for k in spec if k not in ("include", "exclude")]
        assert len(keys) <= 1 and "include" not in spec, "the simulator runs a one-dimensional matrix"
        return [{keys[0]: value} for value in spec[keys[0]]] if keys else [{}]

    def run_job(self, job: str, matrix: dict[str, Any] | None = None) -> JobResult:
        spec = self.workflow["jobs"][job]
        assert spec.get("if") in (None, "${{ !cancelled() }}"), f"job {job}: unknown condition {spec.get('if')!r}"
        context = {"matrix": matrix or {}, "steps": {}}
        workspace = self._fresh_workspace()
        env = {**self.env, **{k: self.substitute(str(v), context) for k, v in (spec.get("env") or {}).items()}}
        env.update(HOME=str(workspace.parent / "home"), GITHUB_WORKSPACE=str(workspace), CI="true",
                   GITHUB_STEP_SUMMARY=str(workspace.parent / "summary.md"), GITHUB_ACTIONS="true",
                   **{f"GITHUB_{name.upper()}": value for name, value in self.event.items()})
        result = JobResult(job, matrix or {})
        for index, step in enumerate(spec["steps"]):
            if not self._runs(str(step.get("if", "success()")), result.ok):
                continue
            result.steps.append(self._step(step, index, context, workspace, env))
        return result

    def _runs(self, condition: str, ok: bool) -> bool:
        """A step's ``if:`` (see the module docstring); anything else is an error, never silently true."""
        terms = [term.strip() for term in EXPRESSION.sub(lambda m: m[1], condition).split("&&")]
        verdicts = [ok or "always()" in terms]
        for term in terms:
            if term in ("success()", "always()"):
                continue
            match = re.fullmatch(r"github\.(\w+)\s*(==|!=)\s*'([^']*)'", term)
            assert match, f"the simulator does not know the condition {condition!r}"
            verdicts.append((self.event[match[1]] == match[3]) == (match[2] == "=="))
        return all(verdicts)

    # ------------------------------------------------------------------ steps

    def _step(self, step: dict, index: int, context: dict, workspace: Path, env: dict) -> StepResult:
        name = self.substitute(str(step.get("name") or step.get("uses") or f"step {index + 1}"), context)
        if "run" in step:
            outputs = workspace.parent / f"output-{index}"
            outputs.write_text("")
            done = self._run(name, self.substitute(step["run"], context), workspace, {**env, "GITHUB_OUTPUT": str(outputs)})
            if step.get("id"):
                lines = outputs.read_text().splitlines()
                context["steps"][step["id"]] = dict(line.split("=", 1) for line in lines if "=" in line)
            return done
        action = step["uses"].split("@")[0]
        inputs = {k: self.substitute(_input(v), context) for k, v in (step.get("with") or {}).items()}
        outputs = self._action(action, inputs, workspace)
        if step.get("id"):
            context["steps"][step["id"]] = outputs
        return StepResult(name, 0, f"{action}: {outputs}")

    def _run(self, name: str, script: str, workspace: Path, env: dict) -> StepResult:
        if re.fullmatch(r"python -m pip install [^;&|]*", script.strip()):
            # A team's checkout holds no plugin to install with "pip install .": the step must name it.
            assert re.search(r"pytest[-_]hypeedit", script), f"step {name!r} does not install pytest-hypeedit: {script}"
            return StepResult(name, 0, "simulated: the package is installed in this venv")
        done = subprocess.run([*BASH, script], cwd=workspace, env=env, capture_output=True, text=True, timeout=300)
        return StepResult(name, done.returncode, done.stdout + done.stderr)

    def _action(self, action: str, inputs: dict[str, str], workspace: Path) -> dict[str, str]:
        handlers = {
            "actions/checkout": lambda: self._checkout(workspace),
            "actions/setup-python": dict,
            "actions/cache/restore": lambda: self._restore(inputs, workspace),
            "actions/cache/save": lambda: self._save(inputs, workspace),
            "actions/upload-artifact": lambda: self._upload(inputs, workspace),
            "actions/download-artifact": lambda: self._download(inputs, workspace),
        }
        assert action in handlers, f"the simulator does not know the action {action}"
        return handlers[action]()

    def _checkout(self, workspace: Path) -> dict[str, str]:
        shutil.copytree(self.repo, workspace, symlinks=True, dirs_exist_ok=True)
        return {}

    def _restore(self, inputs: dict[str, str], workspace: Path) -> dict[str, str]:
        key, prefixes = inputs["key"], inputs.get("restore-keys", "").split()
        matched = key if key in self.cache else next(
            (k for prefix in prefixes for k in reversed(list(self.cache)) if k.startswith(prefix)), "")
        if matched:
            shutil.copytree(self.cache[matched], workspace / inputs["path"], dirs_exist_ok=True)
        return {"cache-primary-key": key, "cache-hit": str(matched == key).lower(), "cache-matched-key": matched}

    def _save(self, inputs: dict[str, str], workspace: Path) -> dict[str, str]:
        key, source = inputs["key"], workspace / inputs["path"]
        if key in self.cache or not source.exists():  # GitHub warns and saves nothing
            return {}
        self.cache[key] = shutil.copytree(source, self.root / "cache" / f"{len(self.cache):03d}")
        return {}

    def _upload(self, inputs: dict[str, str], workspace: Path) -> dict[str, str]:
        name = inputs["name"]
        assert name not in self.artifacts, f"artifact {name} uploaded twice in one run"
        store = self.root / "artifacts" / f"run{self.run_id}" / name
        self.artifacts[name] = shutil.copytree(workspace / inputs["path"], store)
        return {}

    def _download(self, inputs: dict[str, str], workspace: Path) -> dict[str, str]:
        names = [n for n in self.artifacts if fnmatch.fnmatchcase(n, inputs.get("pattern", "*"))]
        merge = inputs.get("merge-multiple") == "true" or len(names) == 1
        for name in names:
            dest = workspace / inputs["path"] / ("" if merge else name)
            shutil.copytree(self.artifacts[name], dest, dirs_exist_ok=True)
        return {}

    # ------------------------------------------------------------------ expressions

    def substitute(self, text: str, context: dict) -> str:
        return EXPRESSION.sub(lambda match: self._value(match[1], context), text)

    def _value(self, expression: str, context: dict) -> str:
        parts = expression.split(".")
        if parts[0] == "matrix":
            return str(context["matrix"][parts[1]])
        if parts[0] == "secrets":
            return self.secrets.get(parts[1], "")  # GitHub gives an unset secret as an empty string
        if expression == "github.run_id":
            return str(1000 + self.run_id)
        if expression == "github.run_attempt":
            return "1"
        if parts[0] == "github" and len(parts) == 2 and parts[1] in self.event:
            return self.event[parts[1]]
        if parts[0] == "steps" and len(parts) == 4 and parts[2] == "outputs":
            return context["steps"][parts[1]][parts[3]]
        raise AssertionError(f"the simulator does not know the expression ${{{{ {expression} }}}}")

    def _fresh_workspace(self) -> Path:
        """A new runner: an empty workspace and an empty HOME (so the default cache folder is empty too)."""
        self._workspaces += 1
        workspace = self.root / "runners" / f"job{self._workspaces}" / "workspace"
        (workspace.parent / "home").mkdir(parents=True)
        workspace.mkdir()
        return workspace


def _input(value: Any) -> str:
    """An action's input as the runner passes it: a string (YAML's true is "true")."""
    return str(value).lower() if isinstance(value, bool) else str(value)
