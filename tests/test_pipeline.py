"""Feed-free input: per-tower tf.data shards of the step-indexed global batch."""
import numpy as np
import pytest

from crnn_multigpu import MultiGpuModel
from crnn_multigpu.datasets.charset import Charset
from crnn_multigpu.compat import tf
from crnn_multigpu.ocr.crnn import CRNN
from crnn_multigpu.datasets import make_batch, open_dataset
from crnn_multigpu.datasets.batching import INPUT_NAMES
from crnn_multigpu.datasets.steps import ArrayBatches, StepBatches
from crnn_multigpu.wrapper.devices import cpu_devices
from crnn_multigpu.wrapper.feeding import StepInput
from crnn_multigpu.wrapper.sharding import split_batch
from crnn_multigpu.runtime.training import Trainer

CHARSET = Charset.default()
TINY = dict(channels=(4, 8, 8, 8, 8, 8, 8), lstm_units=8, num_classes=CHARSET.num_classes)
BATCH, TOWERS = 8, 2


class IdDataset(object):
    """Sample i: an image of value i and the text str(i), widths varying (fully in memory)."""

    def __init__(self, count):
        self.count = count

    def __len__(self):
        return self.count

    def safe_get(self, index):
        width = 16 + 4 * (index % 3)
        return np.full((32, width), index / float(self.count), np.float32), "%d" % index


class Unreadable(IdDataset):
    def safe_get(self, index):
        return None


def tower_inputs(source, n_towers, global_step=None):
    """Every tower's input tensors of a ``StepInput`` over ``n_towers`` CPUs (built on the host,
    as MultiGpuModel builds them), and the op that starts them."""
    feed = StepInput(source, cpu_devices(n_towers), global_step=global_step)
    with tf.device("/cpu:0"):
        tensors = [feed.tower(k) for k in range(n_towers)]
    return tensors, tf.group(*feed.initializers)


def texts_of(labels, lengths):
    return [CHARSET.decode(row[:n]) for row, n in zip(labels, lengths)]


def assert_shard_equal(got, expected):
    for name in INPUT_NAMES:
        value = np.asarray(getattr(expected, name))
        np.testing.assert_array_equal(got[name], value, err_msg=name)


def tiny_wrapper(batches, optimizer=None, towers=TOWERS, accumulate_steps=1):
    tf.set_random_seed(1)
    return MultiGpuModel(CRNN, devices=cpu_devices(towers), batches=batches,
                         optimizer=optimizer or tf.train.AdamOptimizer(0.01),
                         accumulate_steps=accumulate_steps, **TINY)


def start_up(wrapper, session):
    """Initialise as the Trainer does: variables, then post_init_op (which starts the input)."""
    session.run(tf.global_variables_initializer())
    session.run(wrapper.post_init_op)


def training_feed(wrapper):
    return {m.training: True for m in wrapper.models}


def test_towers_get_their_own_shard_of_the_same_global_batch(tiny_dataset, make_session):
    dataset = open_dataset(tiny_dataset, charset=CHARSET)
    reference = StepBatches(dataset, CHARSET, BATCH, fixed_width=100, seed=3)
    wrapper = tiny_wrapper(StepBatches(dataset, CHARSET, BATCH, fixed_width=100, seed=3))
    inputs = [{name: getattr(m, name) for name in INPUT_NAMES} for m in wrapper.models]
    session = make_session()
    start_up(wrapper, session)
    for step in range(3):
        # The train op and the fetched inputs in one run: the batch this step trained on.
        _, shards = session.run([wrapper.objective, inputs], training_feed(wrapper))
        assert session.run(wrapper.global_step) == step + 1
        expected = split_batch(reference(step), TOWERS)
        for got, want in zip(shards, expected):
            assert_shard_equal(got, want)
        assert not np.array_equal(shards[0]["images"], shards[1]["images"])
        assert texts_of(shards[0]["labels"], shards[0]["label_lengths"]) != \
            texts_of(shards[1]["labels"], shards[1]["label_lengths"])


