"""A thin training loop around a built MultiGpuModel.

Graph building lives in ``towers``; this module only runs steps: it asks the wrapper's input
(``wrapper.feeding``: fed or feed-free, one path here) for each run's feed at each global step
(so a resumed run sees the same data order), reports progress, saves checkpoints, validates,
and turns SIGINT / SIGTERM and non-finite steps into a clean stop that loses nothing.

Gradient accumulation (a wrapper built with ``accumulate_steps=k``): one step is ``k`` runs
of ``train_op``, on the batches of micro-steps ``k * step`` .. ``k * step + k - 1``; steps,
progress, summaries, checkpoints and validation all count optimizer steps, and checkpoints
fall between them, so a resumed run repeats an interrupted step from its first micro-batch.
"""
import logging
import os
import signal
import socket
import sys
import threading
import time
from contextlib import nullcontext

from crnn_multigpu.runtime.checkpoints import CheckpointSaver, NonFiniteStateError, WarmStart
from crnn_multigpu.compat import tf
from crnn_multigpu.wrapper.feeding import FedInput

log = logging.getLogger(__name__)


class NonFiniteLossError(RuntimeError):
    """Raised when a step's loss or gradient is NaN/Inf and the policy is to stop."""
    user_facing = True


class StopRequested(object):
    """Turns SIGINT/SIGTERM into a flag checked between steps (no half-applied step); a second
    one leaves at once.

    The flag is Python's: it is seen only when the step in progress returns, which on a
    cluster whose task hangs is not before ``--step-timeout``. So the signals also reach a
    watcher thread through :func:`signal.set_wakeup_fd`, which C writes to at once, even while
    the main thread waits inside TensorFlow: on the first it says what will happen, on the
    second it ends the process without saving. That is as safe as a kill: checkpoints are
    written to new files and named only when complete, so the newest one stays readable.

    ``owns_process`` (a tool's main, not a library caller): while ``nothing_to_save`` says the
    state on disk is the state (setting up, the first step of a run, which with many towers
    takes a minute), the first signal also ends the process at once, as there is nothing to
    wait for.
    """

    def __init__(self, run_dir=None, owns_process=False):
        self.signal_name, self.signal_number = None, None
        self.run_dir = run_dir
        self.owns_process = owns_process
        self._previous = {}
        self._watcher = None
        self._unchanged = None  # where the process is while it has nothing to save, or None
        self._unchanged_lock = threading.Lock()

    def nothing_to_save(self, situation):
        """Say whether the process has anything to save: while it has not, ``situation`` says
        where it is and what to do, as the end of the line the watcher prints on leaving
        ("while setting up: nothing to save; run the same command again"); None once a step
        has changed the state."""
        with self._unchanged_lock:  # the watcher never leaves on a stale answer
            self._unchanged = situation

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handle)
            self._reader, self._writer = socket.socketpair()
            self._writer.setblocking(False)
            self._previous_fd = signal.set_wakeup_fd(self._writer.fileno())
            self._watcher = threading.Thread(target=self._watch, name="StopRequested",
                                             daemon=True)
            self._watcher.start()
        return self

    def _handle(self, signum, frame):
        self.signal_name, self.signal_number = signal.Signals(signum).name, int(signum)

    def _watch(self):
        seen = 0
        while True:
            try:
                data = self._reader.recv(64)
            except OSError:
                return
            if not data:
                return  # __exit__ closed the other end
            for number in bytearray(data):
                if number not in (signal.SIGINT, signal.SIGTERM):
                    continue
                seen += 1
                name = signal.Signals(number).name
                where = "the newest checkpoint in %s" % self.run_dir if self.run_dir else \
                    "the newest checkpoint"
                if seen == 1:
                    with self._unchanged_lock:
                        if self.owns_process and self._unchanged is not None:
                            _stderr_line("%s received %s" % (name, self._unchanged))
                            os._exit(128 + number)
                    _stderr_line("%s: stopping after the step in progress, then saving; send it "
                                 "again (Ctrl-C) to leave at once without saving" % name)
                else:
                    _stderr_line("%s again: leaving now without saving; continue from %s with "
                                 "the same command plus --resume" % (name, where))
                    os._exit(128 + number)

    def __exit__(self, *exc):
        if self._watcher is not None:
            signal.set_wakeup_fd(self._previous_fd)
            self._writer.close()  # the watcher reads the end of the stream and returns
            self._watcher.join()
            self._reader.close()
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def __bool__(self):
        return self.signal_name is not None


