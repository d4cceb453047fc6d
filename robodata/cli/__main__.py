"""``python -m robodata.cli``: the ``robodata`` command without its console script."""

import sys

from robodata.cli import main

if __name__ == "__main__":  # importing it (the package's doctest collection does) runs nothing
    sys.exit(main())
