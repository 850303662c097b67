"""The REST adapter: a FastAPI app over :class:`kgsearch.Engine` (needs ``kgsearch[server]``).

Build it with :func:`kgsearch.api.app.create_app`; ``kgsearch serve`` runs it with
uvicorn. Importing this package does not import FastAPI; ``kgsearch.api.app`` does.
"""
