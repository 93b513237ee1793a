"""What the unit tests of bench/'s Python scripts share: bench/ on the import path, and
check() counting failures for done()'s exit status."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))

fails = 0


def check(what, ok):
    global fails
    print(("ok   " if ok else "FAIL ") + what)
    fails += not ok


def done():
    sys.exit(1 if fails else 0)
