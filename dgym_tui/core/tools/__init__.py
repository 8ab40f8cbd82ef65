"""Built-in tools. Importing this package registers each of them (see ``base.register``)."""

from . import eval, grep, listdir, rewrite, submit, view  # noqa: F401
