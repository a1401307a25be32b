"""The container image (Dockerfile) and the local production-like run (compose.yaml).

Always: a parse of the Dockerfile (pinned slim Python base, the lock file, static files collected at
build, a non-root user, gunicorn, a HEALTHCHECK on /livez) and of compose.yaml. Where a container engine answers:
the image is built and run, and its process is seen to run as a non-root user and to answer its probes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
COMPOSE = ROOT / "compose.yaml"
# A version pinned to the patch release of Python 3.12 or 3.13, slim variant, optionally a digest.
PINNED_PYTHON = re.compile(r"python:3\.1[23]\.\d+-slim(-[a-z]+)?(@sha256:[0-9a-f]{64})?")


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")))
    found = []
    for line in joined.splitlines():
        if line.strip():
            keyword, _, arguments = line.strip().partition(" ")
            found.append((keyword.upper(), arguments.strip()))
    return found


def stages(parsed: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    result: list[list[tuple[str, str]]] = []
    for keyword, arguments in parsed:
        if keyword == "FROM":
            result.append([])
        if result:
            result[-1].append((keyword, arguments))
    return result


def is_root(user: str) -> bool:
    name = user.split(":")[0]
    return name in {"root", "0"}


@pytest.fixture(scope="module")
def dockerfile() -> list[tuple[str, str]]:
    return instructions(DOCKERFILE.read_text())


def test_every_stage_starts_from_a_pinned_slim_python(dockerfile):
    bases = [arguments.split()[0] for keyword, arguments in dockerfile if keyword == "FROM"]
    assert len(bases) >= 2, "a multi-stage build: dependencies built apart from the image that runs"
    for base in bases:
        assert PINNED_PYTHON.fullmatch(base), f"{base} is not a pinned python 3.12/3.13 slim image"


def test_the_build_installs_from_the_lock_and_collects_static_files(dockerfile):
    build = stages(dockerfile)[0]
    runs = " ".join(arguments for keyword, arguments in build if keyword == "RUN")
    assert "-c requirements.lock" in runs and "collectstatic --noinput" in runs
    copied = " ".join(arguments for keyword, arguments in build if keyword == "COPY")
    assert "requirements.lock" in copied


def test_the_image_runs_gunicorn_as_a_non_root_user_with_a_liveness_check(dockerfile):
    final = stages(dockerfile)[-1]
    users = [arguments for keyword, arguments in final if keyword == "USER"]
    assert users and not is_root(users[-1]), f"the last USER of the image is {users[-1:] or 'unset (root)'}"
    assert users[-1].split(":")[0].isdigit(), "a numeric user, so a runtime can check it is not root"
    # Nothing after the last USER switches back.
    last_user = max(i for i, (keyword, _) in enumerate(final) if keyword == "USER")
    assert all(keyword != "USER" for keyword, _ in final[last_user + 1:])
    healthchecks = [arguments for keyword, arguments in final if keyword == "HEALTHCHECK"]
    assert len(healthchecks) == 1 and "/livez" in healthchecks[0] and "/readyz" not in healthchecks[0]
    command = [arguments for keyword, arguments in final if keyword == "CMD"]
    assert command and '"gunicorn", "tems.wsgi"' in command[-1]


def test_a_root_user_would_be_caught():
    broken = instructions("FROM python:3.13.5-slim-bookworm\nUSER tems\nUSER root\n")
    users = [arguments for keyword, arguments in stages(broken)[-1] if keyword == "USER"]
    assert is_root(users[-1]) and is_root("0:0") and not is_root("10001:10001")
    assert not PINNED_PYTHON.fullmatch("python:3.13-slim") and not PINNED_PYTHON.fullmatch("python:latest")


def first_party_packages() -> list[str]:
    """The project's own top-level packages, as pyproject.toml names them for setuptools."""
    import tomllib

    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    return sorted(pattern.rstrip("*") for pattern in patterns)


def test_the_image_copies_every_package_of_the_app(dockerfile):
    # A package left out builds fine and fails only when Django loads INSTALLED_APPS in the container.
    build = stages(dockerfile)[0]
    copied = {arguments.split()[0] for keyword, arguments in build if keyword == "COPY"}
    missing = [package for package in first_party_packages() if package not in copied]
    assert not missing, f"the image does not COPY {missing}"


