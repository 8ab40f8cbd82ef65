"""Batch runs and their folders: runner, executors, run index, reviews, reports."""
