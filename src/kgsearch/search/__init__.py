"""Search: retrieval legs, N-ary fusion, rerankers and graph propagation.

The modules here are pure functions and small classes over ranked ``(key, score)``
lists and candidate values; none of them touches a store directly.
"""
