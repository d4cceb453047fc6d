"""Changes to a dataset that never rewrite video: delete episodes, add or correct label
columns, collect GOPs no retained version references, and upkeep (compaction, version retention,
scalar indexes, garbage collection in one call: ``upkeep_dataset``)."""

from robodata.edits._annotate import add_annotations
from robodata.edits._delete import delete_episodes
from robodata.edits._garbage import collect_garbage
from robodata.edits._upkeep import upkeep_dataset

__all__ = ["add_annotations", "collect_garbage", "delete_episodes", "upkeep_dataset"]
