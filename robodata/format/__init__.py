"""The two-table schema (gops.lance + frames.lance), schema metadata, ids and naming rules.

Public here:

- which upload each stored episode came from: ``stored_uploads``, ``stored_episodes`` (each a
  ``StoredUpload``);
- reading the two tables directly with Lance (as the benchmarks do): their names
  (``FRAMES_TABLE``, ``GOPS_TABLE``, ``frames_uri(root)``, ``gops_uri(root)``) and
  ``open_table``, the schema metadata's key (``METADATA_KEY``), a camera's reference columns
  (``ref_columns``) and its camera from an image column (``camera_of``), the filter strings
  (``episode_filter``, ``camera_filter``, ``full_resolution_only``: a GOP filter without the
  training renditions), the tables' current versions (``current_versions``), and the rule that
  gives a row its camera frame (``nearest_frames``).

The rest is robodata's own (private modules)."""

from robodata.format._alignment import nearest_frames
from robodata.format._ids import camera_filter, episode_filter
from robodata.format._provenance import StoredUpload, stored_episodes, stored_uploads
from robodata.format._renditions import full_resolution_only
from robodata.format._schema import FRAMES_TABLE, GOPS_TABLE, METADATA_KEY, camera_of, ref_columns
from robodata.format._tables import frames_uri, gops_uri, open_table
from robodata.format._versions import current_versions

__all__ = [
    "FRAMES_TABLE",
    "GOPS_TABLE",
    "METADATA_KEY",
    "StoredUpload",
    "camera_filter",
    "camera_of",
    "current_versions",
    "episode_filter",
    "frames_uri",
    "full_resolution_only",
    "gops_uri",
    "nearest_frames",
    "open_table",
    "ref_columns",
    "stored_episodes",
    "stored_uploads",
]
