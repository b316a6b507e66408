"""Executors: one adapter per backend (process, docker, ...), all with the interface in base.py.

They know nothing of the database: the scheduler loop hands them plain TaskLaunch values.
"""
