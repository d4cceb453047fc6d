"""Look at an episode: a self-contained HTML page with every camera playing in sync, state and
action plotted under a cursor that follows playback, labels and interventions as coloured
bands. Reads the dataset only; nothing below this package imports it.

>>> write_episode_page("data/demo", 0, "episode_0.html")
'episode_0.html'
"""

from robodata.view._page import episode_page, episode_page_uri, render_episode_page, write_episode_page
from robodata.view._serve import PageServer

__all__ = ["PageServer", "episode_page", "episode_page_uri", "render_episode_page", "write_episode_page"]
