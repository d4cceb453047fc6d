"""The page of a materialized episode (``robodata view``), linked from the asset's metadata."""

import dagster as dg

from robodata.orchestration.defs.resources import DatasetStore
from robodata.view import write_episode_page


def episode_view_metadata(
    context: dg.AssetExecutionContext, store: DatasetStore, episode_index: int, frames_version: int
) -> dict:
    """Write the episode's page at ``frames_version`` under ``<root>/views/`` and return the
    metadata entry that links it. The rows are already committed when this runs, so a page that
    cannot be made is a logged warning, not a failed materialization.

    >>> store = DatasetStore(root="data/demo", uploads_root="uploads")
    >>> episode_view_metadata(dg.build_asset_context(), store, 0, 3)["episode_view"].value
    'data/demo/views/episode_000000.html'
    """
    try:
        uri = write_episode_page(
            store.root, episode_index, version=frames_version, storage_options=store.storage_options()
        )
    except Exception as exc:  # the page is a convenience; the episode itself is written
        context.log.warning(f"no page for episode {episode_index}: {store.redact(str(exc))}")
        return {}
    return {"episode_view": dg.MetadataValue.path(store.safe_uri(uri))}
