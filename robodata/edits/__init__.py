"""Changes to a dataset that never rewrite video: delete episodes, add or correct label
columns, and collect GOPs no retained version references."""

from robodata.edits._annotate import add_annotations
from robodata.edits._delete import delete_episodes
from robodata.edits._garbage import collect_garbage

__all__ = ["add_annotations", "collect_garbage", "delete_episodes"]
