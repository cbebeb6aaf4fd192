"""`python -m kraftlake` is the `kraftlake` command."""

from kraftlake.cli import main

main()
