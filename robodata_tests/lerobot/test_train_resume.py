"""robodata-train's resume on another layout: a run in the decode-once order saves its checkpoint
through LeRobot's ``save_checkpoint`` (which robodata-train wraps), and a run resumed from it with
another number of workers, ranks or batch size reads every item of the epoch exactly once.

Without LeRobot installed, the run is LeRobot 0.6.1's ``train()`` as far as the order goes: the
sampler built through the script's ``EpisodeAwareSampler`` (robodata-train's), resumed with
``load_state_dict(compute_sampler_state(step, ...))`` computed with the checkpoint's batch size and
process count, iterated by a DataLoader of ``batch_size`` whose batches accelerate deals to the
ranks (global batch g to rank g % P, one per rank a step)."""

from __future__ import annotations

import json
import math
import types

import pytest

torch = pytest.importorskip("torch")

from robodata.lerobot import LeRobotCompatDataset  # noqa: E402
from robodata.lerobot import train as lerobot_train  # noqa: E402
from robodata_tests.lerobot.test_train_hook import FakeEpisodeAwareSampler, build_sampler  # noqa: E402


def compute_sampler_state(step: int, num_frames: int, batch_size: int, num_processes: int) -> dict:
    """LeRobot's (lerobot.datasets.sampler.compute_sampler_state): a step as a sampler position."""
    batches_per_epoch = math.ceil(math.ceil(num_frames / batch_size) / num_processes)
    epoch, batches_into_epoch = divmod(step, batches_per_epoch)
    return {"epoch": epoch, "start_index": min(batches_into_epoch * batch_size * num_processes, num_frames)}


class Run:
    """One training run of robodata-train on ``dataset`` with a layout: every rank's sampler, as
    LeRobot's script builds it (resumed from ``checkpoint`` when given)."""

    def __init__(self, dataset, monkeypatch, *, batch_size, num_workers, world_size, checkpoint=None, saved=None):
        self.batch_size, self.world_size = batch_size, world_size
        self.saved: list[tuple[str, int]] = []
        self.samplers = []
        for rank in range(world_size):
            monkeypatch.setenv("RANK", str(rank))
            monkeypatch.setenv("WORLD_SIZE", str(world_size))
            cfg = types.SimpleNamespace(
                batch_size=batch_size, num_workers=num_workers, seed=5, resume=checkpoint is not None
            )
            cfg.checkpoint_path = checkpoint
            # a config LeRobot would read itself: the order alone is under test (pinning: test_train_pinning.py)
            cfg.dataset = types.SimpleNamespace(repo_id="lerobot/elsewhere", root=None, revision=None)
            script = types.ModuleType("lerobot.scripts.lerobot_train")
            script.make_train_eval_datasets = lambda config: (dataset, None)
            script.EpisodeAwareSampler = FakeEpisodeAwareSampler
            script.save_checkpoint = self._lerobot_save_checkpoint
            lerobot_train.install_training_order(script)
            sampler = build_sampler(script, cfg)
            if checkpoint is not None:  # what train() does on --resume=true, with the checkpoint's figures
                step, old_batch, old_processes = saved
                sampler.load_state_dict(compute_sampler_state(step, len(sampler), old_batch, old_processes))
            self.samplers.append((script, sampler))
        self.step = 0 if saved is None else saved[0]
        self._items = None

    def _lerobot_save_checkpoint(self, checkpoint_dir, step, cfg, policy, optimizer, scheduler=None, **kwargs):
        self.saved.append((str(checkpoint_dir), step))

    def train(self, steps: int) -> list[int]:
        """The items every rank reads in ``steps`` more steps (padding repeats of a short last
        round left out), crossing into the next epoch as ``cycle(dataloader)`` does."""
        read = []
        for _ in range(steps):
            if not self._items:
                epochs = [list(iter(sampler)) for _, sampler in self.samplers]
                assert all(e == epochs[0] for e in epochs)  # every rank yields the same order
                cut = [epochs[0][i : i + self.batch_size] for i in range(0, len(epochs[0]), self.batch_size)]
                rounds = math.ceil(len(cut) / self.world_size)
                self._items = [sum(cut[j * self.world_size : (j + 1) * self.world_size], []) for j in range(rounds)]
            read += self._items.pop(0)
            self.step += 1
        return [int(i) for i in read]

    def save(self, folder) -> tuple[int, int, int]:
        """LeRobot's checkpoint at this step (rank 0 saves it)."""
        script, _ = self.samplers[0]
        folder.mkdir(parents=True, exist_ok=True)
        script.save_checkpoint(folder, self.step, cfg=None, policy=None, optimizer=None)
        return self.step, self.batch_size, self.world_size