def test_the_wrapper_feeds_its_own_towers_and_micro_batches(make_session):
    """The input is built from the wrapper's towers and accumulation, given nothing else: each
    of its 3 towers gets its shard, each of its 2 micro-batches per step is the next micro-step,
    and post_init_op starts them at micro-step 2 x the global step (as restored)."""
    dataset = IdDataset(48)
    reference = StepBatches(dataset, CHARSET, 6, seed=4)
    wrapper = tiny_wrapper(StepBatches(dataset, CHARSET, 6, seed=4), towers=3,
                           accumulate_steps=2)
    inputs = [{name: getattr(m, name) for name in INPUT_NAMES} for m in wrapper.models]
    session = make_session()
    start_up(wrapper, session)
    wrapper.global_step.load(5, session)  # as restored from a checkpoint of step 5
    session.run(wrapper.post_init_op)
    for micro_step in range(10, 14):
        _, shards = session.run([wrapper.objective, inputs], training_feed(wrapper))
        for got, want in zip(shards, split_batch(reference(micro_step), 3)):
            assert_shard_equal(got, want)
    assert session.run(wrapper.global_step) == 7


@pytest.mark.parametrize("n_towers", [2, 3])
def test_every_epoch_sees_every_example_exactly_once(make_session, n_towers):
    dataset = IdDataset(30)
    outputs, begin = tower_inputs(StepBatches(dataset, CHARSET, 6, seed=7), n_towers)
    session = make_session()
    session.run(begin)
    epochs = []
    for _ in range(2):
        seen = []
        for _ in range(len(dataset) // 6):
            shards = session.run(outputs)
            sizes = [len(s["widths"]) for s in shards]
            assert max(sizes) - min(sizes) <= 1 and sum(sizes) == 6
            for shard in shards:
                seen.extend(int(t) for t in texts_of(shard["labels"], shard["label_lengths"]))
                # Image pixels and widths travel with their own label.
                for image, width, text in zip(shard["images"], shard["widths"],
                                              texts_of(shard["labels"], shard["label_lengths"])):
                    assert width == 16 + 4 * (int(text) % 3)
                    assert np.allclose(image[:, :width], int(text) / 30.0)
        assert sorted(seen) == list(range(30))
        epochs.append(seen)
    assert epochs[0] != epochs[1], "each epoch is reshuffled"


def test_the_global_step_at_start_up_continues_the_data_order(make_session):
    dataset = IdDataset(40)
    fresh, begin_fresh = tower_inputs(StepBatches(dataset, CHARSET, BATCH, seed=2), TOWERS)
    global_step = tf.train.get_or_create_global_step()
    resumed, begin_resumed = tower_inputs(StepBatches(dataset, CHARSET, BATCH, seed=2), TOWERS,
                                          global_step)
    session = make_session()
    session.run(begin_fresh)
    straight = [session.run(fresh) for _ in range(6)]
    global_step.load(3, session)  # as restored from a checkpoint of step 3
    session.run(begin_resumed)
    for step in range(3, 6):
        for got, want in zip(session.run(resumed), straight[step]):
            for name in INPUT_NAMES:
                np.testing.assert_array_equal(got[name], want[name])


def test_in_memory_arrays_are_a_source(make_session):
    arrays = make_batch([np.full((32, 20), i / 16.0, np.float32) for i in range(16)],
                        ["%d" % i for i in range(16)], CHARSET, fixed_width=20)
    outputs, begin = tower_inputs(ArrayBatches(arrays, BATCH), TOWERS)
    session = make_session()
    session.run(begin)
    seen = []
    for _ in range(2):
        for shard in session.run(outputs):
            texts = texts_of(shard["labels"], shard["label_lengths"])
            np.testing.assert_allclose(shard["images"][:, 0, 0, 0], [int(t) / 16.0 for t in texts])
            seen.extend(int(t) for t in texts)
    assert sorted(seen) == list(range(16))


@pytest.mark.slow
def test_feed_free_training_equals_feed_dict_training(tiny_dataset, make_session):
    dataset = open_dataset(tiny_dataset, charset=CHARSET)
    reference = StepBatches(dataset, CHARSET, BATCH, fixed_width=100, seed=0)
    wrapper = tiny_wrapper(StepBatches(dataset, CHARSET, BATCH, fixed_width=100, seed=0))
    variables = tf.global_variables()  # weights, batch-norm statistics, Adam slots, global step
    session = make_session()
    start_up(wrapper, session)
    initial = session.run(variables)
    for _ in range(4):
        session.run(wrapper.objective, training_feed(wrapper))
    feed_free = session.run(variables)
    for variable, value in zip(variables, initial):
        variable.load(value, session)
    for step in range(4):
        # Feeding all four inputs overrides the pipeline (and does not consume it).
        session.run(wrapper.objective, wrapper.feed_dict(wrapper.split(reference(step))))
    fed = session.run(variables)
    assert int(fed[variables.index(wrapper.global_step)]) == 4
    changed = 0
    for variable, a, b, start in zip(variables, feed_free, fed, initial):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=variable.op.name)
        changed += not np.array_equal(a, start)
    assert changed > len(variables) // 2, "training did not change the variables"


