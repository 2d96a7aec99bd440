"""Budgeted adaptive search over an experiment's grid (`search:` in the YAML): the grid as axes
(space), what the records say (observations), the strategies that propose the next jobs
(strategies), the answer (answer), and the rounds through ReFrame (rounds). present/search.py
prints the answer."""