@pytest.fixture(scope="module")
def dataset(short_dataset):
    return LeRobotCompatDataset(short_dataset)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ((8, 2, 2), (8, 4, 2)),  # more workers
        ((8, 2, 2), (8, 2, 1)),  # fewer ranks
        ((8, 2, 1), (5, 2, 3)),  # another batch size and more ranks
    ],
    ids=["workers-2-to-4", "ranks-2-to-1", "batch-8-to-5-ranks-1-to-3"],
)
def test_a_resume_on_another_layout_reads_every_item_of_the_epoch_once(dataset, monkeypatch, tmp_path, before, after):
    monkeypatch.delenv("ROBODATA_TRAIN_ORDER", raising=False)
    items = len(dataset)
    first = Run(dataset, monkeypatch, batch_size=before[0], num_workers=before[1], world_size=before[2])
    read = first.train(3)
    saved = first.save(tmp_path / "000003")
    state = json.loads((tmp_path / "000003" / "robodata_order.json").read_text())
    assert (state["step"], state["epoch"], state["start_index"]) == (3, 0, 3 * before[0] * before[2])
    assert (state["batch_size"], state["num_workers"], state["world_size"]) == before
    second = Run(
        dataset,
        monkeypatch,
        batch_size=after[0],
        num_workers=after[1],
        world_size=after[2],
        checkpoint=tmp_path / "000003",
        saved=saved,
    )
    _, sampler = second.samplers[0]
    rest = second.train(sampler.steps_in_epoch(state["start_index"]))
    assert sorted(read + rest) == list(range(items))  # every item of the epoch exactly once
    # ... and the next epoch, read whole in the new layout
    assert sorted(second.train(sampler.steps_in_epoch(0))) == list(range(items))


def test_a_second_resume_after_a_layout_change_is_exact_too(dataset, monkeypatch, tmp_path):
    """Once the layout changed, LeRobot's position (from the step alone) is wrong: the order's
    own checkpoint says where it stands, across the resumes of one epoch."""
    monkeypatch.delenv("ROBODATA_TRAIN_ORDER", raising=False)
    first = Run(dataset, monkeypatch, batch_size=4, num_workers=2, world_size=2)
    read = first.train(4)
    saved = first.save(tmp_path / "a")
    second = Run(
        dataset, monkeypatch, batch_size=6, num_workers=3, world_size=1, checkpoint=tmp_path / "a", saved=saved
    )
    read += second.train(5)
    saved = second.save(tmp_path / "b")
    state = json.loads((tmp_path / "b" / "robodata_order.json").read_text())
    assert (state["step"], state["start_index"]) == (9, 4 * 4 * 2 + 5 * 6)
    assert compute_sampler_state(9, len(dataset), 6, 1)["start_index"] != state["start_index"]  # LeRobot's is off
    assert state["resumed_from"]["world_size"] == 2  # the epoch's first part, in the first layout
    third = Run(dataset, monkeypatch, batch_size=4, num_workers=1, world_size=2, checkpoint=tmp_path / "b", saved=saved)
    _, sampler = third.samplers[0]
    read += third.train(sampler.steps_in_epoch(state["start_index"]))
    assert sorted(read) == list(range(len(dataset)))


def test_the_same_layout_resumes_at_lerobots_position_and_a_bad_checkpoint_is_refused(dataset, monkeypatch, tmp_path):
    monkeypatch.delenv("ROBODATA_TRAIN_ORDER", raising=False)
    first = Run(dataset, monkeypatch, batch_size=8, num_workers=2, world_size=1)
    whole = first.train(first.samplers[0][1].steps_in_epoch(0) + 2)  # past the epoch's end
    saved = first.save(tmp_path / "c")
    state = json.loads((tmp_path / "c" / "robodata_order.json").read_text())
    assert {k: state[k] for k in ("epoch", "start_index")} == compute_sampler_state(saved[0], len(dataset), 8, 1)
    again = Run(dataset, monkeypatch, batch_size=8, num_workers=2, world_size=1, checkpoint=tmp_path / "c", saved=saved)
    assert again.samplers[0][1].resumed_from is None  # nothing to re-plan
    assert again.train(3) == first.train(3)  # the same batches as the run that went on
    assert len(whole) == len(dataset) + 2 * 8
    (tmp_path / "c" / "robodata_order.json").write_text(json.dumps({**state, "seed": 6}))
    with pytest.raises(SystemExit, match=r"robodata_order.json: cannot resume: the checkpoint has seed=6 but"):
        Run(dataset, monkeypatch, batch_size=8, num_workers=2, world_size=1, checkpoint=tmp_path / "c", saved=saved)
    (tmp_path / "c" / "robodata_order.json").write_text("{")
    with pytest.raises(SystemExit, match=r"cannot resume from .*robodata_order.json"):
        Run(dataset, monkeypatch, batch_size=8, num_workers=2, world_size=1, checkpoint=tmp_path / "c", saved=saved)


def test_a_dataloader_reads_the_rest_of_the_resumed_epoch_through_the_frame_buffer(
    short_dataset, monkeypatch, tmp_path
):
    """The resumed order reaches the reading process: its items name the plan, the frame buffer is
    planned with the re-planned rest, and every GOP it still needs is decoded once."""
    from torch.utils.data import DataLoader

    monkeypatch.delenv("ROBODATA_TRAIN_ORDER", raising=False)
    dataset = LeRobotCompatDataset(short_dataset, return_uint8=True)
    first = Run(dataset, monkeypatch, batch_size=8, num_workers=2, world_size=2)
    read = first.train(2)
    saved = first.save(tmp_path / "d")
    second = Run(
        dataset, monkeypatch, batch_size=8, num_workers=0, world_size=1, checkpoint=tmp_path / "d", saved=saved
    )
    _, sampler = second.samplers[0]
    assert dataset._order is sampler and sampler.resumed_from is not None
    batches = list(DataLoader(dataset, sampler=sampler, batch_size=8))
    rest = torch.cat([batch["index"] for batch in batches]).tolist()
    assert sorted(read + rest) == list(range(len(dataset)))
    buffer = dataset.frame_buffer
    assert buffer is not None and buffer.held_frames == 0  # read through it, every frame handed over
    assert (
        buffer.decoded_gops
        == len({int(r) for r in dataset._row_index().ref_id["top"][dataset._array("rows")[rest]]}) * 3
    )
