"""aligned_frames links the page of the episode it wrote (`robodata view`) in its metadata."""

from pathlib import Path

from robodata_tests.defs.conftest import EPISODE_ASSETS, materialize_episode, metadata_of, new_instance


def test_aligned_frames_links_the_page_of_its_episode_at_its_version(store):
    instance = new_instance(store)
    materialize_episode(instance, store, "episode_000000", assets=EPISODE_ASSETS)
    second = metadata_of(
        materialize_episode(instance, store, "episode_000001", assets=EPISODE_ASSETS), "aligned_frames"
    )
    page = Path(second["episode_view"])
    assert page == Path(store.root) / "views" / "episode_000001.html"
    html = page.read_text()
    assert f'data-episode="1" data-version="{second["frames_version"]}"' in html
    assert html.count('<figure class="camera"') == 3
    assert (Path(store.root) / "views" / "episode_000000.html").exists()
