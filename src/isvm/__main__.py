"""``python -m isvm``: the command-line interface (see :mod:`isvm.cli`)."""

from isvm.cli import main

raise SystemExit(main())
