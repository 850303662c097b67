"""Search: a one-way pipeline from a request to ranked, typed results.

``pipeline.run_search`` runs the stages in order: ``plan`` (request → Plan, query
vectors), ``legs`` (vector, BM25, name and graph legs), ``fusion`` (pure N-ary RRF or
weighted), ``hydrate`` (one batched read for the fused pool), ``rerank`` (pure
rerankers over candidates that carry their data) and ``response``; an explained search
collects each stage's SQL in ``statements``. ``service`` is what the engine's search
methods call (store info, query embedder, search, explain, RAG context); ``lookups``
and ``context`` serve the engine's mention lookups, neighbourhoods and RAG context lines.
"""
