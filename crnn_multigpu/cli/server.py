"""crnn-server: run one task of a TensorFlow cluster until SIGTERM/SIGINT.

    crnn-server --cluster cluster.json --job worker --task 1

Without ``--cluster`` the cluster (and, unless given, the job and task) come
from the ``TF_CONFIG`` environment variable. Prints one line
``serving /job:<job>/task:<i> at host:port`` once the server is up.
"""
import argparse
import os
import signal
import sys

EXIT_USAGE = 2
EXIT_FAILURE = 1


# The signals that stop a server, taken by ``signal.sigwait`` in the main thread.
STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


class _Parser(argparse.ArgumentParser):
    """Bad arguments: one ``error: ...`` line on stderr and exit code 2."""

    def error(self, message):
        raise SystemExit(_fail(message, EXIT_USAGE))


def _fail(message, code):
    first_line = str(message).strip().splitlines()[0] if str(message).strip() else "failed"
    sys.stderr.write("error: %s\n" % first_line)
    sys.stderr.flush()
    return code


def build_parser():
    parser = _Parser(prog="crnn-server",
                     description="Serve one task of a TensorFlow cluster (in-graph replication: "
                                 "the client runs crnn-train --cluster on the same cluster file).")
    parser.add_argument("--cluster", metavar="JSON",
                        help='cluster file {"worker": ["host:port", ...], "ps": [...]}; '
                             "default: the cluster key of $TF_CONFIG")
    parser.add_argument("--job", help="job name of this task (default: from $TF_CONFIG, else worker)")
    parser.add_argument("--task", type=int, help="task index in the job (default: from $TF_CONFIG)")
    return parser


def main(argv=None):
    """Console entry point of crnn-server: serve until a stop signal, or exit 1/2 with one line."""
    args = build_parser().parse_args(argv)
    # Blocked before TensorFlow and gRPC start their threads, which inherit the mask: a stop
    # signal then waits for sigwait in _serve, whichever thread the kernel hands it to. (A
    # Python handler runs only in the main thread, and a signal taken by a gRPC thread does not
    # wake a main thread asleep in time.sleep: a server could ignore SIGTERM for that long.)
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        return _serve(args)
    finally:  # reached only when the server did not start
        # A stop asked for during a failed start is moot: take it (unblocked, a pending SIGINT
        # would raise KeyboardInterrupt here), then give the caller its mask back.
        while signal.sigpending() & STOP_SIGNALS:
            signal.sigwait(STOP_SIGNALS)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def _serve(args):
    """Start the task named by ``args`` and serve until a stop signal (then leave with exit
    code 0); return an exit code if the task is malformed or its server cannot start."""
    from crnn_multigpu.runtime import cluster as cluster_lib  # imports TensorFlow: after argument checks
    from crnn_multigpu.runtime.placement import resolve_placement

    try:
        cluster = cluster_lib.load_cluster(args.cluster)
        job, task = args.job, args.task
        if job is None or task is None:
            from_env = cluster_lib.task_from_env()
            if from_env is None and task is None:
                raise ValueError("no task given: pass --task (and --job), or set the task key "
                                 "of $TF_CONFIG")
            if from_env is not None:
                job = job if job is not None else from_env[0]
                task = task if task is not None else from_env[1]
        job = job or cluster_lib.CHIEF_JOB
        address = cluster_lib.check_task(cluster, job, task)
    except ValueError as error:
        return _fail(error, EXIT_USAGE)

    name = "/job:%s/task:%d" % (job, task)
    try:
        cluster_lib.start_server(cluster, job, task,
                                 resolve_placement(cluster=cluster).session_config())
    except cluster_lib.PortInUse as error:
        return _fail(error, EXIT_USAGE)
    except Exception as error:  # noqa: B902 (whatever else stops gRPC from starting)
        return _fail("could not start %s at %s: %s" % (name, address, error), EXIT_FAILURE)
    sys.stdout.write("serving %s at %s\n" % (name, address))
    sys.stdout.flush()
    # The server's threads serve while this one waits for a stop signal (one sent during the
    # start-up stayed pending and is taken at once).
    signal.sigwait(STOP_SIGNALS)
    sys.stderr.write("stopping %s\n" % name)
    sys.stderr.flush()
    # A gRPC tf.train.Server cannot be shut down cleanly; leave without running
    # interpreter teardown against its live threads.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
