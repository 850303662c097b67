"""The store conformance suite, for kgsearch's own stores and for third-party ones.

Every store must pass the same tests against a real database. To run them on a store,
define one pytest fixture, ``store_factory``, returning a
:class:`~kgsearch.testing.StoreFactory` (:class:`~kgsearch.testing.URLStoreFactory`
fits any store opened from a URL or a path), and star-import this package in a test
module::

    from kgsearch.testing.conformance import *  # noqa: F403

The import brings in every test (each ``test_*`` function of the submodules below)
and the fixtures they use (``store``, ``engine``, ``two_projects``, ``named``, from
:mod:`~kgsearch.testing.conformance.fixtures`). Parametrize ``store_factory`` to run
the suite once per backend. docs/stores.md has the full example.

The tests are grouped by store capability: ``writes``, ``neighbors``, ``deletes``,
``projects``, ``lexical``, ``vectors``, ``names``, ``metadata``, ``tasks``, ``cache``,
``communities``, ``bulk_load`` and ``state_machine`` (a hypothesis state machine
against a plain-dict model). They need pytest and hypothesis; :mod:`kgsearch.testing`
itself needs neither.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

_SUBMODULES = [f"{__name__}.{info.name}" for info in pkgutil.iter_modules(__path__)]

# Outside ``tests/`` pytest rewrites no asserts unless told before the import, and a
# failing conformance test should show its values as any other test does.
pytest.register_assert_rewrite(*_SUBMODULES)


def _exports() -> dict[str, object]:
    """The fixtures, then every ``test_*`` function of every submodule, in module order."""
    fixtures = importlib.import_module(f"{__name__}.fixtures")
    exports: dict[str, object] = {name: getattr(fixtures, name) for name in fixtures.__all__}
    for module_name in _SUBMODULES:
        module = importlib.import_module(module_name)
        for name, value in vars(module).items():
            new = name.startswith("test_") and callable(value)
            if new and exports.setdefault(name, value) is not value:
                raise RuntimeError(f"two conformance tests are named {name}")
    return exports


_EXPORTS = _exports()
globals().update(_EXPORTS)
# Built from the submodules, so that no test can be left out of the star import.
__all__ = list(_EXPORTS)
