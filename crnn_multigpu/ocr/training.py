"""The training front door: ``TrainingRun(settings).run()`` trains a model on every tower as
crnn-train does with the same options (``settings``: a :class:`TrainingSettings`).

The graph comes from ``MultiGpuModel`` and the model class (``CRNN``, or any class
``model_class`` names: ``ocr.model_class`` says what it needs), the loop from
``runtime.training.Trainer``, the data from ``datasets``, the run folder's record and its
resume checks from ``ocr.run_folder``.
"""
import logging
import sys
from dataclasses import dataclass, field
from typing import Optional

from crnn_multigpu.compat import tf
from crnn_multigpu.datasets import open_dataset
from crnn_multigpu.datasets.augment import training_augmentation
from crnn_multigpu.datasets.charset import Charset
from crnn_multigpu.datasets.language import get_language
from crnn_multigpu.datasets.steps import StepBatches
from crnn_multigpu.ocr import model_class
from crnn_multigpu.ocr.crnn import CRNN
from crnn_multigpu.ocr.run_folder import (check_run_dir, require_a_run_to_resume, run_config,
                                          warm_start_checkpoint)
from crnn_multigpu.ocr.validation import ValidationReader
from crnn_multigpu.runtime.checkpoints import ensure_writable, latest_checkpoint, run_folder_lock
from crnn_multigpu.runtime.placement import resolve_placement
from crnn_multigpu.runtime.schedule import StepDecay
from crnn_multigpu.runtime.training import StopRequested, Trainer
from crnn_multigpu.wrapper import strategies
from crnn_multigpu.wrapper.devices import close_session
from crnn_multigpu.wrapper.feeding import FedInput, StepInput
from crnn_multigpu.wrapper.towers import MultiGpuModel

log = logging.getLogger("crnn_multigpu.train")


@dataclass
class TrainingResult(object):
    """What a run reached: the global ``step``, the signal number that stopped it early
    (``stopped_by``, after saving; None: it ran to its end), and, when it reached ``steps`` with
    a validation set, the final validation's ``figures`` (``step`` among them) and the names of
    the validation images that could not be read (``unreadable``)."""
    step: int
    stopped_by: Optional[int] = None
    figures: Optional[dict] = None
    unreadable: list = field(default_factory=list)


