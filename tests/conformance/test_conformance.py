"""The store conformance suite of :mod:`kgsearch.testing.conformance`, on our backends.

The suite is written once and exported for third-party stores; here it runs against
every backend of the ``store_factory`` fixture in tests/conftest.py: sqlite-memory,
sqlite-file and postgres.
"""

from kgsearch.testing.conformance import *  # noqa: F403
