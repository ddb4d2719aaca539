"""How much of the machine's CPU time other processes used while a measurement ran: the figures
are only valid from an idle machine, and the measuring scripts (``peer_benchmark.py``,
``gemm_peak.py``, ``cluster_scaling.py``, ``benchmark_reading.py``) say how idle it was.

A window is what the machine did between two :func:`cpu_snapshot` calls, in CPU seconds:
busy ticks from ``/proc/stat`` (Linux) and this process's own CPU time from ``getrusage``.
"""
import os

IDLE_LIMIT = 0.05  # other processes above 5 % of the machine's CPU time: not an idle machine


def read_proc_stat(path="/proc/stat"):
    """(busy, total, steal) clock ticks of the whole machine since boot, or None off Linux.

    Busy is the time this machine's processes and kernel ran: everything but idle, iowait and
    steal. Steal is time the hypervisor kept from this machine; it is no process here, so it is
    reported beside the other processes' share (:func:`steal_share`), not inside it. Measured
    on these 2-core virtual machines: 0.1 % of the CPU time under a pure spin loop, 4-5 %
    under a page reader's allocations.
    """
    try:
        with open(path) as stream:
            fields = stream.readline().split()
    except (IOError, OSError):
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(v) for v in fields[1:9]]  # user nice system idle iowait irq softirq steal
    ticks += [0] * (8 - len(ticks))
    total = sum(ticks)
    return total - ticks[3] - ticks[4] - ticks[7], total, ticks[7]


def own_cpu_seconds(children=False):
    """CPU seconds this process (all its threads) has used so far; with ``children``, also
    its finished subprocesses."""
    import resource
    usage = [resource.getrusage(resource.RUSAGE_SELF)]
    if children:
        usage.append(resource.getrusage(resource.RUSAGE_CHILDREN))
    return sum(u.ru_utime + u.ru_stime for u in usage)


def cpu_snapshot(children=False):
    return read_proc_stat(), own_cpu_seconds(children)


def cpu_window(before, after, ticks_per_second=None):
    """What the machine did between two snapshots, in CPU seconds.

    Returns {"total", "busy", "steal", "own"} (summable over windows) or None when /proc/stat
    is not readable. "total" is wall time times the number of CPUs.
    """
    if before[0] is None or after[0] is None:
        return None
    hz = float(ticks_per_second or os.sysconf("SC_CLK_TCK"))
    return {"busy": (after[0][0] - before[0][0]) / hz, "total": (after[0][1] - before[0][1]) / hz,
            "steal": (after[0][2] - before[0][2]) / hz, "own": after[1] - before[1]}


def add_windows(windows):
    windows = [w for w in windows if w]
    if not windows:
        return None
    return dict((k, sum(w[k] for w in windows)) for k in ("busy", "total", "steal", "own"))


def others_share(window):
    """The share of all CPU time used by other processes in ``window`` (0..1), or None.

    Tick counts are coarse (1/100 s) and rusage is exact, so the difference is clipped at 0.
    """
    if not window or window["total"] <= 0:
        return None
    return min(1.0, max(0.0, (window["busy"] - window["own"]) / window["total"]))


def steal_share(window):
    """The share of all CPU time the hypervisor kept from this machine in ``window``, or None."""
    if not window or window["total"] <= 0:
        return None
    return min(1.0, window["steal"] / window["total"])


def own_share(window):
    if not window or window["total"] <= 0:
        return None
    return min(1.0, window["own"] / window["total"])


def idle_verdict(share, limit=IDLE_LIMIT):
    """One line: whether other processes' ``share`` of all CPU time (None: unknown) leaves
    figures measured meanwhile valid."""
    if share is None:
        return "IDLE UNKNOWN: /proc/stat not readable; measure on a machine known to be idle"
    if share > limit:
        return ("NOT IDLE: other processes used more than %.0f %% of the CPU time; these "
                "figures are not valid results (re-run on an idle machine)" % (100 * limit))
    return "idle: other processes stayed under %.0f %% of the CPU time" % (100 * limit)


def load_average():
    try:
        return os.getloadavg()
    except (AttributeError, OSError):
        return None
