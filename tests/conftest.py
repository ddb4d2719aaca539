"""Shared fixtures: a fresh graph per test and sessions with virtual CPU devices."""
import os
import sys

import pytest
from hypothesis import settings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crnn_multigpu.compat import tf  # noqa: E402
from crnn_multigpu.wrapper.devices import close_session, session_config  # noqa: E402

N_VIRTUAL_CPUS = 4

# Property tests draw the same examples on every run and machine (a fixed seed per test, no
# example database): a fresh clone's run cannot turn red on a draw no earlier run made.
settings.register_profile("seeded", derandomize=True, database=None)
settings.load_profile("seeded")


def pytest_collection_modifyitems(items):
    """The modules with slow tests first, each module kept whole (its fixtures built once).

    pytest-xdist hands tests out in this order: long ones started early leave short ones to
    fill in at the end, instead of one process still running a long test while the other idles.
    """
    with_slow = set(item.module.__name__ for item in items if item.get_closest_marker("slow"))
    items.sort(key=lambda item: item.module.__name__ not in with_slow)


@pytest.fixture(autouse=True)
def fresh_graph():
    """Every test builds into its own default graph."""
    graph = tf.Graph()
    with graph.as_default():
        yield graph


@pytest.fixture
def make_session(fresh_graph):
    """Open sessions on the test's graph with 4 virtual CPUs; all closed at teardown."""
    sessions = []

    def make(graph=None, n_cpus=N_VIRTUAL_CPUS):
        session = tf.Session(graph=graph or fresh_graph, config=session_config(n_cpus))
        sessions.append(session)
        return session

    yield make
    for session in sessions:
        close_session(session)


@pytest.fixture(scope="session")
def tiny_dataset(tmp_path_factory):
    """48 synthetic text lines (up to 5 characters) as a folder dataset."""
    from crnn_multigpu.datasets.charset import Charset
    from crnn_multigpu.datasets import SyntheticTextGenerator, write_dataset
    from faces import tiny_faces
    root = str(tmp_path_factory.mktemp("tiny") / "folder")
    generator = SyntheticTextGenerator(Charset.default(), tiny_faces(), max_len=5, seed=5)
    write_dataset(root, generator, 48, progress=False)
    return root
