"""The REST routes, one module per group: graph, ingest, search, embeddings."""
