"""A small service or config fix: set configuration values so that a service starts as asked."""

from __future__ import annotations

import json
import random

from terminal_rl.tasks.families.base import FamilyTask, pytest_file
from terminal_rl.tasks.model import Difficulty

NAME = "config_fix"
CATEGORY = "system-administration"
INI = "/app/config.ini"
SERVICE = """\
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

config = json.load(open("/app/config.json"))
port = config["server"]["port"]
if not isinstance(port, int):
    sys.exit(f"server.port must be an integer, got {port!r}")


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = config["server"]["greeting"].encode()
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""
# Tests start the service themselves (as the verifier) and ask it for its greeting.
SERVE = """
    def serve_and_get(port):
        import time, urllib.request
        service = subprocess.Popen(["python3", "/app/service.py"], stderr=subprocess.PIPE)
        try:
            for _ in range(50):
                try:
                    return urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1).read().decode()
                except OSError:
                    if service.poll() is not None:
                        return None
                    time.sleep(0.1)
            return None
        finally:
            service.kill()"""


def sample(rng: random.Random, level: Difficulty) -> FamilyTask:
    port = rng.choice((8080, 8081, 8088, 8123, 9000, 9090))
    if level is Difficulty.EASY:
        workers = rng.randint(2, 8)
        ini = f"[server]\nhost = 127.0.0.1\nport = {port + 1}\nworkers = {workers}\n\n[log]\nlevel = info\n"
        return FamilyTask(
            "Set a port",
            f"In {INI}, set the port of the [server] section to {port}; change nothing else.",
            {INI: ini},
            pytest_file(
                """
                def config():
                    import configparser
                    parser = configparser.ConfigParser()
                    parser.read("/app/config.ini")
                    return parser""",
                f'''
                def test_port_is_set():
                    assert config()["server"]["port"] == "{port}"''',
                f'''
                def test_port_set_and_nothing_else_changed():
                    parsed = config()
                    assert {{s: dict(parsed[s]) for s in parsed.sections()}} == {{
                        "server": {{"host": "127.0.0.1", "port": "{port}", "workers": "{workers}"}},
                        "log": {{"level": "info"}}}}''',
            ),
            {"test_port_is_set": 0.7, "test_port_set_and_nothing_else_changed": 0.3},
            f"sed -i 's/^port = .*/port = {port}/' {INI}\n",
            ("ini",),
        )
    greeting = rng.choice(("ready", "ok", "up and running", "hello"))
    broken = {"server": {"port": f"{port}x" if level is Difficulty.MEDIUM else port + 7, "greeting": greeting}}
    wanted = {"server": {"port": port, "greeting": greeting}}
    instruction = (
        f"The service /app/service.py does not start with its configuration /app/config.json. Fix the "
        f"configuration (not the service) so that it starts and listens on port {port}."
    )
    if level is Difficulty.HARD:
        greeting = rng.choice(("serving", "alive", "green"))
        wanted["server"]["greeting"] = greeting
        broken["server"]["port"] = f"{port}x"
        instruction = (
            f"Fix /app/config.json (not the service /app/service.py) so that the service starts, listens on "
            f"port {port} and answers '{greeting}'."
        )
    solution = f"cat > /app/config.json <<'JSON'\n{json.dumps(wanted)}\nJSON\n"
    return FamilyTask(
        "Fix a service's config",
        instruction,
        {"/app/service.py": SERVICE, "/app/config.json": json.dumps(broken, indent=2) + "\n"},
        pytest_file(
            SERVE,
            f"""
            def test_config_has_the_port():
                assert json.load(open("/app/config.json"))["server"]["port"] == {port}""",
            f"""
            def test_service_answers_on_the_port():
                assert serve_and_get({port}) == {wanted["server"]["greeting"]!r}""",
        ),
        {"test_config_has_the_port": 0.4, "test_service_answers_on_the_port": 0.6},
        solution,
        ("service", "json"),
    )
