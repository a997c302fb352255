"""``python -m toolguard.integrations.mcp MODULE:ATTR``: serve it over stdio."""

import sys

from toolguard.integrations.mcp._stdio import main

if __name__ == "__main__":
    sys.exit(main())