def _stderr_line(text):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


class _ProgressWindow(object):
    """Images trained and time spent waiting for batches since the last progress line.

    Input wait is the time the input says the host blocked for batches. A feed-free pipeline
    waits inside ``session.run``, where no clock outside TF can tell waiting from computing (TF
    1.15's ``prefetch_to_device`` even blocks on refilling its buffer), so it has none.
    """

    def __init__(self, measures_wait):
        self.measures_wait = measures_wait
        self._restart()

    def _restart(self):
        self.start, self.images, self.wait = time.time(), 0, 0.0

    def close(self):
        """``(images/s, share of time waiting or None)`` of the window; a new one starts."""
        seconds = max(time.time() - self.start, 1e-9)
        rates = self.images / seconds, self.wait / seconds if self.measures_wait else None
        self._restart()
        return rates


class Trainer(object):
    """Run ``wrapper.train_op`` for a number of global steps with checkpoints and progress.

    Args:
      wrapper: a built ``MultiGpuModel``.
      batches: None: the wrapper's own ``input`` (``MultiGpuModel(..., batches=)``, fed or
        feed-free) gives each run's data; or a step source ``f(step) -> batch`` (a whole
        batch) for a wrapper without one, fed through its placeholders (a
        ``feeding.FedInput``). Accumulating ``k`` micro-batches per step, sources are called
        with micro-steps (``k * step + i``).
      run_dir: where checkpoints (``checkpoints/``) and summaries (``logs/``) go.
      checkpoint_every / log_every / validate_every: intervals in steps (0 disables).
      validate: optional ``f(session, step) -> dict`` of validation figures.
      on_nonfinite: 'stop' (raise NonFiniteLossError; variables untouched) or 'skip' the batch.
      is_chief: only the chief writes checkpoints and summaries.
      feed: a constant ``{tensor: value}`` added to every training step (e.g. each CRNN
        tower's ``training: True``; a fed batch's own feed overrides it).
      init_from: a checkpoint prefix whose model weights a run without checkpoints starts
        from (``checkpoints.WarmStart``); a run that resumes takes its own checkpoint instead.
    """

    def __init__(self, wrapper, batches, run_dir, checkpoint_every=500, log_every=50,
                 validate_every=0, validate=None, on_nonfinite="stop", is_chief=True,
                 summary_every=100, stream=None, feed=None, init_from=None):
        if on_nonfinite not in ("stop", "skip"):
            raise ValueError("on_nonfinite must be 'stop' or 'skip', got %r" % (on_nonfinite,))
        self.wrapper = wrapper
        self.feed = dict(feed or {})
        self.stopped_by = None  # the signal number when SIGINT/SIGTERM ended train()
        self.input = self._input_of(wrapper, batches)
        self.accumulate = wrapper.accumulate_steps
        self.run_dir = run_dir
        self.checkpoint_every, self.log_every = checkpoint_every, log_every
        self.validate_every, self.validate = validate_every, validate
        self.on_nonfinite, self.is_chief = on_nonfinite, is_chief
        self.summary_every = summary_every
        self.stream = stream or sys.stderr
        # Plain names only (no replica copies): a checkpoint of any strategy and tower count
        # restores into any other and into single-device inference.
        self.saver = CheckpointSaver(run_dir, var_list=wrapper.savable_variables) \
            if is_chief else None
        self.warm_start = WarmStart(init_from, wrapper.model_variables) if init_from else None
        self.writer = None
        self.skipped_steps = []
        # A skipped batch still advances the global step, which keys the data order.
        self._skip_op = tf.assign_add(wrapper.global_step, 1) if on_nonfinite == "skip" else None
        # Micro-batches before a step's last only accumulate; the last one applies the step,
        # says whether it was refused as non-finite and reports its loss (the mean over all
        # micro-batches).
        self._micro_fetches = {"train": wrapper.train_op}
        self._step_fetches = {"train": wrapper.train_op, "loss": wrapper.step_loss}
        if wrapper.step_refused is not None:
            self._step_fetches["refused"] = wrapper.step_refused
        if wrapper.error is not None:
            self._step_fetches["error"] = wrapper.step_error
        if wrapper.batch_size is not None:  # the examples a run took, counted in the graph
            self._step_fetches["images"] = self._micro_fetches["images"] = wrapper.batch_size

    @staticmethod
    def _input_of(wrapper, batches):
        """The input that feeds the steps: the wrapper's own, or a fed one of ``batches``."""
        if batches is None:
            if wrapper.input is None:
                raise ValueError("Trainer(wrapper, None, ...) needs a wrapper built with batches= "
                                 "(an input or a step source), or a step source to feed")
            return wrapper.input
        if wrapper.input is not None:
            raise ValueError("the wrapper has its own input (built with batches=); pass None "
                             "for the Trainer's batches")
        fed = FedInput(batches)
        fed.setup(wrapper)
        return fed

    def restore_or_initialize(self, session, resume):
        """Initialise variables, restore the latest checkpoint when resuming, then run the
        wrapper's post-init op (replicas take the plain copy's values)."""
        session.run(tf.global_variables_initializer())
        path = self.saver.restore_latest(session) if (resume and self.saver) else None
        if path is None and self.warm_start is not None:
            self._print("weights from %s, optimizer and step afresh"
                        % self.warm_start.restore(session))
        session.run(self.wrapper.post_init_op)
        step = int(session.run(self.wrapper.global_step))
        if path:
            self._print("resumed from %s at step %d" % (path, step))
        return step

    def train(self, session, steps, resume=False, stop=None):
        """Train until the global step reaches ``steps``; returns the final global step.

        The state reached is saved at the end, also after an error or a signal. Raises
        ``CheckpointSaveError`` when that final save fails (the work since the last good
        checkpoint is lost) and ``NonFiniteStateError`` when the variables went NaN/Inf
        (nothing is saved; the last good checkpoint stays the newest). ``stop``: the caller's
        entered :class:`StopRequested` (a tool's, taken before it set up); default: one of its
        own while the steps run.
        """
        step = self.restore_or_initialize(session, resume)
        if self.is_chief:
            self.writer = tf.summary.FileWriter(self.run_dir + "/logs", session.graph)
        # A fed input makes the batches of the coming steps ahead, on a thread, from here on.
        self.input.start(step)
        window, last = _ProgressWindow(measures_wait=self.input.measures_wait), {}
        try:
            with StopRequested(self.run_dir) if stop is None else nullcontext(stop) as stop:
                stop.nothing_to_save("at step %d, before it completed: nothing to save; run "
                                     "the same command again" % step)
                while step < steps and not stop:
                    ran = self._optimizer_step(session, step, last, window)
                    step += 1
                    stop.nothing_to_save(None)  # (a skipped batch advanced the step too)
                    if ran:
                        if self.writer is not None and "summary" in last:
                            self.writer.add_summary(last.pop("summary"), step)
                        if self.log_every and (step % self.log_every == 0 or step == steps):
                            self._progress(step, steps, last, *window.close())
                    # Also after a skipped batch: a run of them must not stop the checkpoints.
                    # The last step is saved once, below, where a failure is an error.
                    if self.saver and self.checkpoint_every and \
                            step % self.checkpoint_every == 0 and step < steps:
                        self.saver.save(session, step)
                    if ran and self.validate and self.validate_every and \
                            step % self.validate_every == 0:
                        self._validate(session, step)
        except NonFiniteStateError:
            raise  # nothing more can be saved: the last good checkpoint stays the newest
        except BaseException:
            self._save_after_error(session, step)
            raise
        finally:
            self.input.close()
            if self.writer is not None:
                self.writer.flush()
        if self.saver and step > 0:
            self.saver.save_or_raise(session, step)  # work that cannot be kept is an error
        if stop:
            self._print("%s received at step %d: checkpoint saved; continue with the same "
                        "command plus --resume" % (stop.signal_name, step))
        self.stopped_by = stop.signal_number  # the shell convention: exit code 128 + signal
        return step

    def _optimizer_step(self, session, step, last, window):
        """The ``accumulate`` runs of global step ``step``, one per micro-batch of the input;
        whether the step was applied. The last run's results land in ``last``; images and
        input wait are counted in ``window``."""
        k, images = self.accumulate, 0
        for micro, batch in enumerate(self.input.micro_batches(step)):
            window.wait += batch.waited
            feed = dict(self.feed)
            feed.update(batch.feed)
            want = dict(self._step_fetches if micro == k - 1 else self._micro_fetches)
            if micro == k - 1 and self.writer is not None and \
                    self.summary_every and step % self.summary_every == 0:
                want["summary"] = self.wrapper.summary_op
            results = self._run_step(session, want, feed, step)
            if results is None:  # refused: only a step's last run can be (it is judged whole)
                return False
            last.update(results)
            images += int(results.get("images", batch.examples))
        window.images += images
        return True

    def _save_after_error(self, session, step):
        """Keep the steps done before an error, without hiding that error: failures are logged."""
        if self.saver and step > 0:
            try:
                self.saver.save(session, step)  # logs a failed write itself
            except NonFiniteStateError as error:
                log.error("%s", error)

    def _run_step(self, session, fetches, feed, step):
        """The results of one run of ``fetches``, or None when the wrapper refused its step as
        non-finite (it changed nothing): then training stops or, by the policy, skips it."""
        try:
            # A feed-free run takes one element of every tower's pipeline, also when its step
            # is refused: a skipped step advances the input and the global step alike.
            results = session.run(fetches, feed)
        except tf.errors.OpError:
            source_error = self.input.source_error()
            if source_error is not None:
                raise source_error  # the data source's own exception, e.g. bad images
            raise
        if not results.pop("refused", False):
            return results
        if self.on_nonfinite == "stop":
            raise NonFiniteLossError(
                "step %d: the loss or a gradient is NaN/Inf; no variable was changed and the "
                "last checkpoint is intact. Lower the learning rate, enable clipping, or "
                "check the data; --on-nonfinite skip skips such batches." % step)
        session.run(self._skip_op)
        self.skipped_steps.append(step)
        log.warning("step %d: non-finite loss or gradient, batch skipped (%d so far)",
                    step, len(self.skipped_steps))
        return None

    def _validate(self, session, step):
        figures = self.validate(session, step)
        self._print("validation at step %d: %s" % (step, ", ".join(
            "%s %.4f" % (k, v) if isinstance(v, float) else "%s %s" % (k, v)
            for k, v in sorted(figures.items()))))
        if self.writer is not None:
            values = [tf.Summary.Value(tag="validation/" + k, simple_value=float(v))
                      for k, v in figures.items() if isinstance(v, (int, float))]
            self.writer.add_summary(tf.Summary(value=values), step)

    def _progress(self, step, steps, last, rate, input_wait):
        done = int(30 * step / max(steps, 1))
        text = "[%s%s] step %d/%d  loss %.4f" % ("#" * done, "." * (30 - done), step, steps,
                                                 last.get("loss", float("nan")))
        if "error" in last:
            text += "  error %.4f" % last["error"]
        text += "  %.1f images/s" % rate
        if input_wait is not None:  # the share of the window spent waiting for batches
            text += "  input wait %.0f %%" % (100 * input_wait)
        self._print(text)

    def _print(self, text):
        self.stream.write(text + "\n")
        self.stream.flush()
