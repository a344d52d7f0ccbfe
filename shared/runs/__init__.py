"""Runs over a file or a dataset: reading inputs, the results file, the runner (plan, resume,
write) and the Ray engine. No typer, no rich: the CLI drives these."""
