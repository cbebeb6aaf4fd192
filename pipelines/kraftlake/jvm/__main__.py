"""`python -m kraftlake.jvm [SET...]`: resolve the pinned jar sets once (setup)."""

import sys

from . import main

sys.exit(main(sys.argv[1:]))
