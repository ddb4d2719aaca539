"""The learning-rate schedule crnn-train trains with."""
from crnn_multigpu.compat import tf


class StepDecay(object):
    """A learning rate that drops in steps over a run of ``steps`` global steps: ``lr`` until
    60 % of them, ``lr`` x 0.3 until 85 %, then ``lr`` x 0.03 (x0.3, then x0.1 of that).

    The drops fall at fractions of ``steps``, so a run resumed with a larger ``--steps`` moves
    them with it (config.json's "parts" record each part's ``steps``). Calling the schedule
    with the global step tensor gives the rate tensor an optimizer takes.
    """

    # (where a rate starts, as a fraction of the steps; the rate, as a factor of ``lr``). The
    # factors are of ``lr`` itself, not of the rate before, so the rates are ``lr * 0.03``
    # exactly as runs trained before this class had them (``lr * 0.3 * 0.1`` rounds apart).
    DROPS = ((0.6, 0.3), (0.85, 0.03))

    def __init__(self, lr, steps):
        self.lr, self.steps = lr, steps

    @property
    def boundaries(self):
        """The global steps from which each lower rate applies."""
        return [int(self.steps * fraction) for fraction, _ in self.DROPS]

    @property
    def rates(self):
        """The rate before the first boundary, then from each boundary on."""
        return [self.lr] + [self.lr * factor for _, factor in self.DROPS]

    @classmethod
    def describe(cls):
        """The drops in words (each as a factor of the rate before it), for --lr's help:
        ``decays x0.3 at 60% and x0.1 at 85% of --steps``."""
        factors = [factor for _, factor in cls.DROPS]
        return "decays %s of --steps" % " and ".join(
            "x%g at %g%%" % (round(factor / before, 12), 100 * where)
            for (where, factor), before in zip(cls.DROPS, [1.0] + factors))

    def __call__(self, global_step):
        """The rate at ``global_step`` (an integer tensor), as a tensor."""
        return tf.train.piecewise_constant(global_step, self.boundaries, self.rates)
