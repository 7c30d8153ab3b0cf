"""The run engine: each candidate from task to verdict, and many of them at once.

    runner.py   one candidate: reuse what is on disk, else pay for it once (provider call, judge); owns the
                collaborators below, each given what one process produces candidates with (means.py)
    lifecycle.py  the money path of one candidate as a state machine: its steps in one table, holds settled once
    planning.py   what the disk says a candidate still needs; paidcall.py the seam of every paid call
    purchase.py   the generation step; verdicts.py the judge step
    store.py    the output layout on disk, atomic writes, resume
    records.py  the record of one candidate (what produced, judged and cost it); no I/O
    record_spend.py  the record fields that keep what was bought (replaced verdicts, failed judge calls, each run)
    budget.py   --budget: a spending cap shared by every process of the run
    limits.py   per-route requests per minute and calls in flight, across processes

Knows nothing of pytest: glue/items.py and glue/startup.py wire it into a session.
"""
