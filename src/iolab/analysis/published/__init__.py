"""A run against published studies: the study files (study.py), one run lined up with a study's
rows (compare.py), and a report's tables against the studies its experiment reproduces
(studies.py)."""
