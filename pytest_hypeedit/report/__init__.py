"""What a run shows: the results JSON, the terminal table, the HTML report, the Markdown leaderboard.

Built from records and the pure figures of analysis/; glue/ decides when each is written or printed (the HTML
report's pytest side, riding on pytest-html's hooks, is glue/html_report.py: nothing here imports pytest or glue/).  A feature that spans layers
keeps a distinct file name in each: e.g. ``--calibrate`` is analysis/calibration.py (the statistics),
report/calibrated_rows.py (the rows and their lines) and glue/human_labels.py (the hooks).
"""
