"""Episode pages are opt-in: with ``episode_page: true`` aligned_frames writes the page of the
episode it wrote (`robodata view`) and links it in its metadata; by default it writes none."""

from pathlib import Path

from robodata_tests.orchestration.conftest import EPISODE_ASSETS, materialize_episode, metadata_of, new_instance

WITH_PAGE = {"ops": {"aligned_frames": {"config": {"episode_page": True}}}}


def test_aligned_frames_links_the_page_of_its_episode_at_its_version(store):
    instance = new_instance(store)
    materialize_episode(instance, store, "episode_000000", assets=EPISODE_ASSETS, run_config=WITH_PAGE)
    second = metadata_of(
        materialize_episode(instance, store, "episode_000001", assets=EPISODE_ASSETS, run_config=WITH_PAGE),
        "aligned_frames",
    )
    page = Path(second["episode_view"])
    assert page == Path(store.root) / "views" / "episode_000001.html"
    html = page.read_text()
    assert f'data-episode="1" data-version="{second["frames_version"]}"' in html
    assert html.count('<figure class="camera"') == 3
    assert (Path(store.root) / "views" / "episode_000000.html").exists()


def test_no_page_is_written_by_default(store):
    result = materialize_episode(new_instance(store), store, "episode_000000", assets=EPISODE_ASSETS)
    assert "episode_view" not in metadata_of(result, "aligned_frames")
    assert not (Path(store.root) / "views").exists()
