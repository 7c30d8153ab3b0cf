"""The one HTTP stack every adapter and judge sends through, provider-agnostic.

``http`` makes the policy client (limits, bounds, key hosts, retries) and sends; ``httperrors`` reads a failed
reply; ``bounds`` caps time and bytes; ``waits`` reads how long a server asks to wait; ``keyhosts`` says where a
key may go; ``requestopts`` is what one request asks of the policy; ``body`` streams JSON bodies with images;
``addresses`` checks the addresses and request options before anything is paid; ``keycheck`` proves keys with
free calls; ``slots`` is what the stack needs of the run's route limiter and of a call's in-flight slots.

This package imports nothing of ``providers/``, ``judges/``, ``engine/`` or ``glue/``: they use it, never the
other way round (tests/package/test_transport_layer.py).
"""
