"""The one --json convention of every command: one JSON document on stdout, indented by one space, keys in
the order the library builds them (not sorted), non-ASCII text as is (UTF-8), a newline at the end."""
import json
import sys


def json_text(obj) -> str:
    return json.dumps(obj, indent=1, ensure_ascii=False) + "\n"


def print_json(obj, stream=None) -> None:
    (stream or sys.stdout).write(json_text(obj))
