"""The HITL_MCP file: both transports, ${VAR} from the environment, and bad files with a message
naming the line or the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hitl_app.agent.mcp.config import McpConfigError, load_mcp_config

ENV = {"GITHUB_TOKEN": "ghp_secret_value", "DATA": "/srv/data"}


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_stdio_and_http_servers_with_env_vars(tmp_path):
    path = write(tmp_path, {"mcpServers": {
        "notes": {"command": "python", "args": ["notes.py", "--dir", "${DATA}/notes"],
                  "env": {"NOTES_FILE": "${env:DATA}/n.json", "LEVEL": "${LEVEL:-info}"}},
        "github": {"url": "https://mcp.example.com/mcp?x=1", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}},
        "off": {"command": "nothing", "disabled": True},
    }})
    notes, github = load_mcp_config(path, ENV)
    assert notes.connection() == {"transport": "stdio", "command": "python", "args": ["notes.py", "--dir", "/srv/data/notes"],
                                  "env": {"NOTES_FILE": "/srv/data/n.json", "LEVEL": "info"}}
    assert github.connection() == {"transport": "streamable_http", "url": "https://mcp.example.com/mcp?x=1",
                                   "headers": {"Authorization": "Bearer ghp_secret_value"}}
    # what the status view and the logs show: no env or header values, no query
    assert notes.describe() == "stdio: python notes.py --dir notes"
    assert github.describe() == "http: https://mcp.example.com/mcp"
    assert "ghp_secret_value" not in repr(github.describe())


def test_vs_code_format(tmp_path):
    path = write(tmp_path, {"servers": {"a": {"type": "stdio", "command": "x"}, "b": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}})
    assert [s.transport for s in load_mcp_config(path, {})] == ["stdio", "streamable_http"]


@pytest.mark.parametrize(("data", "words"), [
    ('{"mcpServers": {\n  "a": {"command": "x",}\n}}', ["invalid JSON at line 2"]),
    ({"servers_": {}}, ['expected {"mcpServers"']),
    ({"mcpServers": {"a__b": {"command": "x"}}}, ["mcpServers.a__b", "no '__'"]),
    ({"mcpServers": {"a": {"command": "x", "url": "http://h/mcp"}}}, ["mcpServers.a", "either"]),
    ({"mcpServers": {"a": {"command": "x", "argz": []}}}, ["mcpServers.a", "unknown key 'argz'"]),
    ({"mcpServers": {"a": {"command": "x", "args": "y"}}}, ["mcpServers.a.args", "list of strings"]),
    ({"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}, ["mcpServers.a.env.K", "must be a string"]),
    ({"mcpServers": {"a": {"url": "ftp://h/x"}}}, ["mcpServers.a.url", "http"]),
    ({"mcpServers": {"a": {"type": "sse", "url": "http://h/sse"}}}, ["mcpServers.a.type", "'sse'"]),
    ({"mcpServers": {"gh": {"url": "http://h/mcp", "headers": {"Authorization": "Bearer ${NOPE}"}}}},
     ["mcpServers.gh.headers.Authorization", "${NOPE} is not set"]),
])
def test_bad_files_name_the_line_or_key(tmp_path, data, words):
    with pytest.raises(McpConfigError) as err:
        load_mcp_config(write(tmp_path, data), ENV)
    for word in words:
        assert word in str(err.value)
    assert "ghp_secret_value" not in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(McpConfigError, match="HITL_MCP=.*cannot read"):
        load_mcp_config(tmp_path / "none.json", {})


def test_the_example_file_reads():
    [notes] = load_mcp_config(Path(__file__).parents[3] / "examples" / "mcp" / "mcp.json", {})
    assert notes.name == "notes" and notes.env == {"NOTES_FILE": "data/mcp-notes.json"}


@pytest.mark.parametrize(("text", "calls"), [
    ('call notes__add_note {"title": "milk", "tags": ["a"]}', [("notes__add_note", {"title": "milk", "tags": ["a"]})]),
    ("call notes__search_notes", [("notes__search_notes", {})]),
    ('call a__x {"q": 1} and email bob@example.com about hi',
     [("a__x", {"q": 1}), ("send_email", {"to": "bob@example.com", "subject": "hi", "body": ""})]),
    ("call a__x {not json}", None),
    ("call a__x [1, 2]", None),
])
def test_the_demo_model_calls_any_tool_with_json_arguments(text, calls):
    from hitl_app.agent.demo.phrases import parse_request

    assert parse_request(text) == calls


def test_secrets_from_the_environment_are_masked_wherever_a_server_is_described(tmp_path):
    from hitl_app.agent.mcp.failures import describe_failure

    path = write(tmp_path, {"mcpServers": {
        "gh": {"command": "node", "args": ["server.js", "--token", "${GITHUB_TOKEN}"]},
        "web": {"url": "https://${GITHUB_TOKEN}@mcp.example.com/mcp", "headers": {"X-Key": "literal-key-1"}},
    }})
    gh, web = load_mcp_config(path, ENV)
    assert gh.args[-1] == "ghp_secret_value" and gh.describe() == "stdio: node server.js --token ***"
    assert "ghp_secret_value" not in web.describe()
    failure = describe_failure(RuntimeError("401 for ghp_secret_value with literal-key-1"), web)
    assert failure == "RuntimeError: 401 for *** with ***"
