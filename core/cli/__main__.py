"""``python -m bitextforge.cli``: the same command as the installed ``bitextforge`` script."""

import sys

from .main import main

sys.exit(main())
