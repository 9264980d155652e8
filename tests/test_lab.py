"""`make lab`, which the intro tells a newcomer to run, starts JupyterLab for any user (root too) and stops."""
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request

import pytest
from conftest import ROOT


DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never through a proxy


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.lab
def test_make_lab_starts_headless_and_stops(tmp_path):
    port, token = _free_port(), "course-lab-test"
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
           "JUPYTER_DATA_DIR": str(tmp_path / "data")}
    args = f"--no-browser --ip=127.0.0.1 --port={port} --ServerApp.port_retries=0 --IdentityProvider.token={token}"
    proc = subprocess.Popen(["make", "-s", "lab", f"LAB_ARGS={args}"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    log = []
    try:
        deadline = time.monotonic() + 240   # the first use installs JupyterLab into .venv
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            log.append(line)
            if re.search(rf"http://127\.0\.0\.1:{port}/", line):
                break
        assert re.search(rf"http://127\.0\.0\.1:{port}/", "".join(log)), "no server URL:\n" + "".join(log)[-3000:]
        url = f"http://127.0.0.1:{port}/api/status?token={token}"
        for _ in range(60):   # the URL is printed just before the server's loop accepts connections
            try:
                with DIRECT.open(url, timeout=30) as reply:
                    status = reply.status
                break
            except OSError:
                time.sleep(0.5)
        else:
            status = None
        assert status == 200, "".join(log)[-3000:]
        assert "Running as root is not recommended" not in "".join(log)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    with pytest.raises(OSError):
        DIRECT.open(f"http://127.0.0.1:{port}/api/status", timeout=5)
