"""``python -m clusterbench``: the same commands as the ``clusterbench`` script."""

import sys

from clusterbench.cli import main

sys.exit(main())
