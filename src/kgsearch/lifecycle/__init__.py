"""Jobs over the store, all on one runner.

:mod:`~kgsearch.lifecycle.runner` is the loop every job shares (claim due rows, work
outside any transaction, complete or fail, ``dead`` after the attempt limit), and
:mod:`~kgsearch.lifecycle.embedding` is the embedding job on it, with the texts it
embeds and its status reports; :mod:`~kgsearch.lifecycle.tasks` runs the jobs of the
store's generic task queue (extraction and community reports) on the same loop.
"""
