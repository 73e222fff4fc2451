"""Small helpers to write Claude Code turns for the Forge (build farm) corpus.

U = user text, A = assistant text, B = Bash, R = Read, E = Edit, W = Write, G = Grep.
Paths are given relative to the project and get the "{P}/" prefix.
"""

CHATS = []


def _p(path):
    if path.startswith("{P}"):
        return path
    return "{P}/" + path.lstrip("/")


def U(text):
    return {"user": text}


def A(text):
    return {"assistant": text}


def B(command, description, result, error=False):
    t = {"tool": "Bash", "input": {"command": command, "description": description}, "result": result}
    if error:
        t["error"] = True
    return t


def R(path, result, error=False):
    t = {"tool": "Read", "input": {"file_path": _p(path)}, "result": result}
    if error:
        t["error"] = True
    return t


def E(path, old, new, result=None, error=False):
    p = _p(path)
    t = {"tool": "Edit", "input": {"file_path": p, "old_string": old, "new_string": new},
         "result": result if result is not None else "The file %s has been updated." % p}
    if error:
        t["error"] = True
    return t


def W(path, content, result=None):
    p = _p(path)
    return {"tool": "Write", "input": {"file_path": p, "content": content},
            "result": result if result is not None else "File created successfully at: %s" % p}


def G(pattern, path, result):
    return {"tool": "Grep", "input": {"pattern": pattern, "path": _p(path)}, "result": result}


def chat(cid, day, turns):
    CHATS.append({"id": cid, "day": day, "turns": turns})
