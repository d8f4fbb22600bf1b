"""Command-line entry points of the installed package."""
