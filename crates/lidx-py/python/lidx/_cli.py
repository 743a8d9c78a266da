"""The `lidx` command the package installs: lidx's command line, run in this process (the
same commands, options and messages as the `lidx` binary; see `lidx --help`)."""

import os
import sys

from . import _lidx


def main() -> None:
    """Runs ``sys.argv`` as a ``lidx`` command line and exits with its code."""
    sys.exit(_lidx.cli_main(["lidx", *sys.argv[1:]], os.path.abspath(sys.argv[0])))


if __name__ == "__main__":
    main()
