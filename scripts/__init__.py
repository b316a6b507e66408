"""Maintenance scripts; a package so that tests import gpu_check by one name."""
