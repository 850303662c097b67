"""The ``kgsearch`` command line: a thin click adapter over :class:`kgsearch.Engine`.

Each command builds the engine from settings and flags, calls one engine method,
renders the result (a table on a terminal, JSON with ``--json``) and turns any
:class:`kgsearch.KgsearchError` into a clean message and exit code 1. Commands are
imported when they run (:mod:`kgsearch.cli.root`), so light ones start fast.
"""

from __future__ import annotations

from kgsearch.cli.root import cli, main

__all__ = ["cli", "main"]
