"""A pytest plugin for runs in a subprocess (``-p stub_pins_plugin``): the upstream judge's pins point at a
synthetic script (tests/support/upstream_stub.py), so a command run as written can judge offline.

``HYPEEDIT_TEST_STUB_PINS`` is ``<script sha256>:<prompt sha256>``; ``HYPEEDIT_JUDGE_SCRIPT_URL`` names
the stub file.  Tests only: the plugin never loads unless a test asks for it.
"""

import os
from dataclasses import replace

from pytest_hypeedit.judges import upstream

_script, _prompt = os.environ["HYPEEDIT_TEST_STUB_PINS"].split(":")
upstream.PINNED = replace(upstream.PINNED, script_sha256=_script, prompt_sha256=_prompt)
