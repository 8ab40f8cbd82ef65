"""Where a run's episodes execute: local processes or a Ray cluster."""
