"""A process a benchmark started and measures: its memory and CPU from /proc, and a stop that
always ends it (SIGTERM, then SIGKILL after a minute)."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path


class Measured:
    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc

    def rss_mb(self) -> tuple[float, float]:
        """Resident now, and at most."""
        text = Path(f"/proc/{self.proc.pid}/status").read_text()
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024

    def cpu_seconds(self) -> float:
        stat = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
