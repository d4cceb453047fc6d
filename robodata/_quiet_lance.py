"""Keep Lance's Rust log lines off the user's console unless the user asks for them.

Lance's Rust logger prints WARN lines straight to stderr (``No existing dataset at ...,
it will be created`` on every first write), through the middle of progress bars. It reads
``LANCE_LOG`` once, when ``lance`` loads, so this module is imported before anything that
imports lance; an explicit ``LANCE_LOG`` (e.g. ``LANCE_LOG=warn`` or ``debug``) is kept.

>>> import robodata  # before anything imports lance
>>> import lance
"""

from __future__ import annotations

import os

DEFAULT_LANCE_LOG = "error"

os.environ.setdefault("LANCE_LOG", DEFAULT_LANCE_LOG)
