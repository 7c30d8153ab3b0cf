"""The pytest glue, beside ``plugin.py`` (the thin entry) and ``options.py``: everything that imports pytest.

    startup.py        a run put together at configure time: config, markers, runner, up-front checks
    items.py          the pytest items, one per task x model x repeat, and the record each waits for
    pool_plugin.py    the pool (engine/pool.py) inside pytest: started with the run loop, stopped on
                      -x / --maxfail / Ctrl-C / SIGTERM; the xdist scheduler; the live line
    stopping.py       Ctrl-C and SIGTERM in every process, the grace of the calls in flight, what leaving costs
    session.py        the one session object on the controller: records in, results out
    terminal_layout.py the end of session's layout: one line per failed item, the answer (table, gates) last
    ci.py             gates -> exit status, statistics into the results, junit properties
    agreement_plugin.py ``--agreement``: the judge against a human panel
    human_labels.py   ``record.human`` from the run's labels, ``--calibrate``, the judge's stability lines
    price_line.py     the price a paid run starts with, and ``--estimate``
    ini.py            every option from the ini file
    rootdir_guard.py  pytest's rootdir trap
    stash.py          the keys of what the plugin keeps in ``config.stash``
"""
