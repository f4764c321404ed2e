"""``python -m inference.cli``: the ``ppzoo`` command."""

import sys

from inference.cli import main

sys.exit(main())
