"""Communities: hierarchical clustering of the graph (``detect``), pure."""
