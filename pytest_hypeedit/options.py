"""The command-line options, in one group.

Kept apart from the hooks and free of heavy imports: every pytest process
(each xdist worker too) reads it, benchmark run or not.
"""

from __future__ import annotations


def add_options(parser) -> None:
    """Every option of the plugin (pytest --help lists them under one group)."""
    group = parser.getgroup("hypeedit", "HYPE-EDIT-1 image-editing benchmark")
    add = group.addoption
    add("--model", action="append", dest="hypeedit_models", default=[], metavar="NAME",
        help="run the benchmark on this model (repeatable); see models.yaml")
    add("--tasks", action="append", dest="hypeedit_tasks", default=[], metavar="[NAME=]PATH|URL",
        help="task file of a split (repeatable; default: the public split, downloaded at its pinned commit)")
    add("--images-base", dest="hypeedit_images_base", metavar="DIR|URL",
        help="where reference images live: <base>/<task_id>/<file> (default: the split's own, else upstream CDN)")
    add("--repeats", dest="hypeedit_repeats", type=int, default=10, metavar="N",
        help="candidates per task and model (default 10)")
    add("--outputs", dest="hypeedit_outputs", metavar="DIR",
        help="where candidates and records go (default ./hypeedit-outputs)")
    add("--results", dest="hypeedit_results", metavar="PATH",
        help="results JSON (default <outputs>/results.json; a Markdown table is written beside it)")
    add("--judge", dest="hypeedit_judge", metavar="SPEC",
        help="judge: gemini-3-flash (default), openai:MODEL, labels:PATH[,PATH...], or several for a majority")
    add("--judge-base-url", dest="hypeedit_judge_base_url", metavar="URL",
        help="chat-completions server of an openai:MODEL judge, e.g. http://localhost:8000/v1 (vLLM, Ollama)")
    add("--rejudge", dest="hypeedit_rejudge", action="store_true",
        help="judge again candidates whose verdict is already on disk")
    add("--models-file", action="append", dest="hypeedit_models_files", default=[], metavar="PATH",
        help="YAML file of extra models or overrides, same shape as models.yaml (repeatable)")
    add("--cache-dir", dest="hypeedit_cache_dir", metavar="DIR",
        help="cache of task files and reference images (default: the user cache dir, or $HYPEEDIT_CACHE_DIR)")
    add("--retry-cap", dest="hypeedit_retry_cap", type=int, default=4, metavar="A",
        help="attempts a user makes at most, for expected attempts and effective cost (default 4)")
    add("--review-seconds", dest="hypeedit_review_seconds", type=float, default=20.0, metavar="S",
        help="human review time per candidate, for effective cost (default 20)")
    add("--review-rate", dest="hypeedit_review_rate", type=float, default=50.0, metavar="USD",
        help="reviewer cost per hour, for effective cost (default 50)")
    add("--rate-limit", action="append", dest="hypeedit_rate_limits", default=[], metavar="ROUTE=RPM[/INFLIGHT]",
        help="requests per minute and in flight for a route, across all workers (repeatable; overrides models.yaml)")
    add("--budget", dest="hypeedit_budget", type=float, default=None, metavar="USD",
        help="hard cap on money spent by this run across all workers")
    add("--concurrency", dest="hypeedit_concurrency", default=None, metavar="N|auto",
        help="candidates in progress at once (generating or being judged) across the whole run, -n workers "
             "included (default 32); each route's own limits still cap it. 'auto': each route's calls in "
             "flight grow while the provider keeps up and are cut back on 429")
    add("--html-views", dest="hypeedit_html_views", type=int, default=1024, metavar="PX",
        help="with --html: the report folder keeps a full-size view of every failure, at most PX pixels on "
             "its long side (default 1024); 0 keeps none (thumbnails only)")
    add_ci_options(group)
    add("--agreement", dest="hypeedit_agreement", metavar="labels:PATH[,PATH...]",
        help="compare the judge with a human panel (rater files or a folder of them): agreement, "
             "Cohen's kappa, false-fail/false-pass by task type; into the results JSON under 'agreement'")


def add_ci_options(group) -> None:
    """What CI reads: gates, statistics, a baseline."""
    add = group.addoption
    add("--gate", action="append", dest="hypeedit_gates", default=[], metavar="[MODEL[@SPLIT]:]METRIC OP VALUE",
        help="a metric gate, e.g. 'pass_rate>=0.6', 'seedream-4.5:pass_at_4>=0.65', 'pass_rate>=baseline-0.02' "
             "(repeatable). With gates, the exit status is 0 when all hold (even if items failed), 1 otherwise")
    add("--allow-incomplete", dest="hypeedit_allow_incomplete", action="store_true",
        help="let gates pass on a run with errors, budget skips or missing verdicts (default: they fail)")
    add("--bootstrap", dest="hypeedit_bootstrap", type=int, default=1000, metavar="N",
        help="bootstrap resamples over tasks for the 95%% intervals of every metric (default 1000; 0 disables)")
    add("--bootstrap-seed", dest="hypeedit_bootstrap_seed", type=int, default=0, metavar="SEED",
        help="seed of the bootstrap, so intervals are reproducible (default 0)")
    add("--baseline", dest="hypeedit_baseline", metavar="RESULTS.json",
        help="results JSON of an earlier release on the same tasks: paired per-task comparison, and gates "
             "like 'pass_rate>=baseline-0.02'")
