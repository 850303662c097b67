"""``python -m kgsearch`` runs the CLI."""

from kgsearch.cli import main

main()