class TrainingRun(object):
    """One training run of ``settings`` (a :class:`TrainingSettings`), checked at once (one
    ValueError line when two settings contradict); :meth:`run` trains it. ``stream``: where
    its start-up line and progress go (default: stderr)."""

    def __init__(self, settings, stream=None):
        self.settings = settings.checked()
        self.stream = stream  # where the start-up line and progress go (None: stderr)

    def run(self, owns_process=False):
        """Train to ``stop_at`` or ``steps`` (continuing the run with ``resume``), then run the
        final validation, in a graph of its own; the :class:`TrainingResult`. SIGINT and
        SIGTERM stop it after the step in progress, saved; ``owns_process`` (a tool's main):
        while there is nothing to save, the first one ends the process at once."""
        settings = self.settings
        # From here on: a clean stop, at once while there is nothing to save (set-up and the
        # first step, a minute with 99 towers), else after the step in progress, saved.
        with StopRequested(settings.out, owns_process=owns_process) as stop:
            stop.nothing_to_save("while setting up: nothing to save; run the same command again")
            charset = Charset.from_file(settings.charset) if settings.charset else \
                get_language(settings.language).charset if settings.language else \
                Charset.default()
            model_cls = model_class.chosen(settings.model_class) or CRNN
            config = run_config(settings, charset, model_cls)
            require_a_run_to_resume(settings, config)
            ensure_writable(settings.out)
            # One trainer at a time: two in a folder would save over each other's checkpoints.
            # Taken before the datasets are read, so that a second trainer is refused at once.
            # A graph of its own: runs one after another in a process do not share one.
            with run_folder_lock(settings.out), tf.Graph().as_default():
                return self._train(charset, model_cls, config, stop)

    def _train(self, charset, model_cls, config, stop):
        """Read the data, check and record the run folder, build the towers and train."""
        settings = self.settings
        width = settings.width
        time_steps = model_class.time_steps(model_cls, width) if width else None
        train_set = open_dataset(settings.train, charset=charset, time_steps=time_steps)
        val_set = open_dataset(settings.val, charset=charset, time_steps=time_steps) \
            if settings.val else None
        if val_set is not None:
            require_a_readable_image(val_set, settings.val)
        init_from = warm_start_checkpoint(settings, config)
        check_run_dir(settings, config)
        placement = self._placement()
        tf.set_random_seed(settings.seed)
        augment = training_augmentation(settings.augment, settings.reframe, train_set.height,
                                        settings.stroke)
        batches = StepBatches(train_set, charset, settings.batch_size,
                              fixed_width=config.image_width, seed=settings.seed,
                              augment=augment, bucket=settings.bucket,
                              width_multiple=model_cls.DOWNSAMPLE)
        data = (StepInput if settings.input == "dataset" else FedInput)(batches)
        wrapper = self._towers(model_cls, config, placement, data)
        validate = ValidationReader(wrapper, val_set, charset, config.image_width, model_cls,
                                    settings.validate_max) if val_set else None
        trainer = self._trainer(wrapper, validate, init_from)
        self._say_start(config, placement, wrapper, len(train_set))
        final = ValidationReader(wrapper, val_set, charset, config.image_width, model_cls,
                                 unreadable=[]) if val_set else None
        return self._session(trainer, placement, final, stop)

    def _placement(self):
        """The towers' ``runtime.placement.Placement``, on a cluster once its tasks answer (up
        to ``connect_timeout``)."""
        settings = self.settings
        if not settings.cluster:
            return resolve_placement(settings.towers)
        from crnn_multigpu.runtime import cluster
        spec = cluster.load_cluster(settings.cluster)
        placement = resolve_placement(settings.towers, spec, settings.gpus_per_task)
        cluster.wait_for_tasks(spec, settings.connect_timeout, log=log.info)
        return placement

    def _say(self, text):
        stream = self.stream or sys.stderr
        stream.write(text + "\n")
        stream.flush()

    def _towers(self, model_cls, config, placement, batches):
        """The MultiGpuModel on ``placement``'s towers, fed by the input ``batches``."""
        settings = self.settings
        schedule = StepDecay(settings.lr, settings.steps)

        def optimizer(global_step):
            return tf.train.AdamOptimizer(schedule(global_step))

        # sync_bn only when asked for: a model class without batch norm need not take it.
        kwargs = dict(config.model, **({"sync_bn": True} if settings.sync_bn else {}))
        strategy = strategies.from_name(settings.strategy, all_reduce=settings.all_reduce,
                                        num_packs=settings.num_packs,
                                        device=placement.variable_device)
        wrapper = MultiGpuModel(model_class.guarded(model_cls), devices=placement.devices,
                                strategy=strategy, optimizer=optimizer,
                                clip_norm=settings.clip_norm or None, batches=batches,
                                precision=settings.precision,
                                accumulate_steps=settings.accumulate, xla=settings.xla, **kwargs)
        model_class.check_model(wrapper.models[0], model_cls)
        return wrapper

    def _trainer(self, wrapper, validate, init_from):
        """The Trainer; the wrapper's own input feeds the towers."""
        settings = self.settings
        feed = {m.training: True for m in wrapper.models
                if getattr(m, "training", None) is not None}
        # On a cluster the Saver's file writes run where its ops are placed: pin them to
        # worker 0 (the chief's machine) so checkpoints land in this out on both TF stacks.
        with tf.device("/job:worker/task:0/cpu:0" if settings.cluster else None):
            return Trainer(wrapper, None, settings.out,
                           checkpoint_every=settings.checkpoint_every,
                           log_every=settings.log_every, validate_every=settings.validate_every,
                           validate=validate, on_nonfinite=settings.on_nonfinite, feed=feed,
                           init_from=init_from, stream=self.stream)

    def _say_start(self, config, placement, wrapper, images):
        """The start-up line: what trains where, on what."""
        settings = self.settings
        self._say("training %s on %d tower(s): %s (%s); %d training images, batch %d%s, %d "
                  "steps, input %s, augmentation %s%s"
                  % (config.model_class, len(placement.devices), ", ".join(placement.devices),
                     wrapper.strategy.describe(), images, settings.batch_size,
                     " x %d micro-batches" % settings.accumulate if settings.accumulate > 1
                     else "", settings.steps, settings.input, describe_augmentation(settings),
                     ", width buckets of %d batches" % settings.bucket if settings.bucket
                     else ""))

    def _session(self, trainer, placement, final_validation, stop):
        """Train to ``stop_at`` or ``steps`` in a session on ``placement`` (heeding ``stop``),
        then (having reached ``steps``) run ``final_validation``; the TrainingResult."""
        settings = self.settings
        session_config = placement.session_config()
        if settings.cluster:
            # gRPC waits for a killed or hung task forever, inside C++ where Ctrl-C cannot reach.
            session_config.operation_timeout_in_ms = int(settings.step_timeout * 1000)
        session = tf.Session(placement.target, config=session_config)
        try:
            try:
                step = trainer.train(session, min(settings.steps, settings.stop_at or
                                                  settings.steps),
                                     resume=settings.resume, stop=stop)
            except (tf.errors.DeadlineExceededError, tf.errors.UnavailableError,
                    tf.errors.AbortedError) as error:
                if not settings.cluster:
                    raise
                raise cluster_failure(settings, error)
            result = TrainingResult(step, trainer.stopped_by)
            if final_validation is not None and step >= settings.steps:
                stop.nothing_to_save("after step %d was saved: nothing to save; crnn-evaluate "
                                     "--checkpoint %s --data %s gives the final figures"
                                     % (step, settings.out, settings.val))
                result.figures = dict(final_validation(session), step=step)
                result.unreadable = final_validation.unreadable
        finally:
            close_session(session)  # bounded: a failed input pipeline can hang TF's close
        return result


