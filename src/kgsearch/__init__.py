"""kgsearch."""
