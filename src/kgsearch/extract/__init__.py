"""Text → graph: extractors (LLM with domain prompts, offline spaCy, imported OpenIE),
tolerant parsing, and the quality filter. No store here: only text in, records out."""
