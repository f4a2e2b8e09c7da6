"""Benchmarks behind `planner bench …`: each writes a JSON results file and a plot."""
