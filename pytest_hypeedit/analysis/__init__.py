"""Pure numbers: no pytest, no I/O.

    metrics.py    the benchmark's metrics from per-task tallies (pass rate, Pass@k, effective cost, hype gap)
    stats.py      bootstrap intervals over tasks and the paired comparison with a baseline
    task_intervals.py the results' intervals of every metric over tasks, valid at 0% and 100%
    enrich.py     which intervals, sensitivity and baseline figures go into each results row
    gates.py      --gate: parse a gate and evaluate it against the results
    agreement.py  judge-versus-panel agreement and agreement between raters
    calibration.py the judge's figures corrected with a random human sample, with their intervals
"""
