"""Every request our adapters send, checked against the provider's official SDK (issue 15, item 5).

For each route, model and task shape (shapes.py), ``test_differential.py``
makes the same exchange (task, references, seed, options) through our adapter
and through the official Python SDK against one recording loopback server
(recorder.py), and compares the two exchanges request by request, in order
(submission, polls, download), field by field (wire.py): method, path, query,
the headers that matter, and the body, multipart parts and images included
(images as decoded bytes).  The SDK side's size or aspect ratio comes from
expected.py (the documented rule, written out per shape), never from our
adapter.  A route's case (cases/<route>.py) says how its SDK is
pointed at the server, and lists each difference that does not matter with
why.  ``Case.validate`` runs our bodies through the SDKs' own parameter
checks (OpenAI's TypedDicts, Runware's schemas) or, where a provider has no SDK,
its published schema (schemas/).  No network but loopback.
"""