def describe_augmentation(settings):
    """The training-time augmentation in words, for the start-up line."""
    parts = (["strength %g" % settings.augment] if settings.augment else []) + \
        (["reframing %g" % settings.reframe] if settings.reframe else []) + \
        (["stroke weight %g" % settings.stroke] if settings.stroke else [])
    return ", ".join(parts) or "off"


def require_a_readable_image(dataset, name):
    """Raise ValueError unless some image of ``dataset`` can be read: a validation figure over
    zero images would look like a perfect score. Reads images only until the first good one."""
    for index in range(len(dataset)):
        if dataset.safe_get(index) is not None:
            return
    raise ValueError("none of the %d image(s) of --val %s could be read (e.g. %s): nothing to "
                     "validate on; image paths in labels.txt are relative to its folder"
                     % (len(dataset), name, dataset.unreadable[0]))


def cluster_failure(settings, error):
    """The one-line error for a cluster whose tasks stopped answering during training."""
    from crnn_multigpu.runtime import cluster
    silent = cluster.silent_tasks(cluster.load_cluster(settings.cluster), timeout=5.0)
    newest = latest_checkpoint(settings.out)
    return cluster.ClusterFailure(
        "%s stopped answering during training (%s); %s: restart its crnn-server and run the "
        "same command with --resume" % (
            ", ".join("%s at %s" % pair for pair in silent) or "a task of the cluster",
            type(error).__name__,
            "the newest checkpoint %s is kept" % newest if newest else "no checkpoint was saved"))
