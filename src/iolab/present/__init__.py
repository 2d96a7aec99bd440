"""Presentation: tables, plots and pages, read from results through `Run` only."""
