"""Every request our adapters send, checked against the provider's official SDK (issue 15, item 5).

For each route and model, ``test_differential.py`` sends the same request
(task, references, seed, size, options) through our adapter and through the
official Python SDK to one recording loopback server (recorder.py), and
compares the two requests field by field (wire.py): method, path, query, the
headers that matter, and the body, multipart parts and images included (images
as decoded bytes).  A route's case (cases/<route>.py) says how its SDK is
pointed at the server, and lists each difference that does not matter with
why.  ``test_validation.py`` runs our bodies through the SDKs' own parameter
checks (OpenAI's TypedDicts, Runware's schemas) or, where a provider has no SDK,
its published schema (schemas/).  No network but loopback.
"""