def test_the_image_leaves_the_request_line_to_the_app(dockerfile):
    # gunicorn's access log would repeat, unstructured, the line the app already writes for every request.
    command = [arguments for keyword, arguments in stages(dockerfile)[-1] if keyword == "CMD"]
    assert "--access-logfile" not in command[-1]


def test_the_image_holds_only_what_it_runs():
    ignored = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    assert ignored[0] == "*"  # everything is left out unless named after it
    assert all(pattern in ignored for pattern in ("**/__pycache__", "**/*.pyc"))
    for needed in (*(f"{package}/" for package in first_party_packages()), "templates/", "static/", "manage.py",
                   "requirements.lock", "pyproject.toml"):
        assert f"!{needed}" in ignored, needed


def test_compose_runs_the_app_the_relay_and_dynamodb_local():
    compose = yaml.safe_load(COMPOSE.read_text())
    services = compose["services"]
    assert set(services) == {"dynamodb", "setup", "web", "relay"}
    assert re.fullmatch(r"amazon/dynamodb-local:\d+\.\d+\.\d+", services["dynamodb"]["image"])
    for name in ("setup", "web", "relay"):
        service = services[name]
        assert service["build"] == "."
        assert service["environment"]["DYNAMODB_ENDPOINT_URL"] == "http://dynamodb:8000"
        assert service["environment"]["DJANGO_SECRET_KEY"]
    assert services["web"]["ports"] == ["8000:8000"]
    assert services["relay"]["command"][:3] == ["python", "manage.py", "relay_outbox"]
    for name in ("web", "relay"):
        assert services[name]["depends_on"]["setup"]["condition"] == "service_completed_successfully"
    assert "ensure_table" in " ".join(services["setup"]["command"])


# --- with a container engine ---------------------------------------------------------------------------------


def engine_missing() -> str | None:
    """Why no container can run here, or None when an engine answers."""
    docker = shutil.which("docker")
    if docker is None:
        return "no docker client on PATH"
    try:
        result = subprocess.run([docker, "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                                timeout=30)
    except subprocess.TimeoutExpired:
        return "`docker info` did not answer in 30 s"
    if result.returncode != 0:
        return f"no container engine answers `docker info` ({(result.stderr.strip().splitlines() or [''])[-1]})"
    return None


def docker(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=True)


@pytest.mark.container
def test_the_built_image_serves_its_probes_as_a_non_root_user():
    if reason := engine_missing():
        pytest.skip(f"container test skipped: {reason}; the Dockerfile is still checked statically above")
    tag = f"tems-test:{uuid.uuid4().hex[:8]}"
    docker("build", "-t", tag, str(ROOT), timeout=1200)
    name = f"tems-test-{uuid.uuid4().hex[:8]}"
    try:
        assert docker("run", "--rm", "--entrypoint", "id", tag, "-u").stdout.strip() != "0"
        # No DynamoDB behind it: alive, not ready.
        docker("run", "-d", "--name", name, "-p", "127.0.0.1::8000", "-e", "DJANGO_SECRET_KEY=container-test",
               "-e", "DJANGO_HTTPS=0", "-e", "DYNAMODB_ENDPOINT_URL=http://127.0.0.1:9", tag)
        port = docker("port", name, "8000").stdout.strip().splitlines()[0].rsplit(":", 1)[1]
        deadline, live = time.monotonic() + 60, None
        while time.monotonic() < deadline and live is None:
            try:
                live = urllib.request.urlopen(f"http://127.0.0.1:{port}/livez", timeout=2).status
            except (urllib.error.URLError, ConnectionError):
                time.sleep(1)
        assert live == 200
        with pytest.raises(urllib.error.HTTPError) as not_ready:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=10)
        assert not_ready.value.code == 503
        processes = docker("top", name, "-o", "user,args").stdout
        assert all(line.split()[0] not in {"root", "0"} for line in processes.splitlines()[1:]), processes
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, timeout=60)
