"""Import and export of graph files (JSONL, JSON graph, CSV)."""
