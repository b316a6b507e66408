"""The standby scheduler's takeover, as issue 49 states it: two `runscheduler`s as two machines'
(PAI_MACHINE_NAME) on one PostgreSQL, the one holding the lease killed -9 again and again while
500 jobs run; how soon after each kill the other machine's standby holds the lease (goal: p95 <=
10 s), and that no job was lost, started twice or stranded (goal: 0 each).

    .venv/bin/python bench/failover.py [--jobs 500] [--kills 20]    (PostgreSQL on 127.0.0.1, user postgres)

bench/chaos.py does the work (`--standby --postgres`); any of its options may follow.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import chaos

DEFAULTS = {"--jobs": "500", "--kills": "20"}


def main() -> None:
    given = sys.argv[1:]
    defaults = [part for option, value in DEFAULTS.items() if option not in given for part in (option, value)]
    sys.argv = [sys.argv[0], "--standby", "--postgres", *defaults, *given]
    chaos.main()


if __name__ == "__main__":
    main()
