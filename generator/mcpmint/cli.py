"""Command line (placeholder until the pipeline lands)."""

import typer

app = typer.Typer()
