"""Shared builders for tests: JobSets, child Jobs and plans in upstream's shapes."""
