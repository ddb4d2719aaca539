"""Assertions and session helpers several test files share."""
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


def start(wrapper, make_session):
    """A session from ``make_session()`` with every variable initialised and the wrapper's
    post-init op run (replicas equal, a new accumulation cycle)."""
    session = make_session()
    session.run(tf.global_variables_initializer())
    session.run(wrapper.post_init_op)
    return session


def copies(wrapper, session):
    """Every tower's copy of every trainable variable: [{plain name: value}] per tower."""
    return [{p.op.name: session.run(c) for p, c in zip(
        wrapper.variables, wrapper.strategy.tower_variables(i, wrapper.variables))}
        for i in range(wrapper.n_towers)]
