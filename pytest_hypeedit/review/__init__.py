"""Anonymous human review of benchmark candidates in the browser (``hypeedit-review``).

See ``python -m pytest_hypeedit.review --help``.  The labels it writes are the
upstream human-review tool's schema version 2 (docs/reference/formats.md, "Human labels"), one
file per rater, read back by the labels judge and by ``--agreement``.
"""
