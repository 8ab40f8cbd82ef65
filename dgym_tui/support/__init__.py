"""Support shared by every layer: paths, resource folders."""
