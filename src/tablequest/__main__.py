"""`python -m tablequest` is the `tablequest` command."""

from tablequest.cli import main

main()
