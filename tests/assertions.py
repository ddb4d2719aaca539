"""Assertions and session helpers several test files share."""
import contextlib
import io

import numpy as np
import pytest

from crnn_multigpu.compat import tf
from crnn_multigpu.wrapper.towers import NONFINITE_MESSAGE


def assert_step_refused_changing_nothing(session, step, feed_dict):
    """Running ``step`` fails with NONFINITE_MESSAGE, and every global variable (weights,
    optimizer slots, moving statistics, counters, the global step) keeps its value."""
    variables = tf.global_variables()
    before = session.run(variables)
    with pytest.raises(tf.errors.InvalidArgumentError, match=NONFINITE_MESSAGE):
        session.run(step, feed_dict)
    for variable, old, new in zip(variables, before, session.run(variables)):
        np.testing.assert_array_equal(new, old, err_msg=variable.op.name)


def assert_refused_by_value(session, wrapper, feed_dict):
    """Running ``wrapper.train_op`` on a step that must be refused raises nothing, the
    ``step_refused`` fetched with it is True, and every global variable keeps its value."""
    variables = tf.global_variables()
    before = session.run(variables)
    assert session.run([wrapper.train_op, wrapper.step_refused], feed_dict)[1]
    for variable, old, new in zip(variables, before, session.run(variables)):
        np.testing.assert_array_equal(new, old, err_msg=variable.op.name)


def start(wrapper, make_session):
    """A session from ``make_session()`` with every variable initialised and the wrapper's
    post-init op run (replicas equal, a new accumulation cycle)."""
    session = make_session()
    session.run(tf.global_variables_initializer())
    session.run(wrapper.post_init_op)
    return session


def read_values(session, variables=None):
    """``{plain name: value}`` of ``variables`` (default: every global variable), read in one
    ``session.run``: each run with a new set of fetches costs TF 1.15 a graph pruning (about
    70 ms for a two-tower CRNN), so reading a hundred variables one by one takes seconds."""
    if variables is None:
        variables = session.graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)
    return session.run({v.op.name: v for v in variables})


def copies(wrapper, session):
    """Every tower's copy of every trainable variable: [{plain name: value}] per tower."""
    return [dict(zip((p.op.name for p in wrapper.variables), session.run(
        wrapper.strategy.tower_variables(i, wrapper.variables))))
        for i in range(wrapper.n_towers)]


def load_values(session, values):
    """Give every global variable of the session's graph that ``values`` names (by plain
    name) that value, in one ``session.run`` (what ``Variable.load`` does, for all at once)."""
    chosen = [v for v in session.graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)
              if v.op.name in values]
    session.run([v.initializer for v in chosen],
                {v.initializer.inputs[1]: values[v.op.name] for v in chosen})


def plain_run(model_cls, batches, make_session, optimizer, start=None, counts_steps=False,
              fetch=None, **model_kwargs):
    """The reference the wrapper must equal: ``model_cls(**model_kwargs)`` alone, in its own
    graph, one ``optimizer()`` step per whole batch (its UPDATE_OPS with each step).

    ``start``: ``{plain name: value}`` loaded over the initial values (the wrapper's own start).
    ``counts_steps``: the steps advance a global step, handed as ``optimizer(global_step)`` so
    that a rate schedule counts them. ``fetch(model)``: what to record per batch before its
    step, by default ``(loss, error)`` (``error`` is the loss for models without one).

    Returns ``(variables, before)``: every global variable's value after the last step, by
    plain name (weights, optimizer slots, moving statistics, the global step), and per batch
    the fetched values before its step.
    """
    graph = tf.Graph()
    with graph.as_default():
        model = model_cls(**model_kwargs)
        fetches = fetch(model) if fetch else (model.loss, getattr(model, "error", model.loss))
        with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            if counts_steps:
                global_step = tf.train.get_or_create_global_step()
                step = optimizer(global_step).minimize(model.loss, global_step=global_step)
            else:
                step = optimizer().minimize(model.loss)
        session = make_session(graph)
        session.run(tf.global_variables_initializer())
        load_values(session, start or {})
        before = []
        for batch in batches:
            feed = model.feed_dict(batch)
            before.append(session.run(fetches, feed))
            session.run(step, feed)
        return read_values(session), before


def levenshtein(a, b):
    """Edit distance of two sequences, written out here so tests check the library's metrics
    against an independent count."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
    return row[-1]


def one_error_line(code, err):
    """A tool's failure as users see it: exit code 2 and, INFO log lines aside, exactly one line
    on stderr, ``error: ...``; returns that line."""
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("INFO ")]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (code, err)
    return lines[0]


def run_captured(main, argv, capsys):
    """``(exit code, stdout, stderr)`` of a tool's ``main(argv)`` in a graph of its own, read
    through pytest's ``capsys`` (which also holds what logging wrote); a traceback fails."""
    with tf.Graph().as_default():
        code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return code, out, err


def run_tool(main, argv):
    """``(exit code, stdout, stderr)`` of a tool's ``main(argv)`` run in this process, in a
    graph of its own."""
    out, err = io.StringIO(), io.StringIO()
    with tf.Graph().as_default(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()
