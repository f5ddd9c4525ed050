"""``airflow standalone`` that stops its components on SIGTERM and SIGINT alike, whatever the
shell that started standalone.sh ignored.

``airflow standalone`` stops its scheduler, DAG processor, API server and triggerer only when
SIGINT reaches it as KeyboardInterrupt. A shell running a script in the background (``setsid
standalone.sh &``, or under ``trap '' INT``) starts it with SIGINT ignored, and an ignored signal
stays ignored across exec and cannot be trapped again by a non-interactive bash: SIGINT then does
nothing at all. SIGTERM (systemd's and kill's default) ends the Python process at once and leaves
its components running without a parent. Here both signals become the KeyboardInterrupt it
expects, and the components start with both signals at their defaults.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType


def _stop(signum: int, frame: FrameType | None) -> None:
    # Once: a second signal during the shutdown must not interrupt the components' stop.
    for each in (signal.SIGINT, signal.SIGTERM):
        signal.signal(each, signal.SIG_IGN)
    raise KeyboardInterrupt


def main() -> None:
    for each in (signal.SIGINT, signal.SIGTERM):
        signal.signal(each, _stop)
    from airflow.__main__ import main as airflow_main

    sys.argv = ["airflow", "standalone"]
    airflow_main()


if __name__ == "__main__":
    main()
