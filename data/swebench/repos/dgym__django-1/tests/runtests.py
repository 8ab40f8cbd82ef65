#!/usr/bin/env python
"""A small stand-in for Django's tests/runtests.py: the same arguments, the same output."""
import argparse
import os
import sys
import unittest
from unittest.util import strclass

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]


class Result(unittest.TextTestResult):
    def getDescription(self, test):  # Django's (Python < 3.11) style: name (module.Class)
        name = f"{test._testMethodName} ({strclass(test.__class__)})"
        doc = test.shortDescription()
        return f"{name}\n{doc}" if doc and self.descriptions else name


parser = argparse.ArgumentParser()
parser.add_argument("labels", nargs="*")
parser.add_argument("--verbosity", type=int, default=1)
parser.add_argument("--settings")
parser.add_argument("--parallel")
args = parser.parse_args()
print("Testing against Django installed in %r" % os.path.dirname(HERE), file=sys.stderr)
suite = unittest.defaultTestLoader.loadTestsFromNames(args.labels)
runner = unittest.TextTestRunner(verbosity=args.verbosity, resultclass=Result)
sys.exit(not runner.run(suite).wasSuccessful())
