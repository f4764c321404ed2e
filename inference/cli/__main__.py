"""``python -m inference.cli``: the ``ppzoo`` command."""

import sys

from inference.cli import main

if __name__ == "__main__":
    sys.exit(main())
