"""The ``dgym`` command line."""