def test_feed_dict_overrides_the_pipeline_without_consuming_it(tiny_dataset, make_session):
    dataset = open_dataset(tiny_dataset, charset=CHARSET)
    reference = StepBatches(dataset, CHARSET, BATCH, fixed_width=100, seed=0)
    wrapper = tiny_wrapper(StepBatches(dataset, CHARSET, BATCH, fixed_width=100, seed=0))
    images = [m.images for m in wrapper.models]
    session = make_session()
    start_up(wrapper, session)
    other = split_batch(reference(5), TOWERS)
    fed = session.run(images, wrapper.feed_dict(other))
    for got, want in zip(fed, other):
        np.testing.assert_array_equal(got, want.images)
    for step in range(2):  # the pipeline still starts at step 0
        for got, want in zip(session.run(images), split_batch(reference(step), TOWERS)):
            np.testing.assert_array_equal(got, want.images)


def test_trainer_feed_free_reports_source_errors(tmp_path, make_session):
    wrapper = tiny_wrapper(StepBatches(Unreadable(24), CHARSET, BATCH))
    trainer = Trainer(wrapper, None, str(tmp_path), log_every=0, feed=training_feed(wrapper))
    with pytest.raises(ValueError, match="only 0 readable images"):
        trainer.train(make_session(), steps=2)


@pytest.mark.slow
def test_trainer_feed_free_runs_and_resumes_exactly(tiny_dataset, tmp_path, make_session):
    dataset = open_dataset(tiny_dataset, charset=CHARSET)

    def run(out, steps, resume=False):
        graph = tf.Graph()
        with graph.as_default():
            wrapper = tiny_wrapper(StepBatches(dataset, CHARSET, BATCH, fixed_width=100))
            trainer = Trainer(wrapper, None, out, log_every=0, feed=training_feed(wrapper))
            session = make_session(graph)
            final = trainer.train(session, steps=steps, resume=resume)
            variables = tf.global_variables()
            return final, dict(zip([v.op.name for v in variables], session.run(variables)))

    final, straight = run(str(tmp_path / "straight"), 6)
    assert final == 6
    assert run(str(tmp_path / "resumed"), 3)[0] == 3
    final, resumed = run(str(tmp_path / "resumed"), 6, resume=True)
    assert final == 6
    for name in straight:
        np.testing.assert_allclose(straight[name], resumed[name], rtol=1e-5, atol=1e-6,
                                   err_msg=name)
