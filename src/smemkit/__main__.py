"""``python -m smemkit`` runs the command-line tool."""

from smemkit.cli.main import main

raise SystemExit(main())
