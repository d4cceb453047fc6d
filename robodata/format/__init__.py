"""The two-table schema (gops.lance + frames.lance), schema metadata, ids and naming rules.

Public here: which upload each stored episode came from (``stored_uploads``, ``stored_episodes``);
the rest is robodata's own (private modules)."""

from robodata.format._provenance import stored_episodes, stored_uploads

__all__ = ["stored_episodes", "stored_uploads"]
