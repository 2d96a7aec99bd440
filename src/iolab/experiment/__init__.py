"""Defining an experiment: its YAML read with line numbers, checked against the schema, typed
once (units), expanded into cases (the matrix); and the site a run is made on, typed the same way."""
