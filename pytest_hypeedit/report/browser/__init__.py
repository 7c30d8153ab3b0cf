"""The failure browser of the HTML report: one row per task and model, every repeat a thumbnail.

- ``data.py``: the run's records and built images -> the JSON the page renders from (pure).
- ``page.py``: that JSON, the style sheet and the script -> the HTML that goes into pytest-html's
  summary (pure).
- ``browser.css``, ``browser.js``: the front end, shipped as package data and inlined into the page,
  so the report folder has nothing of ours to lose but its images.

Rows are drawn by the script from the JSON a few tasks at a time as the reader scrolls: 7,000
candidates are 100 task cards and 7,000 thumbnails, too many DOM nodes to lay out at load.
"""
