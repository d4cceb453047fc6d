"""Imported once by the DataLoader workers' fork server (``torch_dataset.worker_context``): what
every worker needs, so each forked worker starts with it already imported.

The server only imports; it never opens a dataset, so no Lance runtime exists to be forked.
Lance warns on every fork after it is imported; here that warning is about a process that never
used it, so it is silenced in the server only.
"""

import warnings

warnings.filterwarnings("ignore", message="lance is not fork-safe")

import robodata.torch._torch_dataset  # noqa: E402,F401 - torch, Lance, PyArrow, PyAV and the reader
