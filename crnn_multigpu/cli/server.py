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
import time

EXIT_USAGE = 2
EXIT_FAILURE = 1


class _Stop(Exception):
    pass


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


def _stop(signum, frame):
    raise _Stop()


def main(argv=None):
    args = build_parser().parse_args(argv)
    from crnn_multigpu.runtime import cluster as cluster_lib  # imports TensorFlow: after argument checks

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

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    name = "/job:%s/task:%d" % (job, task)
    try:
        try:
            cluster_lib.start_server(cluster, job, task)
        except _Stop:
            raise
        except Exception as error:  # e.g. the port is taken: TF raises UnknownError
            return _fail("could not start %s at %s: %s" % (name, address, error), EXIT_FAILURE)
        sys.stdout.write("serving %s at %s\n" % (name, address))
        sys.stdout.flush()
        # server.join() blocks inside C++, where Python signal handlers never run; the
        # server's threads keep serving while the main thread sleeps here.
        while True:
            time.sleep(3600)
    except _Stop:
        sys.stderr.write("stopping %s\n" % name)
    sys.stdout.flush()
    sys.stderr.flush()
    # A gRPC tf.train.Server cannot be shut down cleanly; leave without running
    # interpreter teardown against its live threads.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
