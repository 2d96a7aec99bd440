"""Analysis of runs: statistics, comparisons of runs and with published studies, searches,
campaigns and their cost."""
