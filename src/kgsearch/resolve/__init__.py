"""Type-aware entity resolution: which extracted entities name the same thing.

:mod:`kgsearch.resolve.match` holds the pure decision layer (pairs → decisions,
candidates → clusters with every merge recorded). It touches no store; the write
path and the extraction job wire it in.
"""
