"""`python -m port ARGS...`: the same as the `port` command."""

import sys

from port._launch import main

sys.exit(main())
