"""Built-in tools. Importing this package registers each of them (see ``base.register``)."""

from . import eval, grep, listdir, pdb, rewrite, submit, view  # noqa: F401, T100
