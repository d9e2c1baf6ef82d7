# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a rolling step's PLAY RECAP must say, the same for the rolling and the volclava scenarios' checkers.

Each check takes the run's output (ANSI colours removed) and returns (passed, the problem), the two arguments of
a checker's check(condition, message).
"""

import re


def failed(output, host, count):
    """The recap gives ``host`` ``count`` failed tasks."""
    return (re.search(r"%s\s*:.*failed=%d" % (host, count), output) is not None,
            "recap: %s should have failed=%d" % (host, count))


def fast_path_only(output, host):
    """``host`` ran what a converge runs on a host the fast path leaves out, and nothing else."""
    # the node Python pre-flight's two tasks, the fast path's three (and the inventory checks, run once, on
    # the first host: two ok, the check of an AWX slice skipped) and nothing else; skipped: the fast path's
    # scoping of a check to the roles that own what differs, which a converge skips (and that slice check)
    recap = re.search(r"%s\s*:\s*ok=(\d+)\s+changed=(\d+).*?skipped=(\d+)" % host, output)
    return (bool(recap and int(recap.group(1)) <= 7 and recap.group(2) == "0" and int(recap.group(3)) <= 2),
            "recap: %s ran more than the fast path: %s" % (host, recap.group(0) if recap else None))
